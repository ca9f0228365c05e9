//! The fast path of `tools/call` on `/agent/mcp` (`docs/mcp.md` §Fast path): the admission
//! layer answers a plain tool call itself, as one `application/json` JSON-RPC response,
//! instead of handing it to rmcp's per-request machinery (a session worker and an event stream
//! on the legacy generation, a service and its tasks per request on 2026-07-28).
//!
//! A call is answered here only when rmcp would accept it exactly as it is; anything unusual
//! or erroneous goes to rmcp unchanged, so its error codes and statuses stay rmcp's:
//! - a JSON-RPC `tools/call` request, read with rmcp's own types and nothing else in it;
//! - no `Mcp-Param-*` header;
//! - on a legacy session (live, not being rebuilt: the admission layer checked and touched
//!   it): no protocol version in `_meta`, and an `MCP-Protocol-Version` header, when sent,
//!   naming one known revision with `initialize`;
//! - on 2026-07-28 with a verified bearer: `MCP-Protocol-Version: 2026-07-28` once, the same
//!   version and the client capabilities in `_meta`, `Mcp-Method: tools/call` and `Mcp-Name`
//!   equal to the tool's name (plain, not Base64), each once;
//! - a tool that runs for a binding: never `connect_session` / `disconnect_session`, and on a
//!   legacy session never `describe_app` / `observe` (they use the session's description
//!   cache, which lives in rmcp's handler);
//! - a tool that exists: an unknown name (answered before anything runs) goes to rmcp for its
//!   error.
//!
//! The tool then runs through the same code as the handler's ([`ToolRunner::run`]), and the
//! response is written as rmcp's handler writes it for the generation ([`written`]).

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, CallToolResponse, JsonRpcVersion2_0,
    ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;

use super::registry::{Binding, McpSessions};
use super::run::{Answer, BoundCall, Generation, ToolCall, ToolRunner};
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::Operation;
use crate::surface::mcp::forward::DescriptionCache;

const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
const PARAM_PREFIX: &str = "mcp-param-";
/// A header value in this form is Base64 (SEP-2243); rmcp decodes it, so it goes to rmcp.
const BASE64_PREFIX: &str = "=?base64?";

/// Where a `tools/call` came in.
pub(super) enum Route<'a> {
    /// On the legacy session with this id.
    Session(&'a str),
    /// On 2026-07-28, with the binding of its verified bearer.
    Stateless(&'a Binding),
}

/// The answer to a `tools/call`, or `None` when rmcp must take it (nothing ran).
pub(super) async fn answer<A: App>(
    runner: &ToolRunner<A>,
    sessions: &McpSessions,
    headers: &HeaderMap,
    body: &[u8],
    route: Route<'_>,
) -> Option<Response> {
    let generation = match route {
        Route::Session(_) => Generation::Session,
        Route::Stateless(_) => Generation::Stateless,
    };
    if !plain_headers(headers, generation) {
        return None;
    }
    let Ok(mut request) = serde_json::from_slice::<PlainCall>(body) else {
        return None;
    };
    let meta = request.params.meta.take().unwrap_or_default();
    let meta_fits = match generation {
        Generation::Session => meta.protocol_version().is_none(),
        Generation::Stateless => {
            meta.protocol_version() == Some(ProtocolVersion::V_2026_07_28)
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    };
    if !meta_fits {
        return None;
    }
    if generation == Generation::Stateless && !names_tool(headers, &request.params.name) {
        return None;
    }
    let ToolCall::Bound(call) = runner.resolve(request.params).ok()? else {
        return None;
    };
    let binding = match route {
        Route::Session(id) => {
            if let BoundCall::Run(Operation::Describe | Operation::Observe, _) = call {
                return None;
            }
            sessions.binding(id)
        }
        Route::Stateless(binding) => Some(binding.clone()),
    };
    // A legacy session's cache is never read (above); a 2026-07-28 request starts with none.
    let cache = DescriptionCache::default();
    let answer = runner.run(call, binding, generation, &cache).await.ok()?;
    Some(json_response(request.id, answer, generation))
}

/// A `tools/call` request: the JSON-RPC envelope and the call's parameters with rmcp's types,
/// read directly (rmcp reads any message through enums with flattened fields, which buffer the
/// whole message first). Anything more in the envelope goes to rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainCall {
    #[allow(dead_code)] // read to require "2.0", as rmcp does
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[allow(dead_code)] // read to require "tools/call"
    method: CallToolRequestMethod,
    params: CallToolRequestParams,
}

/// The headers rmcp accepts as they are for a tool call of `generation` (the body's side is
/// checked once it is parsed).
fn plain_headers(headers: &HeaderMap, generation: Generation) -> bool {
    if headers
        .keys()
        .any(|name| name.as_str().starts_with(PARAM_PREFIX))
    {
        return false;
    }
    let version = sole(headers, PROTOCOL_VERSION);
    match generation {
        Generation::Session => match version {
            Sole::Absent => true,
            Sole::One(v) => ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == v && known.has_initialize()),
            Sole::Other => false,
        },
        Generation::Stateless => {
            matches!(version, Sole::One(v) if v == ProtocolVersion::V_2026_07_28.as_str())
                && matches!(sole(headers, METHOD), Sole::One("tools/call"))
        }
    }
}

/// `Mcp-Name` is the tool's name as it is.
fn names_tool(headers: &HeaderMap, name: &str) -> bool {
    matches!(sole(headers, NAME), Sole::One(v) if v == name && !v.starts_with(BASE64_PREFIX))
}

/// What a request carries of a header.
enum Sole<'a> {
    Absent,
    /// One value, valid text.
    One(&'a str),
    /// Several values, or one that is not valid text.
    Other,
}

fn sole<'a>(headers: &'a HeaderMap, name: &str) -> Sole<'a> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Sole::Absent,
        (Some(v), None) => v.to_str().map_or(Sole::Other, Sole::One),
        _ => Sole::Other,
    }
}

/// The JSON-RPC response as rmcp writes it for a request of `generation` answered with plain
/// JSON.
fn json_response(id: RequestId, answer: Answer, generation: Generation) -> Response {
    let body = match answer {
        Answer::Passed(text) => match passed(&id, &text, generation) {
            Some(body) => Ok(body.into_bytes()),
            None => written(id, Answer::Passed(text).into_response(), generation),
        },
        Answer::Result(result) => written(id, *result, generation),
    };
    match body {
        Ok(body) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            ApiError::internal(format!("serializing the tool result failed: {e}")).into_response()
        }
    }
}

/// The response rmcp's handler writes for `result`: on 2026-07-28 with the caching hints a
/// cacheable result lacks (none for a tool call) and `resultType`; on a legacy session without
/// `resultType: "complete"` and without a structured content that is not an object.
fn written(
    id: RequestId,
    result: CallToolResponse,
    generation: Generation,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut result = ServerResult::from(result);
    match generation {
        Generation::Stateless => result.fill_missing_cache_hints(),
        Generation::Session => {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
        }
    }
    serde_json::to_vec(&ServerJsonRpcMessage::response(result, id))
}

/// The response of a success that passes the operation's JSON text on: written around the
/// text instead of parsing it into a value and writing that again (the same bytes as
/// [`written`] for an object serde_json wrote). `None` for text that is not a JSON object:
/// it is written by [`written`], parsed.
fn passed(id: &RequestId, text: &str, generation: Generation) -> Option<String> {
    if !text.starts_with('{') {
        return None;
    }
    serde_json::from_str::<&serde_json::value::RawValue>(text).ok()?;
    let id = serde_json::to_string(id).ok()?;
    let escaped = serde_json::to_string(text).ok()?;
    let mut out = String::with_capacity(text.len() + escaped.len() + 128);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(&id);
    out.push_str(match generation {
        Generation::Stateless => r#","result":{"resultType":"complete","content":["#,
        Generation::Session => r#","result":{"content":["#,
    });
    out.push_str(r#"{"type":"text","text":"#);
    out.push_str(&escaped);
    out.push_str(r#"}],"structuredContent":"#);
    out.push_str(text);
    out.push_str("}}");
    Some(out)
}

#[cfg(test)]
mod tests {
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
                    let result = Answer::Passed(text.to_owned()).into_response();
                    let rmcp = written(id.clone(), result, generation).unwrap();
                    assert_eq!(fast, String::from_utf8(rmcp).unwrap());
                }
            }
        }
        // Not a JSON object: written by rmcp's rules, parsed (a legacy peer gets no
        // structured content that is not an object).
        let id = RequestId::Number(1);
        assert_eq!(passed(&id, "not json", Generation::Session), None);
        assert_eq!(passed(&id, "[1]", Generation::Session), None);
        let result = Answer::Passed("[1]".into()).into_response();
        let legacy: serde_json::Value =
            serde_json::from_slice(&written(id, result, Generation::Session).unwrap()).unwrap();
        assert!(legacy["result"].get("structuredContent").is_none());
        assert!(legacy["result"].get("resultType").is_none());
    }

    #[test]
    fn only_a_plain_call_is_read() {
        let call = |body: &str| serde_json::from_str::<PlainCall>(body).ok();
        let read = call(
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"do_inc","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        )
        .expect("a plain call");
        assert_eq!(read.id, RequestId::String("x".into()));
        assert_eq!(read.params.name, "do_inc");
        let meta = read.params.meta.expect("_meta");
        assert_eq!(meta.protocol_version(), Some(ProtocolVersion::V_2026_07_28));
        assert!(meta
            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
            .is_empty());
        for other in [
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
        ] {
            assert!(call(other).is_none(), "{other}");
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
}
