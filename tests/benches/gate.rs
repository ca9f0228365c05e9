//! The benchmark gate (`cargo bench -p agent-tests --bench gate`; `.ci/bench-gate`, which CI
//! runs; `docs/operations.md` §Benchmark gate): the hot path measured as shares of bare axum in
//! one run, so that a slow or noisy machine moves both sides alike, and each share held above a
//! floor. A share under its floor fails with the figure and the floor.
//!
//! The server is the counter example as `cargo run --example counter -- --memory` starts it
//! (the examples' defaults: transcripts, undo, progress, metrics, tracing spans; only the
//! per-token rate limit is lifted), in this process, on loopback. Each target is loaded by 16
//! keep-alive clients in interleaved slices: bare axum answering the bytes `/observe`
//! answers, LAP `/observe`, LAP `/message` (`inc`, `waitFor: idle`), and MCP `tools/call
//! send_message` with the same message on a 2025-11-25 session.
//!
//! `GATE_ROUNDS` and `GATE_SLICE_MS` set the rounds and the slice length (defaults 6 × 750 ms).

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::example::ExampleWorld;
use agent_tests::load::{
    bare_server, check_lap_sent, env_or, interleaved, mcp_send_message, report, Target, CONCURRENCY,
};
use serde_json::json;

/// A target's floor: the least share of bare axum's rate it may have.
struct Floor {
    name: &'static str,
    share: f64,
}

/// The floors, from the shares measured after the hot path was taken back (issue 49: the
/// actions serialized once per list), less the spread of the runs and a margin for a busy
/// machine: `docs/operations.md` §Benchmark gate gives the figures.
const FLOORS: [Floor; 3] = [
    Floor {
        name: "/observe",
        share: 0.38,
    },
    Floor {
        name: "/message",
        share: 0.28,
    },
    Floor {
        name: "MCP send_message",
        share: 0.24,
    },
];

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let failures = rt.block_on(async {
        // Its token minted as the console on this machine mints it (the anonymous identity).
        let world = ExampleWorld::start_with(
            Counter,
            &["--memory", "--port", "0", "--rate-limit", "1000000000/second"],
        )
        .await;
        let (base, token) = (world.example.base_url(), world.token.clone());
        let lap = |route: &str| format!("{base}/agent/lap/v1/{route}");
        let sample = reqwest::Client::new()
            .post(lap("observe"))
            .bearer_auth(&token)
            .json(&json!({}))
            .send()
            .await
            .expect("observe")
            .text()
            .await
            .expect("observe answer");
        let inc = json!({"msg": {"type": "inc"}, "waitFor": "idle"}).to_string();
        let targets = [
            Target::new(bare_server(Arc::new(sample)).await, None, "{}".into()).await,
            Target::new(lap("observe"), Some(&token), "{}".into()).await,
            Target::checked(lap("message"), Some(&token), inc, check_lap_sent).await,
            mcp_send_message(format!("{base}/agent/mcp"), &token).await,
        ]
        .map(Arc::new);
        let slice = Duration::from_millis(env_or("GATE_SLICE_MS", 750));
        let rounds = env_or("GATE_ROUNDS", 6);
        println!(
            "gate: the counter example's defaults, {CONCURRENCY} clients, {rounds} interleaved rounds of {slice:?} per target"
        );
        let mut runs = interleaved(&targets, slice, rounds).await;
        let [bare, rest @ ..] = &mut runs;
        report("bare axum (the bytes of /observe)", bare);
        let mut failures = Vec::new();
        for (floor, run) in FLOORS.iter().zip(rest.iter_mut()) {
            report(floor.name, run);
            let share = run.rps() / bare.rps();
            let verdict = if share >= floor.share { "ok" } else { "BELOW" };
            println!(
                "  {:<18} {:>5.1}% of bare axum (floor {:.0}%) {verdict}",
                floor.name,
                share * 100.0,
                floor.share * 100.0
            );
            if share < floor.share {
                failures.push(format!(
                    "{} is {:.1}% of bare axum's rate; the floor is {:.0}%",
                    floor.name,
                    share * 100.0,
                    floor.share * 100.0
                ));
            }
        }
        failures
    });
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("gate: {failure}");
        }
        std::process::exit(1);
    }
    println!("gate: every share above its floor");
}
