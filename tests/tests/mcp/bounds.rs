//! Session bounds of `/agent/mcp` (`docs/lap.md` §7.3, §11.5): capacity (503 `session-capacity`),
//! the unauthenticated quota and its LRU eviction, the per-token cap, expiry on the injected
//! clock, 404 for ids that are not live, and no leak (live count back to zero, in the registry
//! and in rmcp's session manager). Raw JSON-RPC POSTs where a full client is overkill.

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::{send_raw, RawAnswer};
use agent_tests::TestServer;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Value};
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::mcp::McpOptions;
use tea_agent_runtime::security::MemoryAuditSink;

const MIN: u64 = 60_000;

/// A counter server with the rate limit out of the way and `mcp` changed.
async fn server(mcp: impl FnOnce(&mut McpOptions)) -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .options(|o| mcp(&mut o.mcp))
        .start()
        .await
}

fn post(t: &TestServer<Counter>, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut req = t
        .request(reqwest::Method::POST, "/agent/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    req
}

fn initialize_body() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"bounds-test","version":"1"}}})
}

/// A raw `initialize`, optionally with a bearer.
async fn initialize(t: &TestServer<Counter>, bearer: Option<&str>) -> RawAnswer {
    let mut req = post(t, None, &initialize_body());
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    send_raw(req).await
}

/// A session id from a successful `initialize`.
async fn open(t: &TestServer<Counter>, bearer: Option<&str>) -> String {
    let r = initialize(t, bearer).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["result"]["serverInfo"]["name"], "agent");
    r.session.expect("mcp-session-id")
}

/// `notifications/initialized` on a session: a request that only touches it.
async fn touch(t: &TestServer<Counter>, id: &str) -> u16 {
    let body = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    send_raw(post(t, Some(id), &body)).await.status
}

/// A `ping` on a session; 200 with its result when live.
async fn ping(t: &TestServer<Counter>, id: &str) -> RawAnswer {
    send_raw(post(
        t,
        Some(id),
        &json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
    ))
    .await
}

fn assert_gone(r: &RawAnswer) {
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(r.body, json!({"error": "session not found"}));
}

async fn delete(t: &TestServer<Counter>, id: &str) -> RawAnswer {
    send_raw(
        t.request(reqwest::Method::DELETE, "/agent/mcp")
            .header("mcp-session-id", id),
    )
    .await
}

async fn mint_tokens(t: &TestServer<Counter>, n: usize) -> Vec<String> {
    let mut tokens = Vec::new();
    for _ in 0..n {
        tokens.push(t.mint("alice", None).await.token);
    }
    tokens
}

/// Deletes every live session and checks that nothing is left, in the registry nor in rmcp.
async fn close_all_and_check_no_leak(t: &TestServer<Counter>) {
    let sessions = t.server.mcp_sessions();
    for id in sessions.live_ids() {
        assert_eq!(delete(t, &id).await.status, 200);
    }
    assert_eq!(sessions.live(), 0);
    assert_eq!(sessions.reserved(), 0);
    // rmcp closes its side as the session workers end.
    for _ in 0..100 {
        if sessions.transport_sessions().await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sessions.transport_sessions().await, 0);
}

#[tokio::test]
async fn ids_that_are_not_live_answer_404_and_nothing_is_allocated() {
    let t = server(|_| {}).await;
    let sessions = t.server.mcp_sessions();
    for junk in ["2f1c7a52-8a07-4b4e-9bb1-0c8a1d7f3e11", "junk", ""] {
        assert_gone(&ping(&t, junk).await);
        assert_gone(&delete(&t, junk).await);
    }
    assert_eq!(
        (sessions.live(), sessions.transport_sessions().await),
        (0, 0)
    );
    // Without a session id: only initialize (and server/discover) are served.
    let r = send_raw(post(
        &t,
        None,
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    ))
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body, json!({"error": "mcp-session-id required"}));
    let r = send_raw(
        t.request(reqwest::Method::GET, "/agent/mcp")
            .header("accept", "text/event-stream"),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body, json!({"error": "mcp-session-id required"}));
    let discover = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2025-11-25",
        "io.modelcontextprotocol/clientInfo":{"name":"bounds-test","version":"1"},
        "io.modelcontextprotocol/clientCapabilities":{}}}});
    let r = send_raw(
        post(&t, None, &discover)
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-method", "server/discover"),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    let versions = r.body["result"]["supportedVersions"]
        .as_array()
        .expect("supportedVersions");
    // Both generations: the `initialize` ones and the sessionless 2026-07-28.
    assert!(versions.contains(&json!("2025-11-25")));
    assert_eq!(versions.last(), Some(&json!("2026-07-28")));
    assert!(r.session.is_none());
    assert_eq!(sessions.live(), 0);

    // A live session: used, then DELETE → 200 with an empty body, then 404 (no resurrection).
    let id = open(&t, None).await;
    assert_eq!(touch(&t, &id).await, 202);
    let pong = ping(&t, &id).await;
    assert_eq!(pong.status, 200, "{pong:?}");
    assert_eq!(pong.body["result"], json!({}));
    let r = delete(&t, &id).await;
    assert_eq!((r.status, r.body), (200, Value::Null));
    assert_gone(&ping(&t, &id).await);
    assert_gone(&delete(&t, &id).await);
    let again = initialize(&t, None).await;
    assert_ne!(again.session.as_deref(), Some(id.as_str()));
    close_all_and_check_no_leak(&t).await;
}

#[tokio::test]
async fn a_full_endpoint_answers_503_session_capacity_and_keeps_authenticated_sessions() {
    let t = server(|m| m.max_sessions = 4).await;
    let sessions = t.server.mcp_sessions();
    let tokens = mint_tokens(&t, 5).await;
    let mut held = Vec::new();
    for token in &tokens[..4] {
        held.push(open(&t, Some(token)).await);
    }
    assert_eq!(sessions.live(), 4);
    // Every slot is held by an authenticated session: nothing is evictable.
    for bearer in [None, Some(tokens[4].as_str())] {
        let r = initialize(&t, bearer).await;
        assert_eq!(r.status, 503, "{r:?}");
        assert_eq!(r.retry_after.as_deref(), Some("30"));
        assert_eq!(r.body, json!({"error": {"code": "session-capacity"}}));
        assert!(r.session.is_none());
    }
    assert_eq!(sessions.live(), 4);
    assert_eq!(sessions.reserved(), 0);
    // One slot frees up; 50 anonymous initializes then take turns in it (each evicts the
    // previous provisional session) and never touch the authenticated ones.
    assert_eq!(delete(&t, &held.pop().unwrap()).await.status, 200);
    let mut last = None;
    for _ in 0..50 {
        let id = open(&t, None).await;
        if let Some(previous) = last.replace(id) {
            assert_gone(&ping(&t, &previous).await);
        }
    }
    assert_eq!(sessions.live(), 4);
    assert_eq!(sessions.live_provisional(), 1);
    for id in &held {
        assert_eq!(ping(&t, id).await.status, 200);
    }
    close_all_and_check_no_leak(&t).await;

    // 8 concurrent bearer initializes on 4 free slots: exactly four 200 and four 503.
    let tokens = mint_tokens(&t, 8).await;
    let mut calls = Vec::new();
    for token in tokens {
        let (base, client) = (t.base.clone(), t.http.clone());
        calls.push(tokio::spawn(async move {
            let req = client
                .post(format!("{base}/agent/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .bearer_auth(token)
                .body(initialize_body().to_string());
            send_raw(req).await
        }));
    }
    let mut statuses = Vec::new();
    for call in calls {
        let r = call.await.expect("join");
        if r.status == 503 {
            assert_eq!(r.retry_after.as_deref(), Some("30"));
        }
        statuses.push(r.status);
    }
    statuses.sort_unstable();
    assert_eq!(statuses, vec![200, 200, 200, 200, 503, 503, 503, 503]);
    assert_eq!(sessions.live(), 4);
    close_all_and_check_no_leak(&t).await;
}

#[tokio::test]
async fn sixteen_unauthenticated_sessions_at_most_least_recently_used_evicted_first() {
    let t = server(|_| {}).await;
    let sessions = t.server.mcp_sessions();
    let token = mint_tokens(&t, 1).await.remove(0);
    let authenticated = open(&t, Some(&token)).await;
    let mut anonymous = Vec::new();
    for _ in 0..16 {
        anonymous.push(open(&t, None).await);
    }
    assert_eq!((sessions.live(), sessions.live_provisional()), (17, 16));
    // The first anonymous session is used again: the second is now the least recently used.
    assert_eq!(touch(&t, &anonymous[0]).await, 202);
    let newcomer = open(&t, None).await;
    assert_gone(&ping(&t, &anonymous[1]).await);
    assert_eq!(ping(&t, &anonymous[0]).await.status, 200);
    assert_eq!(ping(&t, &newcomer).await.status, 200);
    assert_eq!((sessions.live(), sessions.live_provisional()), (17, 16));
    // Provisional pressure never evicts the authenticated session.
    for _ in 0..40 {
        open(&t, None).await;
    }
    assert_eq!((sessions.live(), sessions.live_provisional()), (17, 16));
    assert!(sessions.is_authenticated(&authenticated));
    assert_eq!(ping(&t, &authenticated).await.status, 200);
    close_all_and_check_no_leak(&t).await;
}

#[tokio::test]
async fn eight_sessions_per_token_at_initialize_and_at_connect_session() {
    let t = server(|_| {}).await;
    let sessions = t.server.mcp_sessions();
    let token = mint_tokens(&t, 1).await.remove(0);
    let mut ids = Vec::new();
    for _ in 0..9 {
        ids.push(open(&t, Some(&token)).await);
    }
    // The ninth evicted the token's least recently used session.
    assert_gone(&ping(&t, &ids[0]).await);
    for id in &ids[1..] {
        assert_eq!(ping(&t, id).await.status, 200);
    }
    assert_eq!(sessions.live(), 8);

    // connect_session binds an anonymous session and evicts the token's LRU OTHER session.
    let before: Vec<String> = sessions.live_ids();
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/agent/mcp", t.base));
    let client = ().serve(transport).await.expect("initialize");
    let mine = sessions
        .live_ids()
        .into_iter()
        .find(|id| !before.contains(id))
        .expect("the client's session");
    assert!(!sessions.is_authenticated(&mine));
    let Value::Object(args) = json!({"token": token}) else {
        unreachable!()
    };
    let connected = client
        .call_tool(CallToolRequestParams::new("connect_session").with_arguments(args))
        .await
        .expect("connect_session");
    assert_eq!(
        connected.structured_content.expect("structured")["status"],
        "connected"
    );
    assert!(sessions.is_authenticated(&mine));
    assert_gone(&ping(&t, &ids[1]).await);
    assert_eq!(sessions.live(), 8);
    client.cancel().await.expect("close");
    close_all_and_check_no_leak(&t).await;
}

#[tokio::test]
async fn sessions_expire_on_the_injected_clock() {
    let clock = ManualClock::new(1_000_000);
    let t = TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .config(|c| c.clock = Arc::new(clock.clone()))
        .audit(Arc::new(MemoryAuditSink::new()))
        .start()
        .await;
    let sessions = t.server.mcp_sessions();
    let token = mint_tokens(&t, 1).await.remove(0);
    let authenticated = open(&t, Some(&token)).await;
    let provisional = open(&t, None).await;
    // 29 minutes: both alive; traffic on the provisional one does not extend its lifetime.
    clock.advance(29 * MIN);
    assert_eq!(ping(&t, &provisional).await.status, 200);
    assert_eq!(ping(&t, &authenticated).await.status, 200);
    // 30 minutes after its creation the provisional session is gone; the authenticated one
    // was used a minute ago.
    clock.advance(MIN);
    assert_gone(&ping(&t, &provisional).await);
    assert_eq!(ping(&t, &authenticated).await.status, 200);
    assert_eq!(sessions.live(), 1);
    // Idle for 29 minutes: kept. Idle for 30 minutes: released, and its id answers 404.
    clock.advance(29 * MIN);
    assert_eq!(ping(&t, &authenticated).await.status, 200);
    clock.advance(30 * MIN);
    assert_gone(&ping(&t, &authenticated).await);
    assert_eq!(sessions.live(), 0);
    // Sweeping happens on any request, and closes rmcp's side too.
    let fresh = open(&t, None).await;
    clock.advance(30 * MIN);
    assert_eq!(initialize(&t, None).await.status, 200);
    assert_gone(&ping(&t, &fresh).await);
    close_all_and_check_no_leak(&t).await;
}

#[tokio::test]
async fn initialize_is_rate_limited_by_client_address() {
    let t = TestServer::builder(Counter)
        .rate_limit("3/minute")
        .start()
        .await;
    for _ in 0..3 {
        open(&t, None).await;
    }
    let r = initialize(&t, None).await;
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.body["error"]["code"], "rate-limited");
    let retry: u64 = r
        .retry_after
        .expect("retry-after")
        .parse()
        .expect("seconds");
    assert!(retry >= 1);
    assert_eq!(t.server.mcp_sessions().live(), 3);
    close_all_and_check_no_leak(&t).await;
}

#[tokio::test]
async fn bearers_at_initialize_and_the_audit_order() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = TestServer::builder(Counter)
        .rate_limit("4/minute")
        .options(|o| o.mcp.max_sessions = 1)
        .audit(audit.clone())
        .start()
        .await;
    let sessions = t.server.mcp_sessions();
    let valid = t.mint("alice", None).await;
    let revoked = t.mint("alice", None).await;
    let r = t
        .post_json(
            "/agent/revoke",
            Some("alice"),
            None,
            &json!({"tid": revoked.tid}),
        )
        .await;
    assert_eq!(r.status, 200);
    let unknown = format!("agt_{}", "x".repeat(43));
    let r = initialize(&t, Some(&unknown)).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.body, json!({"error": {"code": "auth-failed"}}));
    assert!(r.session.is_none());
    let r = initialize(&t, Some(&revoked.token)).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.body, json!({"error": {"code": "revoked"}}));
    assert!(r.session.is_none());
    assert_eq!(sessions.live(), 0);
    // A valid bearer: admitted and bound.
    let id = open(&t, Some(&valid.token)).await;
    assert_eq!(
        sessions.bound_token(&id).map(|b| b.tid),
        Some(valid.tid.clone())
    );
    // Full (the only slot is authenticated) → 503; then the address's bucket is empty → 429.
    assert_eq!(initialize(&t, None).await.status, 503);
    assert_eq!(initialize(&t, None).await.status, 429);
    let refusals: Vec<(String, Value)> = audit
        .entries()
        .into_iter()
        .filter(|e| matches!(e.event.as_str(), "auth-failed" | "rate-limited"))
        .map(|e| (e.event.as_str().to_string(), e.detail))
        .collect();
    let events: Vec<&str> = refusals.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        events,
        ["auth-failed", "auth-failed", "rate-limited", "rate-limited"]
    );
    assert_eq!(refusals[2].1["reason"], "session-capacity");
    assert!(refusals[3].1.get("reason").is_none());
    assert_eq!(sessions.live(), 1);
    close_all_and_check_no_leak(&t).await;
}

/// §11.5.13: an `initialize` that fails while its session is being built (after its slot was
/// reserved) or before (params rmcp cannot read, not JSON-RPC) leaves nothing live, and the
/// next `initialize` succeeds.
#[tokio::test]
async fn a_failed_initialize_leaves_no_session_behind() {
    let t = server(|m| {
        m.max_sessions = 1;
        m.max_unauthenticated_sessions = 1;
    })
    .await;
    let sessions = t.server.mcp_sessions();
    let broken = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}),
        json!({"jsonrpc":"2.0","id":1,"method":"initialize"}),
        json!({"id":1,"method":"initialize","params":"nope"}),
    ];
    for body in &broken {
        let r = send_raw(post(&t, None, body)).await;
        assert!(
            r.status != 200 || r.body.get("error").is_some(),
            "{body} was accepted: {r:?}"
        );
        assert_eq!(sessions.live(), 0, "{body} left a session: {r:?}");
    }
    // Admitted as an `initialize` (a slot reserved), then refused by rmcp while building.
    let r =
        send_raw(post(&t, None, &initialize_body()).header("mcp-protocol-version", "1999-01-01"))
            .await;
    assert_eq!((r.status, r.session.as_deref()), (400, None), "{r:?}");
    assert_eq!(sessions.live(), 0);
    // With room for one session only, a leaked slot would make this a 503.
    let id = open(&t, None).await;
    assert_eq!(sessions.live(), 1);
    assert_eq!(ping(&t, &id).await.status, 200);
    close_all_and_check_no_leak(&t).await;
}
