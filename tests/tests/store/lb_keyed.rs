//! Keyed messages exactly once across the SIGKILL of a paired socket's replica (issue 50,
//! `docs/pairing.md` §A fleet of replicas): Debian's `haproxy`, round robin, in front of three
//! relay replicas on one PostgreSQL, and the Rust pairing client (`paired-counter`), which
//! answers a repeated `idempotencyKey` with its first answer. An agent sends keyed `inc`s
//! through the load balancer, retrying each key until it is answered 200, while the replica
//! holding the app's socket is killed: a hop that broke before its answer gives the key back
//! instead of storing 503 `paused` as its answer, so the retry reaches the app on its new
//! replica, which applies it if it had not. Every key is answered, and the count is the
//! number of keys: none lost, none applied twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tests::lb::{mint_paired, Haproxy, RelayFleet};
use agent_tests::paired::AppProcess;
use serde_json::json;

use super::fleet_calls::{count, holder_where, PAIRING};

/// `inc` keyed `key` through `base`: the status (0: no answer), whether it was a replay.
async fn keyed_inc(http: &reqwest::Client, base: &str, token: &str, key: &str) -> (u16, bool) {
    let resp = http
        .post(format!("{base}/agent/lap/v1/message"))
        .bearer_auth(token)
        .json(&json!({"msg": {"type": "inc"}, "idempotencyKey": key, "waitFor": "idle"}))
        .timeout(Duration::from_secs(25))
        .send()
        .await;
    match resp {
        Ok(r) => (
            r.status().as_u16(),
            r.headers().get("idempotent-replayed").is_some(),
        ),
        Err(_) => (0, false),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_messages_apply_exactly_once_across_the_sigkill_of_the_sockets_replica() {
    let mut fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 3, PAIRING, "1s");
    let lb = Haproxy::start(&fleet.ports);
    let (token, tid) = mint_paired(&lb.base).await;
    let mut app = AppProcess::start(env!("CARGO_BIN_EXE_paired-counter"), &lb.base, &token);
    app.expect("status Paired").await;
    let held = holder_where(&fleet, &tid, Duration::from_secs(15), |_| true).await;
    let http = reqwest::Client::new();

    // The agent: key after key, each retried (every 200 ms) until answered 200.
    let stop = Arc::new(AtomicBool::new(false));
    let agent = {
        let (base, token, stop, http) =
            (lb.base.clone(), token.clone(), stop.clone(), http.clone());
        tokio::spawn(async move {
            let mut keys = Vec::new();
            let mut retried = 0;
            let mut k = 0;
            while !stop.load(Ordering::SeqCst) {
                let key = format!("x{k}");
                let deadline = Instant::now() + Duration::from_secs(45);
                loop {
                    let (status, _) = keyed_inc(&http, &base, &token, &key).await;
                    if status == 200 {
                        break;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "{key} not answered 200 within 45 s (last {status})"
                    );
                    retried += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                keys.push(key);
                k += 1;
            }
            (keys, retried)
        })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    fleet.kill(held);
    app.expect("status Paired").await;
    let repaired = holder_where(&fleet, &tid, Duration::from_secs(15), |i| i != held).await;
    assert_ne!(repaired, held);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    let (keys, retried) = agent.await.expect("agent");
    let applied = count(&http, &lb.base, &token, Duration::from_secs(20)).await;
    eprintln!(
        "{} keys answered 200 ({retried} retries); the app applied {applied}",
        keys.len()
    );
    assert!(retried > 0, "the kill interrupted no call");
    assert_eq!(applied, keys.len() as i64, "every key applied exactly once");

    // Repeats through every live replica replay, and apply nothing.
    for key in &keys {
        for i in (0..3).filter(|i| *i != held) {
            let (status, replayed) = keyed_inc(&http, &fleet.base(i), &token, key).await;
            assert_eq!((status, replayed), (200, true), "{key} on replica {i}");
        }
    }
    assert_eq!(
        count(&http, &lb.base, &token, Duration::from_secs(20)).await,
        applied
    );
    app.say("quit").await;
}
