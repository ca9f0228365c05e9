//! The fast path: which calls it reads, how it reads their params and headers, and that it writes answers byte for byte as rmcp and serde_json do.

use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.append(
            header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    h
}

/// Written around the text, the response is the one rmcp's handler writes for the parsed
/// value, on both generations.
#[test]
fn a_passed_answer_is_written_as_rmcp_writes_it() {
    let texts = [
        r#"{"status":"dispatched","seq":3,"stateAfter":{"count":1.5,"name":"a\"bé\n"},"z":null,"a":[1,-2,true,1e+300]}"#,
        r#"{}"#,
    ];
    for generation in [Generation::Session, Generation::Stateless] {
        for id in [RequestId::Number(7), RequestId::String("a\"1".into())] {
            for text in texts {
                let fast = passed(&id, text, generation).expect("a JSON object");
                let result = ToolAnswer::passed(text.to_owned()).into_response();
                let rmcp = written(id.clone(), result, generation).unwrap();
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    String::from_utf8(rmcp).unwrap()
                );
            }
        }
    }
    // Not a JSON object: written by rmcp's rules, parsed (a legacy peer gets no
    // structured content that is not an object).
    let id = RequestId::Number(1);
    assert_eq!(passed(&id, "not json", Generation::Session), None);
    assert_eq!(passed(&id, "[1]", Generation::Session), None);
    let result = ToolAnswer::passed("[1]".into()).into_response();
    let legacy: serde_json::Value =
        serde_json::from_slice(&written(id, result, Generation::Session).unwrap()).unwrap();
    assert!(legacy["result"].get("structuredContent").is_none());
    assert!(legacy["result"].get("resultType").is_none());
}

#[test]
fn only_a_plain_call_is_read() {
    let call = |body: &str| PlainCall::read(body.as_bytes());
    let read = call(
        r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"do_inc","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    )
    .expect("a plain call");
    assert_eq!(read.id, RequestId::String("x".into()));
    assert_eq!(read.params.name, "do_inc");
    assert_eq!(read.version(), Some("2026-07-28"));
    let meta = read.params.meta.expect("_meta");
    assert_eq!(meta.version.as_deref(), Some("2026-07-28"));
    assert!(meta.capabilities);
    let unversioned = call(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":null}}}"#,
    )
    .expect("a null version reads as none");
    assert_eq!(unversioned.version(), None);
    for other in [
        r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
        // A version that is not text, or given twice: the admission layer's peek cannot
        // read it either.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":7}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":[]}}"#,
    ] {
        assert!(call(other).is_none(), "{other}");
    }
}

/// The parameters and what is read of `_meta` are what rmcp's own types read.
#[test]
fn params_read_as_rmcp_reads_them() {
    let bodies = [
        r#"{"name":"send_message","arguments":{"msg":{"type":"inc"},"waitFor":"idle"}}"#,
        r#"{"name":"do_inc","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}"#,
        r#"{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/protocolVersion":"2025-11-25","progressToken":3}}"#,
        r#"{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":7}}}"#,
        r#"{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":3,"io.modelcontextprotocol/clientCapabilities":{}}}"#,
        r#"{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":null}}"#,
        r#"{"name":"x","_meta":null,"requestState":"s","inputResponses":{"a":{"b":1}},"other":[1]}"#,
        r#"{"name":"a\u0041","arguments":{"k":[1,2.5,"\n"]}}"#,
    ];
    for body in bodies {
        let ours: PlainParams = serde_json::from_str(body).expect(body);
        let mut theirs: CallToolRequestParams = serde_json::from_str(body).expect(body);
        let meta = theirs.meta.take();
        let view = ours.meta.as_ref();
        let version = meta.as_ref().and_then(|m| m.protocol_version());
        assert_eq!(
            view.and_then(|v| v.version.as_deref()),
            version.as_ref().map(ProtocolVersion::as_str),
            "{body}"
        );
        assert_eq!(
            view.is_some_and(|v| v.capabilities),
            meta.is_some_and(|m| m.client_capabilities().is_some()),
            "{body}"
        );
        assert_eq!(ours.into_rmcp(), theirs, "{body}");
    }
    for refused in [
        r#"{"arguments":{}}"#,
        r#"{"name":"x","arguments":[]}"#,
        r#"{"name":"x","name":"y"}"#,
    ] {
        assert!(serde_json::from_str::<PlainParams>(refused).is_err());
        assert!(serde_json::from_str::<CallToolRequestParams>(refused).is_err());
    }
}

/// The text block is the JSON string serde_json writes.
#[test]
fn strings_are_written_as_serde_json_writes_them() {
    let mut texts: Vec<String> = vec![
        String::new(),
        r#"{"a":"b\"c","d":"\\","e":"é✓😀"}"#.into(),
        "\"\"\\\\".into(),
        "tab\tnew\nline\u{1}\u{1f}\u{7f}".into(),
    ];
    texts.push((0u8..=127).map(char::from).collect());
    for text in texts {
        let mut ours = b"x".to_vec();
        write_str(&mut ours, &text);
        let theirs = format!("x{}", serde_json::to_string(&text).unwrap());
        assert_eq!(String::from_utf8(ours).unwrap(), theirs);
    }
}

#[test]
fn legacy_headers() {
    let session = Generation::Session;
    assert!(plain_headers(&headers(&[]), session));
    assert!(plain_headers(
        &headers(&[("mcp-protocol-version", "2025-11-25")]),
        session
    ));
    // Unknown, sessionless or doubled versions are rmcp's to judge.
    for bad in [
        vec![("mcp-protocol-version", "2025-13-01")],
        vec![("mcp-protocol-version", "2026-07-28")],
        vec![
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        vec![("mcp-param-x", "1")],
    ] {
        assert!(!plain_headers(&headers(&bad), session), "{bad:?}");
    }
}

#[test]
fn stateless_headers() {
    let stateless = Generation::Stateless;
    let good = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "do_inc"),
    ];
    assert!(plain_headers(&headers(&good), stateless));
    assert!(names_tool(&headers(&good), "do_inc"));
    assert!(!names_tool(&headers(&good), "send_message"));
    assert!(!names_tool(
        &headers(&[("mcp-name", "=?base64?ZG9faW5j?=")]),
        "=?base64?ZG9faW5j?="
    ));
    for missing in 0..2 {
        let mut partial = good[..2].to_vec();
        partial.remove(missing);
        assert!(!plain_headers(&headers(&partial), stateless));
    }
    let mut wrong = good.to_vec();
    wrong[1] = ("mcp-method", "tools/list");
    assert!(!plain_headers(&headers(&wrong), stateless));
    let mut doubled = good.to_vec();
    doubled.push(("mcp-method", "tools/call"));
    assert!(!plain_headers(&headers(&doubled), stateless));
}
