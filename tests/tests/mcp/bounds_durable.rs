//! The bounds of `/agent/mcp` hold on disk too (`docs/mcp.md` §Bounds on disk): with a durable
//! store, a session the registry drops (evicted by the per-token cap, expired, deleted) has
//! its stored binding deleted, so its id answers 404 after a restart as before it; the stored
//! bindings never outgrow `maxSessionsPerToken` per token nor `maxSessions` in all.
//!
//! On a real SQLite file with the counter example as its own process killed with SIGKILL, and
//! on a real PostgreSQL and SQLite in process (a restart there is a second server on the same
//! database).

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::counter_server;
use agent_tests::mcp::send_raw;
use agent_tests::postgres::PgServer;
use agent_tests::process::mint;
use agent_tests::temp::TempDir;
use agent_tests::TestServer;
use serde_json::{json, Value};
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::mcp::McpOptions;
use tea_agent_runtime::store::Stores;

/// A raw MCP POST to `base`, with the bearer and the session id when given; the status and
/// the `mcp-session-id` of the answer.
async fn mcp_post(
    base: &str,
    bearer: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/agent/mcp"))
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
    (answer.status, answer.session)
}

/// A bearer `initialize`: the new session's id.
async fn initialize(base: &str, token: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "disk-bounds", "version": "1"}}});
    let (status, id) = mcp_post(base, Some(token), None, body).await;
    assert_eq!(status, 200);
    id.expect("mcp-session-id")
}

/// A `ping` on session `id` (no bearer: a stored session is rebuilt by its bound token id).
async fn ping(base: &str, id: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    mcp_post(base, None, Some(id), body).await.0
}

/// Mints a token on a server whose identity is its cookie.
async fn mint_with_cookie(base: &str) -> (String, String) {
    let minted = mint(&agent_tests::browser(), base, json!({})).await;
    (
        minted["token"].as_str().expect("token").to_owned(),
        minted["tid"].as_str().expect("tid").to_owned(),
    )
}

#[tokio::test]
async fn twelve_bearer_initializations_keep_eight_bindings_on_sqlite_across_sigkill() {
    let dir = TempDir::new("mcp-disk");
    let db = dir.file("mcp.db");
    let first = counter_server!().args(["--db", &db]).start();
    let (token, tid) = mint_with_cookie(&first.base).await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(initialize(&first.base, &token).await);
    }
    // The per-token cap (8): the four oldest were evicted.
    for (i, id) in ids.iter().enumerate() {
        let expected = if i < 4 { 404 } else { 200 };
        assert_eq!(ping(&first.base, id).await, expected, "session {i}");
    }
    {
        let stores = Stores::open(&db).await.expect("read the file");
        assert_eq!(stores.mcp.mcp_count().await.expect("count"), 8);
        assert_eq!(stores.mcp.mcp_ids_of(&tid).await.expect("of").len(), 8);
    }
    let second = first.restart();
    // Evicted before the restart: still 404 (not rebuilt from the store).
    for id in &ids[..4] {
        assert_eq!(ping(&second.base, id).await, 404);
    }
    // The eight kept ones are rebuilt; two of them used now.
    assert_eq!(ping(&second.base, &ids[10]).await, 200);
    assert_eq!(ping(&second.base, &ids[11]).await, 200);
    // Twelve more: the store still holds eight, all from the newest initializations, and
    // every older id answers 404 whether it was live here or only stored.
    let mut newer = Vec::new();
    for _ in 0..12 {
        newer.push(initialize(&second.base, &token).await);
    }
    let stores = Stores::open(&db).await.expect("read the file");
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 8);
    for id in ids.iter().chain(&newer[..4]) {
        assert_eq!(ping(&second.base, id).await, 404);
    }
    for id in &newer[4..] {
        assert_eq!(ping(&second.base, id).await, 200);
    }
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 8);
    second.kill();
}

/// An in-process server on `spec` with `mcp` options and `clock`.
async fn server(
    spec: &str,
    mcp: McpOptions,
    clock: Arc<ManualClock>,
) -> (TestServer<Counter>, tokio::task::JoinHandle<()>, Stores) {
    let stores = Stores::open(spec).await.expect("store");
    let (t, task) = TestServer::builder(Counter)
        .config(|c| c.clock = clock)
        .rate_limit("100000/minute")
        .options(|o| o.mcp = mcp)
        .stores(&stores)
        .start_stoppable()
        .await;
    (t, task, stores)
}

async fn stop(task: tokio::task::JoinHandle<()>) {
    task.abort();
    let _ = task.await;
}

/// A bearer `initialize` one millisecond after the previous one (the store orders bindings by
/// when they were issued).
async fn initialize_later(clock: &ManualClock, base: &str, token: &str) -> String {
    clock.advance(1);
    initialize(base, token).await
}

/// Per token and in all, live and stored, before and after a restart; expiry deletes.
async fn bounds_on(spec: &str) {
    let mut mcp = McpOptions::default();
    mcp.max_sessions = 4;
    mcp.max_sessions_per_token = 2;
    mcp.idle_ttl = std::time::Duration::from_millis(60_000);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (t, task, stores) = server(spec, mcp.clone(), clock.clone()).await;
    let a = t.mint("alice", None).await;
    let mut of_a = Vec::new();
    for _ in 0..5 {
        of_a.push(initialize_later(&clock, &t.base, &a.token).await);
    }
    assert_eq!(stores.mcp.mcp_ids_of(&a.tid).await.expect("of").len(), 2);
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 2);
    // Two more tokens fill the endpoint (4): every stored binding is live.
    let b = t.mint("bob", None).await;
    let c = t.mint("carol", None).await;
    let of_b = initialize_later(&clock, &t.base, &b.token).await;
    let of_c = initialize_later(&clock, &t.base, &c.token).await;
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 4);
    stop(task).await;
    drop(t);

    // After a restart nothing is live: new sessions push the oldest stored ones out.
    let (t, task, stores) = server(spec, mcp.clone(), clock.clone()).await;
    let d = t.mint("dave", None).await;
    let e = t.mint("erin", None).await;
    let of_d = initialize_later(&clock, &t.base, &d.token).await;
    let of_e = initialize_later(&clock, &t.base, &e.token).await;
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 4);
    // The two oldest stored (alice's) went; bob's and carol's are rebuilt.
    for id in &of_a {
        assert_eq!(ping(&t.base, id).await, 404);
    }
    assert_eq!(ping(&t.base, &of_b).await, 200);
    assert_eq!(ping(&t.base, &of_c).await, 200);
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 4);

    // Expiry: idle past the TTL, every session is dropped on the next request, and its row
    // deleted: after a restart they stay 404.
    clock.advance(60_001);
    for id in [&of_b, &of_c, &of_d, &of_e] {
        assert_eq!(ping(&t.base, id).await, 404);
    }
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 0);
    stop(task).await;
    drop(t);
    let (t, task, _stores) = server(spec, mcp, clock).await;
    for id in [&of_b, &of_c, &of_d, &of_e] {
        assert_eq!(ping(&t.base, id).await, 404);
    }
    stop(task).await;
}

#[tokio::test]
async fn stored_bindings_hold_the_caps_and_expire_on_sqlite() {
    let dir = TempDir::new("mcp-disk");
    bounds_on(&dir.file("mcp.db")).await;
}

#[tokio::test]
async fn stored_bindings_hold_the_caps_and_expire_on_postgres() {
    let pg = PgServer::start();
    bounds_on(&pg.url()).await;
}

#[tokio::test]
async fn twelve_bearer_initializations_keep_eight_bindings_on_postgres() {
    let pg = PgServer::start();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (t, task, stores) = server(&pg.url(), McpOptions::default(), clock.clone()).await;
    let m = t.mint("alice", None).await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(initialize_later(&clock, &t.base, &m.token).await);
    }
    for (i, id) in ids.iter().enumerate() {
        let expected = if i < 4 { 404 } else { 200 };
        assert_eq!(ping(&t.base, id).await, expected, "session {i}");
    }
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 8);
    assert_eq!(stores.mcp.mcp_ids_of(&m.tid).await.expect("of").len(), 8);
    stop(task).await;
    drop(t);

    // Another process on the same database: the evicted ids stay 404, the kept ones come back.
    let (t, task, stores) = server(&pg.url(), McpOptions::default(), clock).await;
    for id in &ids[..4] {
        assert_eq!(ping(&t.base, id).await, 404);
    }
    for id in &ids[4..] {
        assert_eq!(ping(&t.base, id).await, 200);
    }
    assert_eq!(stores.mcp.mcp_count().await.expect("count"), 8);
    stop(task).await;
}

/// Issue 31 (finding 1): a session restored after a restart was admitted by token id alone, so
/// a claim, which rotates the token, did not end it. Now the stored binding keeps the token's
/// hash: a session restored before the claim ends on its next request, one not yet restored is
/// never rebuilt, and the new token opens sessions as usual. On a SQLite file; a restart is a
/// new server on it.
#[tokio::test]
async fn a_session_restored_after_a_claim_is_refused_on_sqlite() {
    let dir = TempDir::new("mcp-claim");
    let spec = dir.file("mcp.db");
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (t, task, _stores) = server(&spec, McpOptions::default(), clock.clone()).await;
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({"paired": true}))
        .await;
    assert_eq!(minted.status, 200, "{:?}", minted.body);
    let token = minted.body["token"].as_str().expect("token").to_owned();
    let tid = minted.body["tid"].as_str().expect("tid").to_owned();
    let tab = agent_tests::tab::Tab::pair(&t.base, &token).await;
    let restored_first = initialize(&t.base, &token).await;
    let restored_after = initialize(&t.base, &token).await;
    // The app's socket drops: the paired token may be claimed within the grace window.
    tab.close().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let first_host = t.base.trim_start_matches("http://").to_owned();
    stop(task).await;
    drop(t);

    let (t, task, _stores) = server(&spec, McpOptions::default(), clock).await;
    // Rebuilt by token id (no bearer): the token is what it was.
    assert_eq!(ping(&t.base, &restored_first).await, 200);
    let claimed = t
        .http
        .post(format!("{}/agent/resume/claim", t.base))
        .header("host", &first_host)
        .header(agent_tests::USER_HEADER, "alice")
        .header("content-type", "application/json")
        .body(json!({"tid": tid}).to_string())
        .send()
        .await
        .expect("claim");
    assert_eq!(claimed.status().as_u16(), 200);
    let claimed: Value = claimed.json().await.expect("JSON");
    let rotated = claimed["token"]
        .as_str()
        .expect("the rotated token")
        .to_owned();
    assert_ne!(rotated, token);
    // The old binding no longer holds, live or stored.
    assert_eq!(ping(&t.base, &restored_first).await, 404);
    assert_eq!(ping(&t.base, &restored_after).await, 404);
    // The rotated token opens sessions as any token does.
    let fresh = initialize(&t.base, &rotated).await;
    assert_eq!(ping(&t.base, &fresh).await, 200);
    stop(task).await;
}
