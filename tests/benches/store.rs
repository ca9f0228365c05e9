//! Durable-session benchmarks (`cargo bench -p agent-tests --bench store`):
//!
//! - `message/{memory,sqlite,postgres}`: one LAP `/message` (`inc`, `waitFor: idle`) over
//!   loopback HTTP on one session, with sessions and tokens in memory, in a SQLite file, and
//!   in a PostgreSQL server the bench starts (`initdb` in a temporary directory); in one run,
//!   so the ratios compare like with like;
//! - `restart_first_answer_10k`: with 10,000 sessions stored in SQLite, opening the store,
//!   building the host and answering the first call for one session (its state reloaded);
//! - before those, the resident memory of a process holding 100,000 stored sessions of which
//!   1,000 are loaded (printed as `memory: …`).

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_runtime::security::TracingAuditSink;
use agent_runtime::store::{SessionRecord, Stores};
use agent_runtime::{AgentServer, Host, HostConfig};
use agent_tests::postgres::PgServer;
use agent_tests::TestServer;
use criterion::{criterion_group, Criterion};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn temp_db(name: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("agent-bench-{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("bench.db").to_str().expect("utf-8").to_owned();
    (dir, path)
}

async fn server_on(stores: Option<&Stores>) -> TestServer<Counter> {
    let config = HostConfig::default();
    let audit = Arc::new(TracingAuditSink);
    let builder = match stores {
        None => AgentServer::builder(Host::with_config(Counter, config, audit).expect("host")),
        Some(s) => AgentServer::builder(
            Host::with_store(Counter, config, audit, s.sessions.clone()).expect("host"),
        )
        .stores(s),
    };
    let options = agent_runtime::ServerOptions {
        rate_limit: "1000000/second".parse().expect("rate"),
        ..Default::default()
    };
    agent_tests::start(builder.options(options)).await
}

fn message(c: &mut Criterion) {
    let rt = runtime();
    let pg = PgServer::start();
    let (dir, path) = temp_db("message");
    let targets: Vec<(&str, TestServer<Counter>)> = rt.block_on(async {
        let sqlite = Stores::open(&path).await.expect("sqlite");
        let postgres = Stores::open(&pg.url()).await.expect("postgres");
        vec![
            ("memory", server_on(None).await),
            ("sqlite", server_on(Some(&sqlite)).await),
            ("postgres", server_on(Some(&postgres)).await),
        ]
    });
    let mut group = c.benchmark_group("message");
    group.measurement_time(Duration::from_secs(5));
    for (name, server) in &targets {
        let minted = rt.block_on(server.mint("bench", None));
        let body = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
        group.bench_function(*name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let a = server.lap(&minted.token, "/message", &body).await;
                    assert_eq!(a.status, 200, "{:?}", a.body);
                })
            })
        });
    }
    group.finish();
    drop(targets);
    let _ = std::fs::remove_dir_all(dir);
}

async fn fill(stores: &Stores, n: usize, hash: &str) -> Vec<String> {
    let state = serde_json::to_string(&json!({"count": 7, "lastDelete": null, "view": "home"}))
        .expect("json");
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = format!("s{i:06}");
        let record =
            SessionRecord::new(&id, Some(format!("u{}", i % 1000)), 1, state.clone(), hash);
        stores
            .sessions
            .insert_session(record)
            .await
            .expect("insert");
        ids.push(id);
    }
    ids
}

fn restart(c: &mut Criterion) {
    let rt = runtime();
    let (dir, path) = temp_db("restart");
    let hash = Host::new(Counter)
        .expect("host")
        .catalog()
        .schema_hash()
        .to_owned();
    rt.block_on(async {
        let stores = Stores::open(&path).await.expect("sqlite");
        fill(&stores, 10_000, &hash).await;
    });
    let mut n = 0usize;
    c.bench_function("restart_first_answer_10k", |b| {
        b.iter(|| {
            n = (n + 7919) % 10_000;
            let id = format!("s{n:06}");
            rt.block_on(async {
                let stores = Stores::open(&path).await.expect("sqlite");
                let host = Host::with_store(
                    Counter,
                    HostConfig::default(),
                    Arc::new(TracingAuditSink),
                    stores.sessions.clone(),
                )
                .expect("host");
                let session = host.load_session(&id).await.expect("stored");
                assert_eq!(session.state()["count"], 7);
            })
        })
    });
    let _ = std::fs::remove_dir_all(dir);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// 100,000 stored sessions, 1,000 loaded: the process's resident memory.
fn memory_report() {
    let rt = runtime();
    let (dir, path) = temp_db("memory");
    rt.block_on(async {
        let hash = Host::new(Counter)
            .expect("host")
            .catalog()
            .schema_hash()
            .to_owned();
        let stores = Stores::open(&path).await.expect("sqlite");
        let ids = fill(&stores, 100_000, &hash).await;
        let host = Host::with_store(
            Counter,
            HostConfig::default(),
            Arc::new(TracingAuditSink),
            stores.sessions.clone(),
        )
        .expect("host");
        let before = rss_kib();
        let mut held = Vec::new();
        for id in ids.iter().step_by(100) {
            held.push(host.load_session(id).await.expect("stored"));
        }
        let after = rss_kib();
        println!(
            "memory: {} stored sessions, {} loaded: RSS {} KiB before loading, {} KiB after \
             ({} KiB per loaded session)",
            stores.sessions.session_count().await.expect("count"),
            host.session_count(),
            before,
            after,
            after.saturating_sub(before) / held.len().max(1) as u64
        );
    });
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, message, restart);

fn main() {
    memory_report();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
