//! HTTP benchmark of the LAP surface on loopback (`cargo bench -p agent-tests --bench lap_http`):
//! requests/second and p50/p99 latency of `/observe` and `/message` (waitFor idle) on one
//! session, against a bare axum handler returning the same bytes in the same run; MCP
//! `tools/call send_message` over Streamable HTTP on an initialized MCP session bound to the
//! same token, against LAP `/message`, each response read to its end (JSON or an SSE stream),
//! with and without `TCP_NODELAY` on the server's sockets; sequential calls on one connection
//! of LAP `/message` against MCP `send_message` on both protocol generations and the action
//! tool `do_inc` (every `/message` and MCP answer checked alike: parsed during the warm-up,
//! scanned after); and the resident memory of idle sessions.
//!
//! `LAP_HTTP_SLICE_MS` and `LAP_HTTP_ROUNDS` override the length and number of the slices;
//! `LAP_HTTP_ONLY=sequential` runs the sequential comparison alone (to profile it).

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::load::{
    bare_server, check_lap_sent, env_or, interleaved, mcp_send_message, mcp_stateless_call, report,
    rss_bytes, serve, Target, CONCURRENCY,
};
use agent_tests::TestServer;
use serde_json::json;

/// Each target is loaded for `ROUNDS` slices of `SLICE_MS`, the targets taking turns, so a slow
/// stretch of a shared machine hits all of them alike instead of whichever ran at the time.
const ROUNDS: u64 = 6;
const SLICE_MS: u64 = 750;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Room for the 10,000 idle sessions of the memory measurement.
        let t = TestServer::builder(Counter)
            .config(|c| {
                c.max_sessions = 20_000;
                c.max_sessions_per_owner = 20_000;
            })
            .rate_limit("1000000000/second")
            .start()
            .await;
        let m = t.mint("bench", None).await;
        let observe_url = format!("{}/agent/lap/v1/observe", t.base);
        let sample = t.lap(&m.token, "/observe", &json!({})).await.body.to_string();
        let bare_url = bare_server(Arc::new(sample.clone())).await;

        // The same server without TCP_NODELAY on its sockets, for the MCP comparison.
        let delayed_base = format!("http://{}", serve(t.server.router(), false).await);
        let slice = Duration::from_millis(env_or("LAP_HTTP_SLICE_MS", SLICE_MS));
        let rounds = env_or("LAP_HTTP_ROUNDS", ROUNDS);

        let only_sequential = std::env::var("LAP_HTTP_ONLY").is_ok_and(|v| v == "sequential");
        if !only_sequential {
        println!(
            "LAP over loopback, {CONCURRENCY} concurrent clients, {rounds} interleaved rounds of {slice:?} per target"
        );
        let targets = [
            Target::new(bare_url, None, "{}".into()).await,
            Target::new(observe_url, Some(&m.token), "{}".into()).await,
            Target::checked(
                format!("{}/agent/lap/v1/message", t.base),
                Some(&m.token),
                json!({"msg":{"type":"inc"},"waitFor":"idle"}).to_string(),
                check_lap_sent,
            )
            .await,
            mcp_send_message(format!("{}/agent/mcp", t.base), &m.token).await,
            mcp_send_message(format!("{delayed_base}/agent/mcp"), &m.token).await,
        ]
        .map(Arc::new);
        let mut runs = interleaved(&targets, slice, rounds).await;
        let [bare, observe, message, mcp, mcp_delayed] = &mut runs;
        report("bare axum (same bytes as observe)", bare);
        report("/observe", observe);
        report("/message (waitFor idle)", message);
        report("MCP send_message (waitFor idle)", mcp);
        report("MCP send_message, no TCP_NODELAY", mcp_delayed);
        println!(
            "  relative to bare: /observe {:.0}% (target >= 75%), /message {:.0}% (target >= 60%)",
            observe.rps() / bare.rps() * 100.0,
            message.rps() / bare.rps() * 100.0
        );
        println!(
            "  MCP send_message relative to LAP /message: {:.0}% (target >= 80%); without TCP_NODELAY {:.1}%",
            mcp.rps() / message.rps() * 100.0,
            mcp_delayed.rps() / message.rps() * 100.0
        );

        }

        // Sequential: one client, one connection, one call after the other (issue 21: an MCP
        // call costs at most 1.25× the LAP call of the same operation, on both generations).
        let mcp_url = format!("{}/agent/mcp", t.base);
        let inc = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
        let sequential = [
            Target::checked(
                format!("{}/agent/lap/v1/message", t.base),
                Some(&m.token),
                inc.to_string(),
                check_lap_sent,
            )
            .await,
            mcp_send_message(mcp_url.clone(), &m.token).await,
            mcp_stateless_call(mcp_url.clone(), &m.token, "send_message", inc.clone()).await,
            mcp_stateless_call(mcp_url.clone(), &m.token, "do_inc", json!({})).await,
        ]
        .map(|t| Arc::new(t.sequential()));
        let mut runs = interleaved(&sequential, slice, rounds).await;
        println!("sequential, one connection:");
        let [lap, legacy, stateless, action] = &mut runs;
        report("LAP /message (waitFor idle)", lap);
        report("MCP 2025-11-25 send_message", legacy);
        report("MCP 2026-07-28 send_message", stateless);
        report("MCP 2026-07-28 do_inc", action);
        for (name, run) in [("2025-11-25", &*legacy), ("2026-07-28", &*stateless), ("2026-07-28 do_inc", &*action)] {
            println!(
                "  MCP {name} relative to LAP /message: {:.0}% of the rate (target >= 80%)",
                run.rps() / lap.rps() * 100.0
            );
        }

        if only_sequential {
            return;
        }

        // Memory of idle sessions.
        let n = 10_000;
        let before = rss_bytes();
        let mut sessions = Vec::with_capacity(n);
        for _ in 0..n {
            sessions.push(t.server.host().create_session(Some("mem".into())).unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = rss_bytes();
        let state_bytes = sessions[0].state().to_string().len();
        println!(
            "idle sessions: {n} took {:.1} MB RSS = {:.0} bytes/session (state JSON {state_bytes} bytes; target < 20 KB + state)",
            (after.saturating_sub(before)) as f64 / 1e6,
            (after.saturating_sub(before)) as f64 / n as f64
        );
    });
}
