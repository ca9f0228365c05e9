//! The limits of a fleet (`docs/stores.md` §Limits across replicas): three counter-server
//! processes on one PostgreSQL (a real server the test starts), a client spreading its calls
//! over them round robin. The per-token LAP rate limit, the anonymous mints per address and
//! the MCP sessions per token each hold for the fleet within 20% (without sharing, the client
//! would get three times each); an MCP session minted on one replica is served on another.

use agent_tests::counter_server;
use agent_tests::load::{jsonrpc_result, mcp_headers};
use agent_tests::postgres::PgServer;
use agent_tests::process::ServerProcess;
use agent_tests::temp::TempDir;
use serde_json::{json, Value};

/// `--rate-limit`: the per-token (and per-address MCP, per-identity mint) rate limit.
const RATE: usize = 60;
/// `anonymous_mint_rate`, per minute.
const ANONYMOUS_MINTS: usize = 10;
/// `mcp.max_sessions_per_token`.
const MCP_PER_TOKEN: usize = 4;

/// Three replicas of the counter example on `url`, with the limits above.
fn fleet(url: &str, dir: &TempDir) -> [ServerProcess; 3] {
    let config = dir.file("limits.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nanonymous_mint_rate = \"{ANONYMOUS_MINTS}/minute\"\n\
             [server.mcp]\nmax_sessions_per_token = {MCP_PER_TOKEN}\n"
        ),
    )
    .expect("config");
    let rate = format!("{RATE}/minute");
    let args = [
        "--db",
        url,
        "--rate-limit",
        rate.as_str(),
        "--config",
        config.as_str(),
        // The mint test names its address in `X-Forwarded-For`.
        "--trust-proxy",
        "1",
    ];
    std::array::from_fn(|_| counter_server!().args(args).start())
}

async fn mint_token(base: &str) -> String {
    let human = agent_tests::browser();
    let minted = agent_tests::process::mint(&human, base, json!({})).await;
    minted["token"].as_str().expect("token").to_owned()
}

/// The per-token rate limit: `RATE` a minute for the fleet, not per replica.
async fn lap_rate_limit(bases: &[String; 3]) {
    let token = mint_token(&bases[0]).await;
    let http = reqwest::Client::new();
    let (mut allowed, mut refused) = (0, 0);
    for i in 0..(3 * RATE) {
        let resp = http
            .post(format!("{}/agent/lap/v1/observe", bases[i % 3]))
            .bearer_auth(&token)
            .json(&json!({}))
            .send()
            .await
            .expect("observe");
        match resp.status().as_u16() {
            200 => allowed += 1,
            429 => {
                let body: Value = resp.json().await.expect("json");
                assert_eq!(body["error"]["code"], "rate-limited", "{body}");
                assert!(body["error"]["retryAfterMs"].as_u64().is_some(), "{body}");
                refused += 1;
            }
            other => panic!("observe answered {other}: {}", resp.text().await.unwrap()),
        }
    }
    eprintln!("LAP rate limit {RATE}/minute: {allowed} allowed, {refused} refused over 3 replicas");
    // (The bucket refills one a second while the test runs: a few more.)
    assert!(
        allowed * 10 <= RATE * 12,
        "{allowed} calls allowed over 3 replicas for {RATE}/minute"
    );
    assert!(
        allowed * 10 >= RATE * 8,
        "{allowed} allowed, {refused} refused"
    );
}

/// Anonymous mints per address: `ANONYMOUS_MINTS` a minute for the fleet.
async fn anonymous_mints(bases: &[String; 3]) {
    let (mut allowed, mut refused) = (0, 0);
    for i in 0..(3 * ANONYMOUS_MINTS) {
        // A new visitor each time (no cookie), all from one address.
        let resp = reqwest::Client::new()
            .post(format!("{}/agent/mint", bases[i % 3]))
            .header("x-forwarded-for", "203.0.113.7")
            .json(&json!({}))
            .send()
            .await
            .expect("mint");
        match resp.status().as_u16() {
            200 => allowed += 1,
            429 => {
                let body: Value = resp.json().await.expect("json");
                let detail = body["error"]["detail"].as_str().unwrap_or_default();
                assert!(detail.contains("anonymous mints"), "{body}");
                refused += 1;
            }
            other => panic!("mint answered {other}: {}", resp.text().await.unwrap()),
        }
    }
    eprintln!("anonymous mints {ANONYMOUS_MINTS}/minute: {allowed} allowed, {refused} refused");
    assert!(
        allowed * 10 <= ANONYMOUS_MINTS * 12,
        "{allowed} anonymous mints from one address over 3 replicas, for {ANONYMOUS_MINTS}/minute"
    );
    assert!(
        allowed >= ANONYMOUS_MINTS - 1,
        "{allowed} allowed, {refused} refused"
    );
    // Another address has its own bucket.
    let resp = reqwest::Client::new()
        .post(format!("{}/agent/mint", bases[0]))
        .header("x-forwarded-for", "203.0.113.8")
        .json(&json!({}))
        .send()
        .await
        .expect("mint");
    assert_eq!(resp.status().as_u16(), 200);
}

/// `initialize` with `token` as the bearer on `base`: the session id and protocol version.
async fn mcp_initialize(base: &str, token: &str) -> (String, String) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fleet_limits", "version": "1"},
    }});
    let resp = reqwest::Client::new()
        .post(format!("{base}/agent/mcp"))
        .headers(mcp_headers(None, None))
        .bearer_auth(token)
        .body(init.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(resp.status().as_u16(), 200, "initialize on {base}");
    let id = resp.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let result = jsonrpc_result(&resp.bytes().await.expect("body"));
    let version = result["protocolVersion"]
        .as_str()
        .expect("version")
        .to_owned();
    (id, version)
}

/// `tools/call get_state` on MCP session `id` at `base`: the status, and the state.
async fn mcp_get_state(base: &str, token: &str, id: &str, version: &str) -> (u16, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "get_state", "arguments": {},
    }});
    let resp = reqwest::Client::new()
        .post(format!("{base}/agent/mcp"))
        .headers(mcp_headers(Some(id), Some(version)))
        .bearer_auth(token)
        .body(call.to_string())
        .send()
        .await
        .expect("tools/call");
    let status = resp.status().as_u16();
    let body = resp.bytes().await.expect("body");
    if status != 200 {
        return (status, Value::Null);
    }
    (status, jsonrpc_result(&body))
}

/// MCP sessions per token: one token initializing on every replica in turn holds at most
/// `MCP_PER_TOKEN` live sessions in the fleet; a session minted on one replica is served on
/// another.
async fn mcp_sessions(bases: &[String; 3]) {
    let token = mint_token(&bases[1]).await;
    let mut sessions = Vec::new();
    for i in 0..(3 * MCP_PER_TOKEN) {
        let base = &bases[i % 3];
        let (id, version) = mcp_initialize(base, &token).await;
        sessions.push((i % 3, id, version));
    }
    // Each replica ends the sessions another deleted before admitting its next request; the
    // announcements travel by NOTIFY, so a few milliseconds.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut live = Vec::new();
    for (replica, id, version) in &sessions {
        match mcp_get_state(&bases[*replica], &token, id, version).await {
            (200, _) => live.push((*replica, id.clone(), version.clone())),
            (404, _) => {}
            (other, _) => panic!("get_state answered {other}"),
        }
    }
    eprintln!(
        "MCP sessions per token {MCP_PER_TOKEN}: {} of {} live",
        live.len(),
        sessions.len()
    );
    assert!(
        live.len() * 10 <= MCP_PER_TOKEN * 12,
        "{} of {} sessions of one token are live over 3 replicas, for {MCP_PER_TOKEN} per token",
        live.len(),
        sessions.len()
    );
    let newest = sessions.last().expect("sessions");
    assert!(
        live.iter().any(|(_, id, _)| *id == newest.1),
        "the newest session is live"
    );

    // The newest session, minted on one replica, is served by the next one.
    let (replica, id, version) = newest;
    let other = &bases[(replica + 1) % 3];
    let (status, result) = mcp_get_state(other, &token, id, version).await;
    assert_eq!(
        status, 200,
        "a session minted on one replica is served on another"
    );
    assert_ne!(result["isError"], true, "{result}");
    assert!(result.to_string().contains("count"), "{result}");
    // And still by its own.
    let (status, _) = mcp_get_state(&bases[*replica], &token, id, version).await;
    assert_eq!(status, 200);
}

/// The shared buckets unreadable (the lease function gone, the rest of the database up): calls
/// are refused with a clear error, never let through; back, they are served again.
async fn fails_closed(bases: &[String; 3], url: &str) {
    let token = mint_token(&bases[2]).await;
    let admin = sqlx::PgPool::connect(url).await.expect("admin pool");
    let rename = |from: &str, to: &str| {
        format!(
            "ALTER FUNCTION {from}(text, double precision, double precision, double precision) \
             RENAME TO {to}"
        )
    };
    sqlx::query(&rename("agent_rate_lease", "agent_rate_lease_away"))
        .execute(&admin)
        .await
        .expect("rename");
    for base in bases {
        let (status, body) = agent_tests::process::lap(base, &token, "/observe", json!({})).await;
        assert_eq!(status, 500, "{body}");
        let detail = body["error"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("rate limit could not be checked"), "{body}");
        let resp = reqwest::Client::new()
            .post(format!("{base}/agent/mint"))
            .header("x-forwarded-for", "203.0.113.9")
            .json(&json!({}))
            .send()
            .await
            .expect("mint");
        assert_eq!(resp.status().as_u16(), 500, "a mint is refused too");
    }
    sqlx::query(&rename("agent_rate_lease_away", "agent_rate_lease"))
        .execute(&admin)
        .await
        .expect("rename back");
    let (status, body) = agent_tests::process::lap(&bases[0], &token, "/observe", json!({})).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_hold_one_set_of_limits() {
    let pg = PgServer::start();
    let dir = TempDir::new("fleet-limits");
    let replicas = fleet(&pg.url(), &dir);
    let bases = replicas.each_ref().map(|r| r.base.clone());
    lap_rate_limit(&bases).await;
    anonymous_mints(&bases).await;
    mcp_sessions(&bases).await;
    fails_closed(&bases, &pg.url()).await;
}
