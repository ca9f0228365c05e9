//! An MCP session of the session generation (2025 revisions: `initialize`, an
//! `Mcp-Session-Id`, answers as SSE or JSON) through a real load balancer without stickiness
//! (issue 50; `docs/mcp.md` §Sessions across replicas): Debian's `haproxy` round robin over
//! three relay replicas on one PostgreSQL, a Rust app paired through it. rmcp's client sends
//! every request of its one session through the load balancer, so consecutive requests land
//! on different replicas: each serves the session from the shared registry (the stored
//! binding), the answers are the app's, and the session goes on after one replica is killed
//! with SIGKILL.

use std::time::Duration;

use agent_tests::lb::{mint_paired, Haproxy, RelayFleet};
use agent_tests::mcp::{call, ok};
use agent_tests::paired::AppProcess;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::json;

use super::fleet_calls::{holder_where, PAIRING};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_legacy_mcp_session_is_served_by_every_replica_behind_a_load_balancer() {
    let mut fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 3, PAIRING, "1s");
    let lb = Haproxy::start(&fleet.ports);
    let (token, tid) = mint_paired(&lb.base).await;
    let mut app = AppProcess::start(env!("CARGO_BIN_EXE_paired-counter"), &lb.base, &token);
    app.expect("status Paired").await;
    let held = holder_where(&fleet, &tid, Duration::from_secs(10), |_| true).await;

    // One session, its bearer bound at `initialize`; re-initializing after a 404 is off, so
    // a replica that did not know the session would fail the calls below.
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", lb.base))
            .auth_header(token.clone());
    config.reinit_on_expired_session = false;
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize through the load balancer");
    let tools = client.peer().list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "send_message"), "{tools:?}");

    // Round robin: six requests are two on every replica.
    for n in 0..6 {
        let sent = ok(&call(
            client.peer(),
            "send_message",
            json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await);
        assert_eq!(sent["status"], "dispatched", "{n}: {sent}");
        let read = ok(&call(client.peer(), "get_state", json!({})).await);
        assert_eq!(read["state"]["count"], n + 1, "{read}");
    }

    // A replica without the socket dies: the load balancer takes it out, the session goes on.
    let victim = (0..3).find(|i| *i != held).expect("another replica");
    fleet.kill(victim);
    for n in 6..9 {
        let sent = ok(&call(
            client.peer(),
            "send_message",
            json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await);
        assert_eq!(sent["status"], "dispatched", "{n}: {sent}");
    }
    let read = ok(&call(client.peer(), "get_state", json!({})).await);
    assert_eq!(read["state"]["count"], 9, "{read}");

    let _ = client.cancel().await;
    app.say("quit").await;
}
