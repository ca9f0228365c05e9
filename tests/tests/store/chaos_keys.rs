//! Exactly once across crashes and replicas (`docs/stores.md` §Exactly once): three counter
//! replicas (real processes) on a real PostgreSQL; agents send `inc`s, each with its own
//! `idempotencyKey`, to random replicas, and retry a call that got no answer (or a 5xx) with
//! the same key on another replica; meanwhile a random replica is killed with SIGKILL and
//! started again, over and over. The final count is the number of keys: each applied once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tests::browser;
use agent_tests::counter_server;
use agent_tests::postgres::PgServer;
use agent_tests::process::{mint, ServerProcess};
use serde_json::json;

const REPLICAS: usize = 3;
const AGENTS: usize = 8;
/// Keys each agent sends at least; it goes on until the last kill is over.
const MIN_KEYS_PER_AGENT: usize = 40;
const KILLS: usize = 8;

fn start(url: &str) -> ServerProcess {
    counter_server!()
        .args(["--db", url, "--rate-limit", "1000000/second"])
        .start()
}

/// A cheap pseudo-random number (no extra dependency): good enough to pick replicas.
fn pick(n: usize, salt: u64) -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    ((nanos ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % n as u64) as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_incs_apply_exactly_once_while_replicas_are_killed() {
    let pg = PgServer::start();
    let url = pg.url();
    let servers: Vec<ServerProcess> = (0..REPLICAS).map(|_| start(&url)).collect();
    let bases: Arc<Mutex<Vec<String>>> =
        Arc::new(Mutex::new(servers.iter().map(|s| s.base.clone()).collect()));
    let servers = Arc::new(Mutex::new(
        servers.into_iter().map(Some).collect::<Vec<_>>(),
    ));

    // One session, one token per agent.
    let owner = browser();
    let base0 = bases.lock().unwrap()[0].clone();
    let minted = mint(&owner, &base0, json!({})).await;
    let session = minted["sessionId"].as_str().expect("session").to_owned();
    let mut tokens = Vec::new();
    for _ in 0..AGENTS {
        let m = mint(&owner, &base0, json!({"session": session})).await;
        tokens.push(m["token"].as_str().expect("token").to_owned());
    }

    let retries = Arc::new(AtomicU64::new(0));
    let (killed_all, killing) = tokio::sync::watch::channel(false);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut agents = Vec::new();
    for (a, token) in tokens.iter().cloned().enumerate() {
        let bases = bases.clone();
        let retries = retries.clone();
        let client = client.clone();
        let killing = killing.clone();
        agents.push(tokio::spawn(async move {
            let mut k = 0;
            // Until the killer is done (or gone: a failed restart ends it early).
            while k < MIN_KEYS_PER_AGENT || !(*killing.borrow() || killing.has_changed().is_err()) {
                k += 1;
                let key = format!("agent{a}-key{k}");
                let body =
                    json!({"msg": {"type": "inc"}, "idempotencyKey": key, "waitFor": "idle"});
                let mut attempt = 0u64;
                loop {
                    let base = {
                        let bases = bases.lock().unwrap();
                        bases[pick(bases.len(), attempt + (a * 1000 + k) as u64)].clone()
                    };
                    let r = client
                        .post(format!("{base}/agent/lap/v1/message"))
                        .bearer_auth(&token)
                        .json(&body)
                        .send()
                        .await;
                    let status = match r {
                        Ok(r) => r.status().as_u16(),
                        Err(_) => 0,
                    };
                    if status == 200 {
                        break;
                    }
                    assert!(
                        status == 0 || status >= 500,
                        "{key}: a {status} is not a crash"
                    );
                    attempt += 1;
                    retries.fetch_add(1, Ordering::Relaxed);
                    assert!(attempt < 200, "{key}: no answer after 200 attempts");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            k
        }));
    }

    // The killer: a random replica every 700 ms, started again at once (a new port).
    let killer = {
        let servers = servers.clone();
        let bases = bases.clone();
        let url = url.clone();
        tokio::spawn(async move {
            for i in 0..KILLS {
                tokio::time::sleep(Duration::from_millis(700)).await;
                let victim = pick(REPLICAS, i as u64);
                let old = servers.lock().unwrap()[victim].take();
                if let Some(old) = old {
                    old.kill();
                }
                let url = url.clone();
                let fresh = tokio::task::spawn_blocking(move || start(&url))
                    .await
                    .expect("restart");
                bases.lock().unwrap()[victim] = fresh.base.clone();
                servers.lock().unwrap()[victim] = Some(fresh);
            }
            killed_all.send_replace(true);
            KILLS
        })
    };

    let mut keys = 0;
    for agent in agents {
        keys += agent.await.expect("agent");
    }
    let kills = killer.await.expect("killer");

    let (_, state) = agent_tests::stored_session(&url, &session).await;
    let retried = retries.load(Ordering::Relaxed);
    eprintln!(
        "{keys} keys, {kills} kills, {retried} retries, count {}",
        state["count"]
    );
    assert!(retried > 0, "no call was retried: the test proved nothing");
    assert_eq!(
        state["count"].as_i64(),
        Some(keys as i64),
        "each key applied exactly once"
    );
}
