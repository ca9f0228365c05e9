//! A thousand busy sessions' memory (`cargo bench -p agent-tests --bench busy_sessions`; issue
//! 49, `docs/stores.md` §Memory): the counter example as its own process (`--memory`, one
//! trusted proxy, no rate limit), 1,000 anonymous visitors minting a session each, then
//! `/message` spread over all of them (230 each, 16 in flight); the process's resident size
//! (`VmRSS`) started, idle and after ([`agent_tests::busy::run`]).
//!
//! `BUSY_INPROCESS=1` serves the same example in this process instead and weighs it with a
//! counting allocator: the bytes allocated idle and after, beside what the host counts against
//! `Budgets::retained_bytes` (`Host::retained_bytes`), i.e. how closely that count follows the
//! heap.
//!
//! `BUSY_SESSIONS`, `BUSY_MESSAGES` (each), `BUSY_CONCURRENCY`, `BUSY_SECONDS` (the time limit)
//! change the load; `BUSY_ARGS` (space-separated) adds server arguments. With `BUSY_MAX_MIB`
//! the run fails when the process's resident size after the load is over that many MiB (the
//! benchmark gate's memory bound, `.ci/bench-gate`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::busy::{self, Busy};
use agent_tests::load::env_or;
use agent_tests::resident::MIB;

/// The system allocator, counting the bytes allocated now.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter moves.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn busy() -> Busy {
    let d = Busy::default();
    Busy {
        sessions: env_or("BUSY_SESSIONS", d.sessions as u64) as usize,
        messages_each: env_or("BUSY_MESSAGES", d.messages_each as u64) as usize,
        concurrency: env_or("BUSY_CONCURRENCY", d.concurrency as u64) as usize,
        time_limit: Duration::from_secs(env_or("BUSY_SECONDS", d.time_limit.as_secs())),
        args: std::env::var("BUSY_ARGS")
            .map(|a| a.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default(),
        env: Vec::new(),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read from the command line.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let busy = busy();
    if std::env::var("BUSY_INPROCESS").is_ok_and(|v| v == "1") {
        runtime.block_on(in_process(busy));
    } else {
        let expected = busy.sessions * busy.messages_each;
        let figures = runtime.block_on(busy::run(&agent_tests::counter_server!(), busy));
        println!("counter process: {figures}");
        println!(
            "growth: +{} MiB idle, +{} MiB after the load",
            figures.idle.saturating_sub(figures.started) / MIB,
            figures.after.saturating_sub(figures.started) / MIB
        );
        // The gate's bound (`.ci/bench-gate`): the resident size after the load.
        if let Some(bound) = std::env::var("BUSY_MAX_MIB")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            let after = figures.after / MIB;
            // A load cut short (the time limit, refused messages) would pass the bound on a
            // lighter load than it names.
            if figures.sent < expected {
                eprintln!(
                    "FAIL: {} of the {expected} messages were sent within the time limit",
                    figures.sent
                );
                std::process::exit(1);
            }
            if after > bound {
                eprintln!("FAIL: resident after the load {after} MiB, over its bound {bound} MiB");
                std::process::exit(1);
            }
            println!("resident after the load {after} MiB, within its bound {bound} MiB");
        }
    }
}

async fn in_process(busy: Busy) {
    let mut args: Vec<String> = busy::ARGS.iter().map(|a| a.to_string()).collect();
    args.extend(["--port".into(), "0".into()]);
    args.extend(busy.args.iter().cloned());
    let opts = agent_examples::config::parse_args(args, 0).expect("options");
    let running = agent_examples::serve::start(Counter, &opts)
        .await
        .expect("serves");
    let base = running.base_url();
    let measure = Arc::new(|| LIVE.load(Ordering::Relaxed).max(0) as u64);
    let figures = busy::load(&base, &busy, measure).await;
    let host = running.server.host();
    println!("counter in process (bytes allocated, not resident): {figures}");
    println!(
        "allocated: +{:.1} MiB idle ({:.1} KiB a session), +{:.1} MiB after; \
         Host::retained_bytes {:.1} MiB (budget {} MiB); {:.1} KiB allocated a session after",
        figures.idle.saturating_sub(figures.started) as f64 / MIB as f64,
        figures.idle.saturating_sub(figures.started) as f64 / 1024.0 / busy.sessions as f64,
        figures.after.saturating_sub(figures.started) as f64 / MIB as f64,
        host.retained_bytes() as f64 / MIB as f64,
        opts.host.budgets.retained_bytes / MIB as usize,
        figures.after.saturating_sub(figures.started) as f64 / 1024.0 / busy.sessions as f64,
    );
    let resident = agent_tests::resident::resident_bytes(None);
    println!(
        "this process: RSS {} MiB, {} MiB allocated",
        resident / MIB,
        LIVE.load(Ordering::Relaxed) as u64 / MIB
    );
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// glibc's `struct mallinfo2`.
        #[repr(C)]
        #[derive(Default)]
        struct MallInfo2 {
            arena: usize,
            ordblks: usize,
            smblks: usize,
            hblks: usize,
            hblkhd: usize,
            usmblks: usize,
            fsmblks: usize,
            uordblks: usize,
            fordblks: usize,
            keepcost: usize,
        }
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
            fn mallinfo2() -> MallInfo2;
        }
        // SAFETY: glibc's mallinfo2 only reads the allocator's statistics.
        let info = unsafe { mallinfo2() };
        println!(
            "glibc: {} MiB from the system in its arenas ({} MiB mmapped blocks), {} MiB in use, \
             {} MiB free in {} free chunks ({} MiB in fast bins)",
            info.arena / MIB as usize,
            info.hblkhd / MIB as usize,
            info.uordblks / MIB as usize,
            info.fordblks / MIB as usize,
            info.ordblks,
            info.fsmblks / MIB as usize,
        );
        // SAFETY: glibc's malloc_trim takes a padding and only returns free pages.
        unsafe { malloc_trim(0) };
        println!(
            "after malloc_trim: RSS {} MiB (what glibc held free: {} MiB)",
            agent_tests::resident::resident_bytes(None) / MIB,
            resident.saturating_sub(agent_tests::resident::resident_bytes(None)) / MIB
        );
    }
}
