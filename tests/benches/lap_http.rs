//! HTTP benchmark of the LAP surface on loopback (`cargo bench -p agent-tests --bench lap_http`):
//! requests/second and p50/p99 latency of `/observe` and `/message` (waitFor idle) on one
//! session, against a bare axum handler returning the same bytes in the same run; and the
//! resident memory of idle sessions.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_examples::counter::Counter;
use agent_runtime::lap::{AgentServer, ServerOptions};
use agent_runtime::security::TracingAuditSink;
use agent_runtime::{Host, HostConfig};
use agent_tests::start;
use axum::routing::post;
use serde_json::json;

const CONCURRENCY: usize = 16;
/// Each target is loaded for `ROUNDS` slices of `SLICE`, the targets taking turns, so a slow
/// stretch of a shared machine hits all of them alike instead of whichever ran at the time.
const ROUNDS: usize = 6;
const SLICE: Duration = Duration::from_millis(750);

#[derive(Default)]
struct Run {
    requests: usize,
    busy: Duration,
    latencies: Vec<Duration>,
}

impl Run {
    fn rps(&self) -> f64 {
        self.requests as f64 / self.busy.as_secs_f64()
    }

    fn percentile(&mut self, p: usize) -> Duration {
        self.latencies.sort();
        self.latencies[self.latencies.len() * p / 100]
    }
}

/// One HTTP target of the benchmark: a URL, an optional bearer token and the body to post.
struct Target {
    client: reqwest::Client,
    url: String,
    token: Option<String>,
    body: String,
}

impl Target {
    async fn new(url: String, token: Option<String>, body: String) -> Self {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(CONCURRENCY)
            .build()
            .unwrap();
        let target = Target {
            client,
            url,
            token,
            body,
        };
        // Warm up the connections.
        for _ in 0..CONCURRENCY {
            target.post().await;
        }
        target
    }

    async fn post(&self) {
        let mut req = self.client.post(&self.url).body(self.body.clone());
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        assert!(resp.status().is_success());
        resp.bytes().await.unwrap();
    }

    /// Loads the target with `CONCURRENCY` clients for one slice and adds to `run`.
    async fn slice(self: &Arc<Self>, run: &mut Run) {
        let started = Instant::now();
        let deadline = started + SLICE;
        let mut tasks = Vec::new();
        for _ in 0..CONCURRENCY {
            let target = self.clone();
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    target.post().await;
                    lat.push(t0.elapsed());
                }
                lat
            }));
        }
        for t in tasks {
            let lat = t.await.unwrap();
            run.requests += lat.len();
            run.latencies.extend(lat);
        }
        run.busy += started.elapsed();
    }
}

fn report(name: &str, r: &mut Run) {
    let (p50, p99) = (r.percentile(50), r.percentile(99));
    println!(
        "{name:<34} {:>9.0} req/s   p50 {:>8.3} ms   p99 {:>8.3} ms",
        r.rps(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn bare_server(body: Arc<String>) -> String {
    let app = axum::Router::new().route(
        "/bare",
        post(move || {
            let body = body.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    body.as_str().to_owned(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}/bare")
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Room for the 10,000 idle sessions of the memory measurement.
        let config = HostConfig {
            max_sessions: 20_000,
            max_sessions_per_owner: 20_000,
            ..HostConfig::default()
        };
        let host = Host::with_config(Counter, config, Arc::new(TracingAuditSink)).unwrap();
        let options = ServerOptions {
            rate_limit: "1000000000/second".parse().unwrap(),
            ..ServerOptions::default()
        };
        let t = start(AgentServer::builder(host).options(options)).await;
        let m = t.mint("bench", None).await;
        let observe_url = format!("{}/agent/lap/v1/observe", t.base);
        let sample = t.lap(&m.token, "/observe", &json!({})).await.body.to_string();
        let bare_url = bare_server(Arc::new(sample.clone())).await;

        println!(
            "LAP over loopback, {CONCURRENCY} concurrent clients, {ROUNDS} interleaved rounds of {SLICE:?} per target"
        );
        let targets = [
            Target::new(bare_url, None, "{}".into()).await,
            Target::new(observe_url, Some(m.token.clone()), "{}".into()).await,
            Target::new(
                format!("{}/agent/lap/v1/message", t.base),
                Some(m.token.clone()),
                json!({"msg":{"type":"inc"},"waitFor":"idle"}).to_string(),
            )
            .await,
        ]
        .map(Arc::new);
        let mut runs: [Run; 3] = Default::default();
        for _ in 0..ROUNDS {
            for (target, run) in targets.iter().zip(runs.iter_mut()) {
                target.slice(run).await;
            }
        }
        let [bare, observe, message] = &mut runs;
        report("bare axum (same bytes as observe)", bare);
        report("/observe", observe);
        report("/message (waitFor idle)", message);
        println!(
            "  throughput relative to bare: /observe {:.0}%, /message {:.0}% (target >= 50%)",
            observe.rps() / bare.rps() * 100.0,
            message.rps() / bare.rps() * 100.0
        );

        // Memory of idle sessions.
        let n = 10_000;
        let before = rss_bytes();
        let mut sessions = Vec::with_capacity(n);
        for _ in 0..n {
            sessions.push(t.server.host().create_session(Some("mem".into())).unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = rss_bytes();
        let state_bytes = sessions[0].state().to_string().len();
        println!(
            "idle sessions: {n} took {:.1} MB RSS = {:.0} bytes/session (state JSON {state_bytes} bytes; target < 20 KB + state)",
            (after.saturating_sub(before)) as f64 / 1e6,
            (after.saturating_sub(before)) as f64 / n as f64
        );
    });
}
