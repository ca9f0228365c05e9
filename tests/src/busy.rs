//! Many busy sessions in a server process, and its resident size before and after (issue 49):
//! the counter example (or any server binary with the examples' command line) started with
//! `--memory`, one trusted proxy and no rate limit; a thousand anonymous visitors, each its own
//! client address in `X-Forwarded-For`, each minting one session; then `/message` (`inc`,
//! `waitFor: idle`) spread over all of them, round-robin, with a bounded number of calls in
//! flight and a bounded time.
//!
//! ```ignore
//! let figures = agent_tests::busy::run(&agent_tests::counter_server!(), Busy::default()).await;
//! eprintln!("{figures}");
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::process::Launch;
use crate::resident::{resident_bytes, MIB};

/// What [`run`] does.
#[derive(Debug, Clone)]
pub struct Busy {
    /// Sessions, one anonymous visitor each (default 1,000).
    pub sessions: usize,
    /// Messages each session is sent, at most (default 230).
    pub messages_each: usize,
    /// Calls in flight at once (default 16).
    pub concurrency: usize,
    /// The load stops after this long, whatever was sent (default 60 s).
    pub time_limit: Duration,
    /// Extra arguments of the server (after `--memory --trust-proxy 1 --rate-limit …`), e.g.
    /// a `--config` file.
    pub args: Vec<String>,
    /// Extra environment of the server.
    pub env: Vec<(String, String)>,
}

impl Default for Busy {
    fn default() -> Self {
        Busy {
            sessions: 1_000,
            messages_each: 230,
            concurrency: 16,
            time_limit: Duration::from_secs(60),
            args: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// The resident sizes (`VmRSS`) of the server process, in bytes, and what was sent.
#[derive(Debug, Clone, Copy)]
pub struct BusyFigures {
    /// Once the server printed its banner.
    pub started: u64,
    /// After every session was minted, before any message.
    pub idle: u64,
    /// After the load, once the last answer came (1 s later).
    pub after: u64,
    /// The largest resident size sampled during the load (every 100 ms).
    pub peak: u64,
    /// Sessions minted.
    pub sessions: usize,
    /// `/message` calls answered 200.
    pub sent: usize,
    /// How long the load took.
    pub elapsed: Duration,
}

impl std::fmt::Display for BusyFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} sessions, {} messages ({:.0} each) in {:.1} s ({:.0}/s): RSS {} MiB started, \
             {} MiB idle, {} MiB after (peak {} MiB)",
            self.sessions,
            self.sent,
            self.sent as f64 / self.sessions.max(1) as f64,
            self.elapsed.as_secs_f64(),
            self.sent as f64 / self.elapsed.as_secs_f64().max(1e-9),
            self.started / MIB,
            self.idle / MIB,
            self.after / MIB,
            self.peak / MIB,
        )
    }
}

/// Starts `launch` with `--memory --trust-proxy 1 --rate-limit 1000000000/second` (then
/// `busy.args`), mints `busy.sessions` sessions and sends them `busy.messages_each` messages
/// each; answers the server's resident sizes. Panics when a mint or a message fails.
pub async fn run(launch: &Launch, busy: Busy) -> BusyFigures {
    let mut launch = launch.clone().args(ARGS);
    launch = launch.args(&busy.args);
    for (k, v) in &busy.env {
        launch = launch.env(k, v);
    }
    let server = launch.start();
    let pid = server.pid();
    let figures = load(
        &server.base,
        &busy,
        Arc::new(move || resident_bytes(Some(pid))),
    )
    .await;
    drop(server);
    figures
}

/// The arguments [`run`] starts a server with: `--memory --trust-proxy 1 --rate-limit
/// 1000000000/second`.
pub const ARGS: [&str; 5] = [
    "--memory",
    "--trust-proxy",
    "1",
    "--rate-limit",
    "1000000000/second",
];

/// The load of [`run`] on the server at `base` (started with [`ARGS`]); `measure` reads its
/// memory (the figures' "RSS": a resident size, or bytes allocated for a server in this
/// process).
pub async fn load(
    base: &str,
    busy: &Busy,
    measure: Arc<dyn Fn() -> u64 + Send + Sync>,
) -> BusyFigures {
    let base = base.to_owned();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(busy.concurrency)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = measure();
    let mut tokens = Vec::with_capacity(busy.sessions);
    for i in 0..busy.sessions {
        // One visitor per client address (10.x.y.z): anonymous mints are limited per address.
        let address = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        let answer: serde_json::Value = client
            .post(format!("{base}/agent/mint"))
            .header("x-forwarded-for", address)
            .json(&serde_json::json!({}))
            .send()
            .await
            .expect("mint")
            .json()
            .await
            .expect("mint's answer");
        let token = answer["token"]
            .as_str()
            .unwrap_or_else(|| panic!("mint {i}: {answer}"))
            .to_owned();
        tokens.push(token);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = measure();
    let tokens = Arc::new(tokens);
    let total = busy.sessions * busy.messages_each;
    let next = Arc::new(AtomicUsize::new(0));
    let sent = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + busy.time_limit;
    let begun = Instant::now();
    let body = r#"{"msg":{"type":"inc"},"waitFor":"idle"}"#;
    let workers: Vec<_> = (0..busy.concurrency)
        .map(|_| {
            let (client, base, tokens) = (client.clone(), base.clone(), tokens.clone());
            let (next, sent) = (next.clone(), sent.clone());
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total || Instant::now() >= deadline {
                        return;
                    }
                    let token = &tokens[n % tokens.len()];
                    let r = client
                        .post(format!("{base}/agent/lap/v1/message"))
                        .bearer_auth(token)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                        .expect("message");
                    let status = r.status();
                    let _ = r.bytes().await;
                    assert_eq!(status, 200, "message {n}");
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let sampler = {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        let measure = measure.clone();
        let task = tokio::spawn(async move {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(measure());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        });
        (done, task)
    };
    for w in workers {
        w.await.expect("a load worker");
    }
    let elapsed = begun.elapsed();
    sampler.0.store(true, Ordering::Relaxed);
    let peak = sampler.1.await.expect("sampler");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = measure();
    BusyFigures {
        started,
        idle,
        after,
        peak: peak.max(after),
        sessions: busy.sessions,
        sent: sent.load(Ordering::Relaxed),
        elapsed,
    }
}
