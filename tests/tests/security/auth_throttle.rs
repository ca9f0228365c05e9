//! Failed authentications are limited per client address (`docs/security.md` §Rate limits,
//! issue 31 finding 6): a flood of bad bearers on LAP, `/agent/ws` and a 2026-07-28 MCP
//! request, or of unknown MCP session ids with a durable store, is refused with 429 before the
//! store is read once the address failed `rate_limit` times, its audit lines stay bounded, and
//! another address is not affected.

use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::tab::{ws_url, Tab};
use agent_tests::temp::TempDir;
use agent_tests::token_faults::{FaultyTokens, TokenOp};
use agent_tests::TestServer;
use serde_json::{json, Value};
use tea_agent_runtime::security::MemoryAuditSink;
use tea_agent_runtime::security::TrustProxy;
use tea_agent_runtime::store::InMemoryTokenStore;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::ServerOptions;

/// Failures an address may have per minute in these tests.
const ALLOWED: usize = 5;

fn options(o: &mut ServerOptions) {
    o.rate_limit = format!("{ALLOWED}/minute").parse().expect("limit");
    // The address is the first `X-Forwarded-For` entry, so one test plays several clients.
    o.trust_proxy = TrustProxy::hops(1);
}

async fn server() -> (TestServer<Counter>, Arc<FaultyTokens>, Arc<MemoryAuditSink>) {
    let audit = Arc::new(MemoryAuditSink::new());
    // The in-memory token store, its lookups counted (what a bad bearer costs).
    let tokens = FaultyTokens::new(Arc::new(InMemoryTokenStore::new()));
    let t = TestServer::builder(Counter)
        .options(options)
        .audit(audit.clone())
        .token_store(tokens.clone())
        .start()
        .await;
    (t, tokens, audit)
}

const BAD: &str = "agt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// A LAP `/state` from `address` with `bearer`: the status and the `retry-after` header.
async fn lap(t: &TestServer<Counter>, address: &str, bearer: &str) -> (u16, Option<String>) {
    let resp = t
        .request(reqwest::Method::POST, "/agent/lap/v1/state")
        .header("x-forwarded-for", address)
        .header("content-type", "application/json")
        .bearer_auth(bearer)
        .body("{}")
        .send()
        .await
        .expect("LAP");
    let retry = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (resp.status().as_u16(), retry)
}

/// A 2026-07-28 `tools/list` from `address` with `bearer`: the status and the body.
async fn mcp_stateless(t: &TestServer<Counter>, address: &str, bearer: &str) -> (u16, Value) {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientInfo":{"name":"throttle-test","version":"1"},
            "io.modelcontextprotocol/clientCapabilities":{}}}});
    let resp = t
        .request(reqwest::Method::POST, "/agent/mcp")
        .header("x-forwarded-for", address)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .bearer_auth(bearer)
        .body(body.to_string())
        .send()
        .await
        .expect("MCP");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Statuses of `n` calls of `call`, in order.
async fn statuses<F, Fut>(n: usize, mut call: F) -> Vec<u16>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = u16>,
{
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(call().await);
    }
    out
}

/// `ALLOWED + 1` failures answered as such (the last one blocks), then 429 for the rest.
fn expected(refused_with: u16, n: usize) -> Vec<u16> {
    (0..n)
        .map(|i| if i <= ALLOWED { refused_with } else { 429 })
        .collect()
}

#[tokio::test]
async fn a_bad_bearer_flood_on_lap_is_refused_before_the_store_after_its_allowance() {
    let (t, tokens, _) = server().await;
    let good = t.mint("alice", None).await;
    let before = tokens.calls(TokenOp::Find);
    let seen = statuses(20, || async { lap(&t, "203.0.113.1", BAD).await.0 }).await;
    assert_eq!(seen, expected(401, 20));
    assert_eq!(
        tokens.calls(TokenOp::Find) - before,
        ALLOWED + 1,
        "every refusal after the allowance is answered without a lookup"
    );
    let (status, retry) = lap(&t, "203.0.113.1", &good.token).await;
    assert_eq!(status, 429);
    assert!(retry.is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s >= 1)));
    // Another address is not affected.
    assert_eq!(lap(&t, "198.51.100.2", &good.token).await.0, 200);
}

#[tokio::test]
async fn a_bad_bearer_flood_on_agent_ws_is_refused_before_the_store() {
    let (t, tokens, _) = server().await;
    let before = tokens.calls(TokenOp::Find);
    let seen = statuses(20, || async {
        let headers = [("x-forwarded-for", "203.0.113.3")];
        match Tab::open(&ws_url(&t.base, BAD), &headers).await {
            Ok(_) => 101,
            Err(status) => status,
        }
    })
    .await;
    assert_eq!(seen, expected(401, 20));
    assert_eq!(tokens.calls(TokenOp::Find) - before, ALLOWED + 1);
}

#[tokio::test]
async fn a_bad_bearer_flood_on_mcp_2026_07_28_is_refused_and_its_audit_lines_bounded() {
    let (t, tokens, audit) = server().await;
    let good = t.mint("alice", None).await;
    let before = tokens.calls(TokenOp::Find);
    let mut seen = Vec::new();
    for _ in 0..40 {
        let (status, body) = mcp_stateless(&t, "203.0.113.4", BAD).await;
        if status == 429 {
            assert_eq!(body["error"]["code"], "rate-limited", "{body}");
            assert!(body["error"]["retryAfterMs"].as_u64().is_some(), "{body}");
        }
        seen.push(status);
    }
    assert_eq!(seen, expected(401, 40));
    assert_eq!(tokens.calls(TokenOp::Find) - before, ALLOWED + 1);
    // One audit line per counted failure and one for the block: not one per request.
    let lines: Vec<(String, Value)> = audit
        .entries()
        .into_iter()
        .filter(|e| matches!(e.event.as_str(), "auth-failed" | "rate-limited"))
        .map(|e| (e.event.as_str().to_owned(), e.detail))
        .collect();
    assert_eq!(lines.len(), ALLOWED + 1, "{lines:?}");
    assert_eq!(lines[ALLOWED].0, "rate-limited");
    assert_eq!(lines[ALLOWED].1["reason"], "auth-failures");
    // Another address goes on.
    assert_eq!(mcp_stateless(&t, "198.51.100.4", &good.token).await.0, 200);
}

/// Unknown MCP session ids with a durable store used to take the global restore lock and
/// read the store each, for any caller: now they count as failures of the address.
#[tokio::test]
async fn unknown_mcp_session_ids_are_refused_before_the_store_after_the_allowance() {
    let dir = TempDir::new("auth-throttle");
    let stores = Stores::open(&dir.file("mcp.db")).await.expect("store");
    let t = TestServer::builder(Counter)
        .options(options)
        .stores(&stores)
        .start()
        .await;
    let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    let seen = statuses(20, || async {
        let id = format!("{:032x}", rand_id());
        t.request(reqwest::Method::POST, "/agent/mcp")
            .header("x-forwarded-for", "203.0.113.5")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", id)
            .body(ping.to_string())
            .send()
            .await
            .expect("MCP")
            .status()
            .as_u16()
    })
    .await;
    assert_eq!(seen, expected(404, 20));
}

fn rand_id() -> u128 {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    now ^ (NEXT.fetch_add(1, Ordering::SeqCst) as u128)
}
