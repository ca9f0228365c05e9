//! The fast path of `tools/call` on `/agent/mcp` (`docs/mcp.md` §Fast path), over plain HTTP
//! on both protocol generations: a plain call answered by the admission layer is the same
//! JSON-RPC message rmcp answers for the same call (byte for byte for a read), and whatever is
//! unusual or wrong still gets rmcp's answer.
//!
//! A request carrying an `Mcp-Param-*` header is one rmcp accepts as it is (the endpoint's
//! tools declare no header parameters) but the fast path leaves to rmcp: it is the "rmcp"
//! side of each comparison. On a legacy session rmcp answers a call with an event stream and
//! the fast path with `application/json`, which tells the two apart.

use agent_examples::counter::Counter;
use agent_tests::TestServer;
use serde_json::{json, Value};

const JSON: &str = "application/json";
const SSE: &str = "text/event-stream";
/// Sends a call to rmcp instead of the fast path, changing nothing else.
const TO_RMCP: (&str, &str) = ("mcp-param-probe", "1");

async fn server() -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .start()
        .await
}

/// One answer of `/agent/mcp`.
#[derive(Debug)]
struct Answer {
    status: u16,
    content_type: String,
    /// The JSON-RPC message: the body, or the `data:` of the event that carries it.
    message: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.message).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    fn result(&self) -> Value {
        let message = self.json();
        assert!(message.get("error").is_none(), "{message}");
        message["result"].clone()
    }

    /// The text block of a tool result.
    fn text(&self) -> String {
        self.result()["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text block: {self:?}"))
            .to_owned()
    }

    fn error_code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {self:?}"))
    }
}

/// A client of one generation: the headers every request carries, and `_meta` for 2026-07-28.
struct Client {
    http: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
    meta: Option<Value>,
}

impl Client {
    /// A legacy session initialized with 2025-11-25 (bound at `initialize` with a bearer).
    async fn legacy(t: &TestServer<Counter>, bearer: Option<&str>) -> Client {
        let mut client = Client {
            http: reqwest::Client::new(),
            url: format!("{}/agent/mcp", t.base),
            headers: Vec::new(),
            meta: None,
        };
        if let Some(token) = bearer {
            client
                .headers
                .push(("authorization".into(), format!("Bearer {token}")));
        }
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "fast", "version": "1"},
        }});
        let resp = client.send(&init, &[]).await;
        let session = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = resp.bytes().await;
        client.headers.push(("mcp-session-id".into(), session));
        client
            .headers
            .push(("mcp-protocol-version".into(), "2025-11-25".into()));
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let resp = client.send(&initialized, &[]).await;
        assert_eq!(resp.status(), 202);
        client
    }

    /// A 2026-07-28 client with the bearer on every request.
    fn stateless(t: &TestServer<Counter>, token: &str) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: format!("{}/agent/mcp", t.base),
            headers: vec![
                ("authorization".into(), format!("Bearer {token}")),
                ("mcp-protocol-version".into(), "2026-07-28".into()),
                ("mcp-method".into(), "tools/call".into()),
            ],
            meta: Some(json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "fast", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            })),
        }
    }

    async fn send(&self, body: &Value, extra: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", JSON)
            .header("accept", format!("{JSON}, {SSE}"))
            .body(body.to_string());
        for (name, value) in &self.headers {
            req = req.header(name, value);
        }
        for (name, value) in extra {
            req = req.header(*name, *value);
        }
        req.send().await.expect("request")
    }

    /// `tools/call` of `tool`, with `extra` headers (the stateless client adds `Mcp-Name`).
    async fn call(&self, tool: &str, arguments: Value, extra: &[(&str, &str)]) -> Answer {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = &self.meta {
            params["_meta"] = meta.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let mut headers = extra.to_vec();
        if self.meta.is_some() && !extra.iter().any(|(n, _)| *n == "mcp-name") {
            headers.push(("mcp-name", tool));
        }
        answer(self.send(&body, &headers).await).await
    }

    /// The same call through the fast path and through rmcp: the fast one must be JSON and
    /// the two messages the same, byte for byte. Answers the fast one.
    async fn on_both_paths(&self, tool: &str, arguments: Value) -> Answer {
        let fast = self.call(tool, arguments.clone(), &[]).await;
        let rmcp = self.call(tool, arguments.clone(), &[TO_RMCP]).await;
        assert_eq!(fast.content_type, JSON, "{tool} {arguments}");
        assert_eq!(fast.message, rmcp.message, "{tool} {arguments}");
        fast
    }
}

async fn answer(resp: reqwest::Response) -> Answer {
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = resp.text().await.expect("body");
    let message = if content_type.starts_with(SSE) {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|d| d.contains("\"jsonrpc\""))
            .unwrap_or_default()
            .to_owned()
    } else {
        text
    };
    Answer {
        status,
        content_type,
        message,
    }
}

/// The two `send_message`-like answers are the same but for the count they reached.
fn same_dispatch(fast: &Value, rmcp: &Value) {
    let (f, r) = (&fast["structuredContent"], &rmcp["structuredContent"]);
    assert_eq!(f["status"], "dispatched", "{fast}");
    assert_eq!(r["status"], "dispatched", "{rmcp}");
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    assert_eq!(keys(fast), keys(rmcp));
    assert_eq!(keys(f), keys(r));
    for result in [fast, rmcp] {
        let text = result["content"][0]["text"].as_str().expect("text");
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            result["structuredContent"]
        );
        assert_eq!(result["content"].as_array().map(Vec::len), Some(1));
        assert!(result.get("isError").is_none(), "{result}");
    }
}

#[tokio::test]
async fn a_legacy_sessions_calls_answer_as_rmcp_does() {
    let t = server().await;
    let m = t.mint("alice", None).await;
    let client = Client::legacy(&t, Some(&m.token)).await;

    // A read: the same message, byte for byte, as JSON here and as an event from rmcp.
    let fast = client.call("get_state", json!({}), &[]).await;
    let rmcp = client.call("get_state", json!({}), &[TO_RMCP]).await;
    assert_eq!((fast.status, fast.content_type.as_str()), (200, JSON));
    assert_eq!((rmcp.status, rmcp.content_type.as_str()), (200, SSE));
    assert_eq!(fast.message, rmcp.message);
    assert_eq!(fast.result()["structuredContent"]["state"]["count"], 0);

    // A dispatch, as `send_message` and as the action tool.
    let fast = client
        .call("send_message", json!({"msg": {"type": "inc"}}), &[])
        .await;
    let rmcp = client
        .call("send_message", json!({"msg": {"type": "inc"}}), &[TO_RMCP])
        .await;
    assert_eq!(fast.content_type, JSON);
    same_dispatch(&fast.result(), &rmcp.result());
    let fast = client.call("do_inc", json!({}), &[]).await;
    let rmcp = client.call("do_inc", json!({}), &[TO_RMCP]).await;
    assert_eq!(fast.content_type, JSON);
    same_dispatch(&fast.result(), &rmcp.result());
    let state = t.lap(&m.token, "/state", &json!({})).await.body;
    assert_eq!(state["state"]["count"], 4, "each call dispatched once");

    // A refusal of the arguments is the same tool error.
    let fast = client.on_both_paths("get_state", json!({"path": 5})).await;
    assert_eq!(fast.result()["isError"], true);

    // What the fast path leaves to rmcp is answered by rmcp (an event stream).
    let unknown = client.call("no_such_tool", json!({}), &[]).await;
    assert_eq!(unknown.content_type, SSE);
    assert_eq!(unknown.error_code(), -32602);
    let observe = client.call("observe", json!({}), &[]).await;
    assert_eq!(
        observe.content_type, SSE,
        "observe reads the session's cache"
    );
    assert_eq!(observe.result()["structuredContent"]["state"]["count"], 4);
    let mut unknown_version = Client::legacy(&t, Some(&m.token)).await;
    for (name, value) in &mut unknown_version.headers {
        if name == "mcp-protocol-version" {
            *value = "1999-01-01".into();
        }
    }
    let bad_version = unknown_version.call("get_state", json!({}), &[]).await;
    assert_eq!(bad_version.status, 400);
}

#[tokio::test]
async fn an_unbound_legacy_session_is_told_to_connect_on_both_paths() {
    let t = server().await;
    let client = Client::legacy(&t, None).await;
    let text = client.on_both_paths("get_state", json!({})).await.text();
    assert!(text.starts_with("Not connected"), "{text}");
}

#[tokio::test]
async fn a_stateless_call_answers_as_rmcp_does() {
    let t = server().await;
    let m = t.mint("alice", None).await;
    let client = Client::stateless(&t, &m.token);

    let fast = client.call("get_state", json!({}), &[]).await;
    let rmcp = client.call("get_state", json!({}), &[TO_RMCP]).await;
    assert_eq!((fast.status, fast.content_type.as_str()), (200, JSON));
    assert_eq!((rmcp.status, rmcp.content_type.as_str()), (200, JSON));
    assert_eq!(fast.message, rmcp.message);

    // Every tool of a 2026-07-28 request runs on the fast path, `observe` included.
    client.on_both_paths("observe", json!({})).await;

    let fast = client
        .call("send_message", json!({"msg": {"type": "inc"}}), &[])
        .await;
    let rmcp = client
        .call("send_message", json!({"msg": {"type": "inc"}}), &[TO_RMCP])
        .await;
    same_dispatch(&fast.result(), &rmcp.result());
    let fast = client.call("do_inc", json!({}), &[]).await;
    let rmcp = client.call("do_inc", json!({}), &[TO_RMCP]).await;
    same_dispatch(&fast.result(), &rmcp.result());
    let state = t.lap(&m.token, "/state", &json!({})).await.body;
    assert_eq!(state["state"]["count"], 4, "each call dispatched once");

    // A `@validates` failure is the app's answer on both.
    client
        .on_both_paths("do_setCount", json!({"value": -1}))
        .await;
}

#[tokio::test]
async fn what_is_wrong_in_a_stateless_call_is_still_rmcps_answer() {
    let t = server().await;
    let m = t.mint("alice", None).await;
    let client = Client::stateless(&t, &m.token);
    // An unknown tool: rmcp's JSON-RPC error.
    let unknown = client.call("no_such_tool", json!({}), &[]).await;
    assert_eq!((unknown.status, unknown.error_code()), (200, -32602));
    // `Mcp-Name` against the body: 400 -32020.
    let mismatch = client
        .call("get_state", json!({}), &[("mcp-name", "observe")])
        .await;
    assert_eq!((mismatch.status, mismatch.error_code()), (400, -32020));
    // `_meta` without the client's capabilities: 400 -32602.
    let mut bare = Client::stateless(&t, &m.token);
    bare.meta = Some(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
    let malformed = bare.call("get_state", json!({}), &[]).await;
    assert_eq!((malformed.status, malformed.error_code()), (400, -32602));
    // A version in `_meta` the header contradicts: 400 -32020.
    let mut other = Client::stateless(&t, &m.token);
    other.headers[1].1 = "2025-11-25".into();
    let contradicted = other.call("get_state", json!({}), &[]).await;
    assert_eq!(contradicted.status, 400);
    // A bearer that does not verify never reaches a tool: the admission layer's 401.
    let stranger = Client::stateless(&t, "agt_unknown");
    let refused = stranger.call("get_state", json!({}), &[]).await;
    assert_eq!(refused.status, 401);
}

/// A replayed idempotent answer (not written in this process: parsed, then written) and the
/// failure of an action tool whose token was revoked are rmcp's answers, byte for byte, on
/// both generations.
#[tokio::test]
async fn replays_and_revoked_action_tools_answer_as_rmcp_does() {
    let t = server().await;
    for generation in ["legacy", "stateless"] {
        let m = t.mint("alice", None).await;
        let client = match generation {
            "legacy" => Client::legacy(&t, Some(&m.token)).await,
            _ => Client::stateless(&t, &m.token),
        };
        let keyed = json!({"msg": {"type": "inc"}, "idempotencyKey": "k1"});
        let first = client.call("send_message", keyed.clone(), &[]).await;
        assert_eq!(first.content_type, JSON);
        assert_eq!(
            first.result()["structuredContent"]["status"],
            "dispatched",
            "{generation}"
        );
        client.on_both_paths("send_message", keyed).await;
        let fast = client
            .call("do_inc", json!({"_idempotencyKey": "k2"}), &[])
            .await;
        let again = client
            .call("do_inc", json!({"_idempotencyKey": "k2"}), &[])
            .await;
        let rmcp = client
            .call("do_inc", json!({"_idempotencyKey": "k2"}), &[TO_RMCP])
            .await;
        assert_eq!(again.message, rmcp.message, "{generation}");
        same_dispatch(&fast.result(), &again.result());

        if generation == "legacy" {
            let revoke = t
                .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
                .await;
            assert_eq!(revoke.status, 200);
            // The revoke ended the MCP session: both paths answer 404 before any tool runs.
            let fast = client.call("do_inc", json!({}), &[]).await;
            let rmcp = client.call("do_inc", json!({}), &[TO_RMCP]).await;
            assert_eq!((fast.status, rmcp.status), (404, 404), "{fast:?} {rmcp:?}");
        }
    }
}
