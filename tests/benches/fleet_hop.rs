//! What the fleet's hop costs (issue 50, `docs/pairing.md` §A fleet of replicas): three
//! replicas of the relay example on one PostgreSQL behind `haproxy` (round robin), the counter
//! app paired through the pairing client (its own process), one agent calling in sequence over
//! keep-alive connections. Measured in interleaved rounds, so a slow stretch of a shared
//! machine hits every target alike:
//!
//! - `/state` on the replica holding the socket (relayed to the app) against the same call on
//!   another replica (carried to the holder, then relayed): the difference of their p50 is the
//!   added latency of a forwarded call;
//! - `/message` (`inc`) through the load balancer against the replica holding the socket.
//!
//! `cargo bench -p agent-tests --bench fleet_hop` (`FLEET_BENCH_CALLS` calls per target and
//! round, default 300).

use std::time::{Duration, Instant};

use agent_tests::lb::{mint_paired, Haproxy, RelayFleet};
use agent_tests::paired::AppProcess;
use serde_json::{json, Value};

const ROUNDS: usize = 5;

async fn call(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    tail: &str,
    body: &Value,
) -> Duration {
    let started = Instant::now();
    let resp = http
        .post(format!("{base}/agent/lap/v1{tail}"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("call");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    assert_eq!(status, 200, "{base}{tail}: {text}");
    started.elapsed()
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() {
    let calls: usize = std::env::var("FLEET_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 3, "", "1s");
    let lb = Haproxy::start(&fleet.ports);
    let (token, tid) = mint_paired(&lb.base).await;
    let mut app = AppProcess::start(env!("CARGO_BIN_EXE_paired-counter"), &lb.base, &token);
    app.expect("status Paired").await;
    let pool = sqlx::PgPool::connect(&fleet.pg.url()).await.expect("db");
    let (address,): (String,) =
        sqlx::query_as("SELECT address FROM agent_paired_sockets WHERE tid = $1")
            .bind(&tid)
            .fetch_one(&pool)
            .await
            .expect("lease");
    let held = (0..3).find(|i| fleet.base(*i) == address).expect("holder");
    let other = fleet.base((held + 1) % 3);
    let holder = fleet.base(held);

    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .expect("client");
    let state = json!({});
    let inc = json!({"msg": {"type": "inc"}});
    let targets: [(&str, &str, &str, &Value); 4] = [
        ("/state on the socket's replica", &holder, "/state", &state),
        (
            "/state on another replica (forwarded)",
            &other,
            "/state",
            &state,
        ),
        (
            "/message on the socket's replica",
            &holder,
            "/message",
            &inc,
        ),
        (
            "/message through the load balancer",
            &lb.base,
            "/message",
            &inc,
        ),
    ];
    for (_, base, tail, body) in &targets {
        for _ in 0..50 {
            call(&http, base, &token, tail, body).await;
        }
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); targets.len()];
    for _ in 0..ROUNDS {
        for (i, (_, base, tail, body)) in targets.iter().enumerate() {
            for _ in 0..calls {
                samples[i].push(call(&http, base, &token, tail, body).await);
            }
        }
    }
    let mut p50 = Vec::new();
    for (i, (name, ..)) in targets.iter().enumerate() {
        let median = percentile(&mut samples[i], 0.5);
        let p90 = percentile(&mut samples[i], 0.9);
        p50.push(median);
        println!(
            "{name}: p50 {:.0} µs, p90 {:.0} µs ({} calls)",
            micros(median),
            micros(p90),
            samples[i].len()
        );
    }
    println!(
        "added p50 of a forwarded call: {:.0} µs (goal: at most 2,000 µs on loopback)",
        micros(p50[1]) - micros(p50[0])
    );
    println!(
        "/message through the load balancer (3 replicas) against the socket's replica direct: \
         {:+.0} µs at p50",
        micros(p50[3]) - micros(p50[2])
    );
    app.say("quit").await;
}
