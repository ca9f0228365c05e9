//! What one token can hold of `/agent/mcp` (`docs/mcp.md` §Binding, §Notifications): a session
//! a token authenticated counts towards that token's share whether it is still bound or was
//! disconnected, a disconnected session is provisional again (evictable), a revoked token's
//! sessions end, and a token holds a bounded number of `subscriptions/listen` streams.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::send_raw;
use agent_tests::TestServer;
use rmcp::model::{ProtocolVersion, SubscriptionFilter};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{json, Value};
use tea_agent_runtime::mcp::McpOptions;

async fn server() -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .start()
        .await
}

/// A raw MCP POST: the status, the `mcp-session-id` and the body (JSON, or the last SSE
/// `data:` line).
async fn post(
    t: &TestServer<Counter>,
    bearer: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut req = t
        .request(reqwest::Method::POST, "/agent/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let answer = send_raw(req).await;
    (answer.status, answer.session, answer.body)
}

/// An `initialize` (with `bearer`, if any) and its `notifications/initialized`: the status and
/// the session id.
async fn initialize(t: &TestServer<Counter>, bearer: Option<&str>) -> (u16, Option<String>) {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"slots-test","version":"1"}}});
    let (status, id, _) = post(t, bearer, None, body).await;
    if let Some(id) = &id {
        let done = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        assert_eq!(post(t, None, Some(id), done).await.0, 202);
    }
    (status, id)
}

/// A `tools/call` of `name` on session `id`: the tool result's structured content.
async fn tool(t: &TestServer<Counter>, id: &str, name: &str, args: Value) -> Value {
    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name": name, "arguments": args}});
    let (status, _, body) = post(t, None, Some(id), body).await;
    assert_eq!(status, 200, "{name}: {body}");
    body["result"]["structuredContent"].clone()
}

async fn ping(t: &TestServer<Counter>, id: &str) -> u16 {
    let body = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    post(t, None, Some(id), body).await.0
}

/// The finding of issue 31 (4): `initialize` → `connect_session {token}` →
/// `disconnect_session`, 64 times with one token, used to leave 64 authenticated sessions
/// nothing could evict: every later `initialize`, any token's, was 503, and revoking the token
/// freed nothing.
#[tokio::test]
async fn one_token_cannot_hold_every_mcp_slot_and_its_revocation_frees_its_sessions() {
    let t = server().await;
    let sessions = t.server.mcp_sessions();
    let a = t.mint("alice", None).await;
    let mut held = Vec::new();
    for i in 0..64 {
        let (status, id) = initialize(&t, None).await;
        assert_eq!(status, 200, "initialize {i}");
        let id = id.expect("mcp-session-id");
        let connected = tool(&t, &id, "connect_session", json!({"token": a.token})).await;
        assert_eq!(connected["status"], "connected", "connect {i}");
        let gone = tool(&t, &id, "disconnect_session", json!({})).await;
        assert_eq!(gone["status"], "disconnected", "disconnect {i}");
        // A disconnected session is provisional again.
        assert!(!sessions.is_authenticated(&id));
        held.push(id);
    }
    // The token's share (8) is all it keeps, unbound as they are.
    assert!(sessions.live() <= 8, "{} live", sessions.live());
    // Another token's bearer initialize and an anonymous one both get a slot.
    let b = t.mint("bob", None).await;
    let (status, of_b) = initialize(&t, Some(&b.token)).await;
    assert_eq!(status, 200);
    let of_b = of_b.expect("bob's session");
    assert_eq!(initialize(&t, None).await.0, 200);

    // Bound and unbound sessions alike end with the token's revocation.
    let (status, bound) = initialize(&t, Some(&a.token)).await;
    assert_eq!(status, 200);
    let bound = bound.expect("a bound session");
    let owned: Vec<String> = held
        .iter()
        .filter(|id| sessions.is_live(id))
        .cloned()
        .chain([bound.clone()])
        .collect();
    assert!(owned.len() >= 2, "{owned:?}");
    let revoked = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": a.tid}))
        .await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    for id in &owned {
        assert_eq!(ping(&t, id).await, 404, "{id} outlived its token");
    }
    assert_eq!(ping(&t, &of_b).await, 200);
    assert!(sessions.live() <= 2, "{} live", sessions.live());
}

fn stateless_config(t: &TestServer<Counter>, token: &str) -> StreamableHttpClientTransportConfig {
    StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", t.base))
        .auth_header(token)
}

/// The finding of issue 31 (6): each `subscriptions/listen` starts a watch of the token's
/// session, and one token could open any number of them.
#[tokio::test]
async fn one_token_holds_a_bounded_number_of_listen_streams() {
    let t = server().await;
    let m = t.mint("alice", None).await;
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(stateless_config(&t, &m.token)),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover");
    let filter = || SubscriptionFilter::builder().tools_list_changed().build();
    let max = McpOptions::default().max_listens_per_token;
    let mut streams = Vec::new();
    for i in 0..max {
        let stream = client.peer().listen(filter()).await;
        streams.push(stream.unwrap_or_else(|e| panic!("listen {i}: {e}")));
    }
    // One more is refused before any watch starts, saying why.
    let listen = json!({"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},
        "notifications":{"toolsListChanged":true}}});
    let req = t
        .request(reqwest::Method::POST, "/agent/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .bearer_auth(&m.token)
        .body(listen.to_string());
    let refused = tokio::time::timeout(Duration::from_secs(5), req.send())
        .await
        .expect("answered at once")
        .expect("request");
    assert_eq!(refused.status().as_u16(), 429);
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "rate-limited");
    let detail = body["error"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("subscriptions/listen streams"), "{body}");
    // Another token is not affected; a stream that closes gives its slot back.
    let other = t.mint("bob", None).await;
    let client_b = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(stateless_config(&t, &other.token)),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover");
    let _b = client_b.peer().listen(filter()).await.expect("bob listens");
    drop(streams.pop());
    let mut again = None;
    for _ in 0..50 {
        if let Ok(stream) = client.peer().listen(filter()).await {
            again = Some(stream);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(again.is_some(), "the closed stream's slot came back");
}
