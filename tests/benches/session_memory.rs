//! Where a big session's memory goes (`cargo bench -p agent-tests --bench session_memory`;
//! issue 23, `docs/stores.md` §Memory):
//!
//! - the parts, measured with a counting allocator in this process: the typed state of
//!   `examples/todo` holding 60,000 todos, its JSON text, one `serde_json::Value` tree of it,
//!   its todos as one shared JSON text each (what a compact tree would hold),
//!   and a whole session holding it (the todos sent as three typed `bulkAdd`s of 20,000 on a
//!   host without HTTP, in memory and on a SQLite file): what stays allocated and the peak;
//! - the whole process: the resident size (`VmRSS`) of the todo example as its own process
//!   (the test crate's `todo-server`, default store: a SQLite file) before and after the same
//!   60,000 todos arrive over LAP as three `bulkAdd`s of 20,000 (one of 60,000 is over the
//!   1 MiB body limit).
//!
//! Each figure is also given as a multiple of the state's JSON size.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use agent_examples::todo::{Msg, NewTodo, State, TodoApp};
use agent_tests::process::ServerProcess;
use agent_tests::resident::resident_bytes;
use agent_tests::temp::TempDir;
use agent_tests::{bench_runtime, host_on};
use serde_json::{json, Value};
use tea_agent_runtime::security::TracingAuditSink;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::tea_agent_schema::protocol::WaitFor;
use tea_agent_runtime::{config::HostConfig, Host};

/// The system allocator, counting the bytes allocated now and the most ever at once.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counters move.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as isize);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size as isize - layout.size() as isize);
        System.realloc(ptr, layout, new_size)
    }
}

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: f64 = 1024.0 * 1024.0;
const TODOS: usize = 60_000;
const BATCH: usize = 20_000;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a peak measurement from the bytes allocated now.
fn reset_peak() -> isize {
    let now = live();
    PEAK.store(now, Ordering::Relaxed);
    now
}

fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}

/// The bytes `make` leaves allocated, with what it made.
fn allocated_by<T>(make: impl FnOnce() -> T) -> (T, isize) {
    let before = live();
    let made = make();
    (made, live() - before)
}

fn report(label: &str, bytes: isize, state_bytes: usize) {
    println!(
        "  {label:<44} {:>8.1} MiB  {:>5.1}× the state",
        bytes as f64 / MIB,
        bytes as f64 / state_bytes as f64
    );
}

fn titles(round: usize, n: usize) -> Vec<NewTodo> {
    (0..n)
        .map(|i| NewTodo {
            title: format!("todo number {i} of round {round}"),
            priority: None,
        })
        .collect()
}

/// A session of a host (in memory, or on the SQLite file `db`) given the 60,000 todos as
/// typed messages: the bytes it keeps and its peak, over what was allocated before.
async fn session_cost(db: Option<&str>) -> (isize, isize, usize) {
    let config = HostConfig::default();
    let (host, _stores) = match db {
        None => (
            Host::with_config(TodoApp::default(), config, Arc::new(TracingAuditSink))
                .expect("host"),
            None,
        ),
        Some(path) => {
            let stores = Stores::open(path).await.expect("store");
            (host_on(TodoApp::default(), &stores, config), Some(stores))
        }
    };
    let session = host.create_session(Some("bench".into())).expect("session");
    let mut opts = DispatchOptions::default();
    opts.wait_for = WaitFor::Idle;
    let before = reset_peak();
    for round in 0..TODOS / BATCH {
        let todos = titles(round, BATCH);
        session
            .dispatch_msg(Msg::BulkAdd { todos }, opts)
            .await
            .expect("bulkAdd");
    }
    // The save effect of the last batch commits once more.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    session.stored().await;
    let kept = live() - before;
    let top = peak() - before;
    let state_bytes = session.with_state(|s| serde_json::to_string(s).expect("json").len());
    (kept, top, state_bytes)
}

fn parts() {
    let rt = bench_runtime();
    println!("the parts, {TODOS} todos (allocated bytes):");
    // The state as `bulkAdd` leaves it, built here to weigh its parts one by one.
    let state: State = {
        let mut s = serde_json::from_value::<State>(json!({
            "todos": [], "filter": {"kind": "all"}, "save": "saved", "saves": 0,
            "nextId": 1, "apiKey": "sk"
        }))
        .expect("state");
        for (i, t) in (0..TODOS / BATCH)
            .flat_map(|round| titles(round, BATCH))
            .enumerate()
        {
            s.todos.push(
                serde_json::from_value(json!({
                    "id": format!("t{}", i + 1), "title": t.title, "done": false,
                    "priority": "normal", "details": {"notes": null, "tags": []}
                }))
                .expect("todo"),
            );
        }
        s
    };
    let (text, text_bytes) = allocated_by(|| serde_json::to_string(&state).expect("json"));
    let n = text.len();
    report("JSON text of the state", text_bytes, n);
    let (typed, typed_bytes) = allocated_by(|| state.clone());
    report("typed state (State)", typed_bytes, n);
    let (tree, tree_bytes) = allocated_by(|| serde_json::to_value(&typed).expect("value"));
    report("one serde_json::Value tree of it", tree_bytes, n);
    // A compact tree would hold each element of a tracked vector as its JSON text.
    let (texts, texts_bytes) = allocated_by(|| {
        typed
            .todos
            .iter()
            .map(|t| Arc::<str>::from(serde_json::to_string(t).expect("todo")))
            .collect::<Vec<_>>()
    });
    report("the todos as one Arc<str> of JSON each", texts_bytes, n);
    drop((texts, tree, typed, text, state));

    for (label, db) in [("in memory", None), ("on SQLite", Some("sqlite"))] {
        let dir = TempDir::new("memory-parts");
        let path = dir.file("bench.db");
        let (kept, top, state_bytes) = rt.block_on(session_cost(db.map(|_| path.as_str())));
        report(&format!("a session, {label}: kept"), kept, state_bytes);
        report(&format!("a session, {label}: peak"), top, state_bytes);
    }
}

fn rss_mib(pid: u32) -> f64 {
    resident_bytes(Some(pid)) as f64 / MIB
}

async fn post(http: &reqwest::Client, url: String, token: Option<&str>, body: &Value) -> Value {
    let mut req = http.post(url).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("request");
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.json().await.expect("json")
}

/// The resident size of a todo server process before and after the 60,000 todos arrive in
/// `batch`es, and the state's JSON size.
async fn process_growth(batch: usize) -> (f64, f64, usize) {
    let dir = TempDir::new("memory-process");
    let db = dir.file("todo.db");
    let server = ServerProcess::start(
        &PathBuf::from(env!("CARGO_BIN_EXE_todo-server")),
        &["--db", &db, "--rate-limit", "1000000/second"],
    );
    let http = reqwest::Client::new();
    let minted = post(
        &http,
        format!("{}/agent/mint", server.base),
        None,
        &json!({}),
    )
    .await;
    let token = minted["token"].as_str().expect("token").to_owned();
    let lap = |tail: &str| format!("{}/agent/lap/v1{tail}", server.base);
    // One small commit first, so the figure before counts a warmed-up server.
    post(
        &http,
        lap("/message"),
        Some(&token),
        &json!({"msg": {"type": "add", "title": "first"}, "waitFor": "idle"}),
    )
    .await;
    let before = rss_mib(server.pid());
    for round in 0..TODOS / batch {
        let todos: Vec<Value> = titles(round, batch)
            .into_iter()
            .map(|t| json!({"title": t.title}))
            .collect();
        let body = json!({"msg": {"type": "bulkAdd", "todos": todos}, "waitFor": "idle"});
        let answer = post(&http, lap("/message"), Some(&token), &body).await;
        assert_eq!(answer["status"], "dispatched", "{answer}");
    }
    // The save effect's commit, and the release a second after the last big commit.
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    let after = rss_mib(server.pid());
    let state = post(&http, lap("/state"), Some(&token), &json!({})).await;
    let state_bytes = state["state"].to_string().len();
    server.kill();
    (before, after, state_bytes)
}

fn process() {
    let rt = bench_runtime();
    println!("the todo server's process (VmRSS), default store (SQLite):");
    let (before, after, state_bytes) = rt.block_on(process_growth(BATCH));
    println!("  {TODOS} todos in bulkAdds of {BATCH}: {before:.0} → {after:.0} MiB");
    report("growth", ((after - before) * MIB) as isize, state_bytes);
}

fn main() {
    parts();
    process();
}
