//! Session-level benchmarks of issue 12 (`cargo bench -p tea-agent-runtime --bench snapshot`), on
//! the todo example with 10, 1k, 10k and 50k todos (kept in a `TrackedVec`, so the walk of a
//! commit visits only the chunk of 16 todos the toggle changed):
//!
//! - `toggle/<path>/<n>`: `send_message {"type":"toggle"}` with `waitFor: "idle"`, the answer
//!   (with its `stateDiff` and actions) serialized as LAP sends it. `incremental` is the fast
//!   path; `full` is the same app with an [`App::redact`] override (a no-op), which takes the
//!   full path — the whole state serialized, hooked and diffed at every commit, the cost of
//!   every commit before issue 12 — as the baseline. `stored` is the incremental path on a
//!   host with a [`MemoryStore`]: each commit also walks the stored (unredacted) tree and
//!   writes its patch and its undo record (the inverse, `docs/semantics.md` §12).
//! - `actions/<n>`: `list_actions` on a snapshot whose actions the answer already computed
//!   (kept per snapshot in a compact form and rendered from the variants' templates; the
//!   route gates they need are advanced along each commit's patch, which the `toggle`
//!   figures include).
//! - `observe/<n>`: the `/observe` body after a commit (the snapshot's text made by this first
//!   read) and read again (cached); the snapshot's text alone (`snapshot_text`, what the first
//!   read adds), against `serde_json::to_writer` of the typed state, in a loop and (like
//!   `after_commit`) right after a commit.
//!
//! It also prints the heap bytes of an idle session (a counting allocator), fresh and after
//! one commit, beside the size of its state.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_examples::todo::{Msg, MsgKind, NewTodo, State, TodoApp};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};
use tea_agent_runtime::app::{App, Bindings, EffectContext, EffectError};
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::security::TracingAuditSink;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::MemoryStore;
use tea_agent_runtime::Host;
use tea_agent_runtime::Session;
use tea_agent_schema::protocol::{ObserveResponse, WaitFor};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to `System` unchanged; the counter is only arithmetic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The todo app with a no-op [`App::redact`] override: every commit takes the full path.
struct FullPath(TodoApp);

impl App for FullPath {
    type State = State;
    type Msg = Msg;
    type Effect = <TodoApp as App>::Effect;

    fn name(&self) -> &str {
        self.0.name()
    }
    fn version(&self) -> &str {
        self.0.version()
    }
    fn init(&self) -> (State, Vec<Self::Effect>) {
        self.0.init()
    }
    fn update(&self, state: &mut State, msg: Msg) -> Vec<Self::Effect> {
        self.0.update(state, msg)
    }
    fn run_effect(
        &self,
        effect: Self::Effect,
        ctx: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        self.0.run_effect(effect, ctx)
    }
    fn bindings(&self, state: &State) -> Bindings<MsgKind> {
        self.0.bindings(state)
    }
    fn redact(&self, _state: &mut Value) {}
}

const SIZES: [usize; 4] = [10, 1_000, 10_000, 50_000];

fn app() -> TodoApp {
    TodoApp {
        save_delay: Duration::ZERO,
        ..TodoApp::default()
    }
}

fn idle() -> DispatchOptions {
    {
        let mut o = DispatchOptions::default();
        o.wait_for = WaitFor::Idle;
        o
    }
}

/// A session of `host` holding `n` todos (the two of `init` plus a bulk add), saved.
fn session_with<A: App<State = State, Msg = Msg>>(
    rt: &tokio::runtime::Runtime,
    host: &Host<A>,
    n: usize,
) -> Session<A> {
    let session = host.create_session(None).expect("session");
    let todos = (2..n)
        .map(|i| NewTodo {
            title: format!("todo number {i}"),
            priority: None,
        })
        .collect();
    let mut drained = DispatchOptions::default();
    drained.wait_for = WaitFor::Drained;
    drained.drain_quiet = std::time::Duration::from_millis(20);
    rt.block_on(session.dispatch_msg(Msg::BulkAdd { todos }, drained))
        .expect("bulk add");
    assert_eq!(session.with_state(|s| s.todos.len()), n.max(2));
    session
}

/// One agent `toggle` of the first todo, answered as LAP answers it.
async fn toggle<A: App>(session: &Session<A>) -> usize {
    let msg = json!({"type": "toggle", "id": "t1"});
    let answer = session
        .send_message(&msg, None, idle(), None)
        .await
        .expect("dispatch");
    serde_json::to_string(&answer).expect("answer").len()
}

fn bench_toggle(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let fast = Host::new(app()).expect("host");
    let full = Host::new(FullPath(app())).expect("host");
    let stored = Host::with_store(
        app(),
        HostConfig::default(),
        Arc::new(TracingAuditSink),
        Arc::new(MemoryStore::new()),
    )
    .expect("host");
    let mut group = c.benchmark_group("toggle");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for n in SIZES {
        let s = session_with(&rt, &fast, n);
        let bytes = rt.block_on(toggle(&s));
        println!("toggle answer at {n} todos: {bytes} bytes");
        group.bench_with_input(BenchmarkId::new("incremental", n), &n, |b, _| {
            b.iter(|| rt.block_on(toggle(&s)))
        });
        group.bench_with_input(BenchmarkId::new("actions", n), &n, |b, _| {
            b.iter(|| s.list_actions().expect("actions"))
        });
        rt.block_on(fast.close_session(s.id())).expect("closed");
        let s = session_with(&rt, &stored, n);
        group.bench_with_input(BenchmarkId::new("stored", n), &n, |b, _| {
            b.iter(|| rt.block_on(toggle(&s)))
        });
        rt.block_on(stored.close_session(s.id())).expect("closed");
        let s = session_with(&rt, &full, n);
        group.bench_with_input(BenchmarkId::new("full", n), &n, |b, _| {
            b.iter(|| rt.block_on(toggle(&s)))
        });
        rt.block_on(full.close_session(s.id())).expect("closed");
    }
    group.finish();
}

/// The `/observe` body, as the handler builds it.
fn observe<A: App>(host: &Host<A>, session: &Session<A>) -> String {
    let published = session.published();
    let body = ObserveResponse {
        state: published.json(),
        actions: session.action_list().expect("actions"),
        description: host.description(),
        context: session.context().expect("context"),
        seq: Some(published.seq),
        work: session.running_work(),
    };
    serde_json::to_string(&body).expect("observe")
}

fn bench_observe(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let host = Host::new(app()).expect("host");
    let mut group = c.benchmark_group("observe");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    {
        let n = 10_000;
        let s = session_with(&rt, &host, n);
        println!("observe at {n} todos: {} bytes", observe(&host, &s).len());
        group.bench_with_input(BenchmarkId::new("after_commit", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(toggle(&s));
                    let t0 = Instant::now();
                    std::hint::black_box(observe(&host, &s));
                    spent += t0.elapsed();
                }
                spent
            })
        });
        group.bench_with_input(BenchmarkId::new("cached", n), &n, |b, _| {
            b.iter(|| observe(&host, &s))
        });
        group.bench_with_input(BenchmarkId::new("snapshot_text", n), &n, |b, _| {
            b.iter(|| serde_json::to_string(&s.state()).expect("state").len())
        });
        // The same write as `to_writer`, timed like `after_commit`: right after a commit,
        // into fresh memory.
        group.bench_with_input(BenchmarkId::new("to_writer_after_commit", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(toggle(&s));
                    let t0 = Instant::now();
                    std::hint::black_box(s.with_state(|state| {
                        let mut out = Vec::with_capacity(1 << 20);
                        serde_json::to_writer(&mut out, state).expect("state");
                        out
                    }));
                    spent += t0.elapsed();
                }
                spent
            })
        });
        group.bench_with_input(BenchmarkId::new("to_writer", n), &n, |b, _| {
            b.iter(|| {
                s.with_state(|state| {
                    let mut out = Vec::with_capacity(1 << 20);
                    serde_json::to_writer(&mut out, state).expect("state");
                    out.len()
                })
            })
        });
        rt.block_on(host.close_session(s.id())).expect("closed");
    }
    group.finish();
}

/// Prints the heap bytes per idle session, fresh and after one commit.
fn idle_memory(_: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let host = Host::new(app()).expect("host");
    const COUNT: isize = 500;
    let settle = |rt: &tokio::runtime::Runtime| {
        rt.block_on(tokio::time::sleep(Duration::from_millis(100)));
        LIVE.load(Ordering::Relaxed)
    };
    let before = settle(&rt);
    let sessions: Vec<_> = (0..COUNT)
        .map(|_| host.create_session(None).expect("session"))
        .collect();
    let fresh = settle(&rt);
    for s in &sessions {
        rt.block_on(toggle(s));
    }
    let used = settle(&rt);
    let state_json = serde_json::to_string(&sessions[0].state())
        .expect("state")
        .len();
    println!(
        "idle session: {} bytes fresh, {} bytes after a commit (its state: {} bytes of JSON)",
        (fresh - before) / COUNT,
        (used - before) / COUNT,
        state_json
    );
    for s in sessions {
        rt.block_on(host.close_session(s.id())).expect("closed");
    }
}

criterion_group!(benches, idle_memory, bench_toggle, bench_observe);
criterion_main!(benches);
