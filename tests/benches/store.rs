//! Durable-session benchmarks (`cargo bench -p agent-tests --bench store`):
//!
//! - `message/{memory,sqlite,postgres}`: one LAP `/message` (`inc`, `waitFor: idle`) over
//!   loopback HTTP on one session, with sessions and tokens in memory, in a SQLite file, and
//!   in a PostgreSQL server the bench starts (`initdb` in a temporary directory); in one run,
//!   so the ratios compare like with like;
//! - `toggle/{sqlite,postgres}/{10,1000,10000,50000}`: one `toggle` (`waitFor: idle`) of
//!   `examples/todo` on a session holding that many todos, stored in SQLite and in
//!   PostgreSQL: what a commit costs as the state grows (`docs/stores.md` §The commit log);
//! - `bulk_add/{sqlite,postgres}/500`: one `bulkAdd` of 500 todos (`waitFor: idle`) on a
//!   fresh `examples/todo` session (minted outside the timing): one large commit;
//! - `burst/{sqlite,postgres}/16`: one `inc` (`waitFor: idle`) on each of 16 sessions at once:
//!   concurrent writers sharing the store (the SQLite writer's queue and batching);
//! - `restart_first_answer_10k`: with 10,000 sessions stored in SQLite, opening the store,
//!   building the host and answering the first call for one session (its state reloaded);
//! - before those, the resident memory of a process holding 100,000 stored sessions of which
//!   1,000 are loaded (printed as `memory: …`; not with `STORE_BENCH_NO_MEMORY=1`).

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_examples::todo::TodoApp;
use agent_tests::postgres::PgServer;
use agent_tests::resident::resident_bytes;
use agent_tests::temp::TempDir;
use agent_tests::TestServer;
use agent_tests::{bench_runtime, host_on};
use criterion::{criterion_group, BatchSize, Criterion};
use serde_json::json;
use tea_agent_runtime::store::{SessionRecord, Stores};
use tea_agent_runtime::{config::HostConfig, Host};

/// A SQLite file in a fresh directory, removed with the [`TempDir`].
fn temp_db(name: &str) -> (TempDir, String) {
    let dir = TempDir::new(&format!("bench-{name}"));
    let path = dir.file("bench.db");
    (dir, path)
}

async fn server_on(stores: Option<&Stores>) -> TestServer<Counter> {
    let mut builder = TestServer::builder(Counter).rate_limit("1000000/second");
    if let Some(s) = stores {
        builder = builder.stores(s);
    }
    builder.start().await
}

async fn todo_on(stores: &Stores) -> TestServer<TodoApp> {
    let app = TodoApp {
        save_delay: Duration::ZERO,
        ..TodoApp::default()
    };
    TestServer::builder(app)
        .rate_limit("1000000/second")
        .stores(stores)
        .start()
        .await
}

/// `todo_on` for a bench that mints a session per iteration: the session caps out of the way.
async fn fresh_sessions_on(stores: &Stores) -> TestServer<TodoApp> {
    let app = TodoApp {
        save_delay: Duration::ZERO,
        ..TodoApp::default()
    };
    TestServer::builder(app)
        .rate_limit("1000000/second")
        .config(|c| {
            c.max_sessions = 1_000_000;
            c.max_sessions_per_owner = 1_000_000;
        })
        .stores(stores)
        .start()
        .await
}

/// Sizes of the todo lists `toggle` is measured on.
const TODOS: [usize; 4] = [10, 1_000, 10_000, 50_000];

/// Adds todos to the session of `token` until it holds `n` (in bulks under the body cap).
async fn grow(server: &TestServer<TodoApp>, token: &str, held: &mut usize, n: usize) {
    while *held < n {
        let bulk = (n - *held).min(2_000);
        let todos: Vec<_> = (0..bulk)
            .map(|i| json!({"title": format!("todo number {}", *held + i)}))
            .collect();
        let body = json!({"msg": {"type": "bulkAdd", "todos": todos}, "waitFor": "idle"});
        let a = server.lap(token, "/message", &body).await;
        assert_eq!(a.status, 200, "{:?}", a.body);
        *held += bulk;
    }
}

fn toggle(c: &mut Criterion) {
    let rt = bench_runtime();
    let pg = PgServer::start();
    let (_dir, path) = temp_db("toggle");
    let targets: Vec<(&str, TestServer<TodoApp>)> = rt.block_on(async {
        let sqlite = Stores::open(&path).await.expect("sqlite");
        let postgres = Stores::open(&pg.url()).await.expect("postgres");
        vec![
            ("sqlite", todo_on(&sqlite).await),
            ("postgres", todo_on(&postgres).await),
        ]
    });
    let mut group = c.benchmark_group("toggle");
    group.measurement_time(Duration::from_secs(4));
    group.sample_size(20);
    for (name, server) in &targets {
        let minted = rt.block_on(server.mint("bench", None));
        // The app starts with two todos.
        let mut held = 2;
        let body = json!({"msg": {"type": "toggle", "id": "t1"}, "waitFor": "idle"});
        for n in TODOS {
            rt.block_on(grow(server, &minted.token, &mut held, n));
            group.bench_function(format!("{name}/{n}"), |b| {
                b.iter(|| {
                    rt.block_on(async {
                        let a = server.lap(&minted.token, "/message", &body).await;
                        assert_eq!(a.status, 200, "{:?}", a.body);
                    })
                })
            });
        }
    }
    group.finish();
    drop(targets);
}

fn bulk_add(c: &mut Criterion) {
    let rt = bench_runtime();
    let pg = PgServer::start();
    let (_dir, path) = temp_db("bulk_add");
    let targets: Vec<(&str, TestServer<TodoApp>)> = rt.block_on(async {
        let sqlite = Stores::open(&path).await.expect("sqlite");
        let postgres = Stores::open(&pg.url()).await.expect("postgres");
        vec![
            ("sqlite", fresh_sessions_on(&sqlite).await),
            ("postgres", fresh_sessions_on(&postgres).await),
        ]
    });
    let todos: Vec<_> = (0..500)
        .map(|i| json!({"title": format!("todo number {i}")}))
        .collect();
    let body = json!({"msg": {"type": "bulkAdd", "todos": todos}, "waitFor": "idle"});
    let mut group = c.benchmark_group("bulk_add");
    group.measurement_time(Duration::from_secs(4));
    group.sample_size(20);
    for (name, server) in &targets {
        group.bench_function(format!("{name}/500"), |b| {
            b.iter_batched(
                || rt.block_on(server.mint("bench", None)).token,
                |token| {
                    rt.block_on(async {
                        let a = server.lap(&token, "/message", &body).await;
                        assert_eq!(a.status, 200, "{:?}", a.body);
                    })
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
    drop(targets);
}

/// Sessions written at once by `burst`.
const BURST: usize = 16;

fn burst(c: &mut Criterion) {
    let rt = bench_runtime();
    let pg = PgServer::start();
    let (_dir, path) = temp_db("burst");
    let targets: Vec<(&str, TestServer<Counter>)> = rt.block_on(async {
        let sqlite = Stores::open(&path).await.expect("sqlite");
        let postgres = Stores::open(&pg.url()).await.expect("postgres");
        vec![
            ("sqlite", server_on(Some(&sqlite)).await),
            ("postgres", server_on(Some(&postgres)).await),
        ]
    });
    let mut group = c.benchmark_group("burst");
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(30);
    let body = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
    for (name, server) in &targets {
        let tokens: Vec<String> = rt.block_on(async {
            let mut tokens = Vec::with_capacity(BURST);
            for _ in 0..BURST {
                tokens.push(server.mint("bench", None).await.token);
            }
            tokens
        });
        group.bench_function(format!("{name}/{BURST}"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let answers = futures::future::join_all(
                        tokens.iter().map(|t| server.lap(t, "/message", &body)),
                    )
                    .await;
                    for a in answers {
                        assert_eq!(a.status, 200, "{:?}", a.body);
                    }
                })
            })
        });
    }
    group.finish();
    drop(targets);
}

fn message(c: &mut Criterion) {
    let rt = bench_runtime();
    let pg = PgServer::start();
    let (_dir, path) = temp_db("message");
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
    let rt = bench_runtime();
    let (_dir, path) = temp_db("restart");
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
                let host = host_on(Counter, &stores, HostConfig::default());
                let session = host.load_session(&id).await.expect("stored");
                assert_eq!(session.state()["count"], 7);
            })
        })
    });
}

/// 100,000 stored sessions, 1,000 loaded: the process's resident memory.
fn memory_report() {
    let rt = bench_runtime();
    let (_dir, path) = temp_db("memory");
    rt.block_on(async {
        let hash = Host::new(Counter)
            .expect("host")
            .catalog()
            .schema_hash()
            .to_owned();
        let stores = Stores::open(&path).await.expect("sqlite");
        let ids = fill(&stores, 100_000, &hash).await;
        let host = host_on(Counter, &stores, HostConfig::default());
        let before = resident_bytes(None) / 1024;
        let mut held = Vec::new();
        for id in ids.iter().step_by(100) {
            held.push(host.load_session(id).await.expect("stored"));
        }
        let after = resident_bytes(None) / 1024;
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
}

criterion_group!(benches, message, toggle, bulk_add, burst, restart);

fn main() {
    // `STORE_BENCH_ONLY_TOGGLE=1`: the toggle figures alone.
    if std::env::var_os("STORE_BENCH_ONLY_TOGGLE").is_some() {
        let mut c = Criterion::default().configure_from_args();
        toggle(&mut c);
        c.final_summary();
        return;
    }
    // `STORE_BENCH_NO_MEMORY=1`: without the memory report (it fills 100,000 sessions first).
    if std::env::var_os("STORE_BENCH_NO_MEMORY").is_none() {
        memory_report();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
