//! Load on an HTTP server over loopback, as the benchmarks make it (`tests/benches/lap_http.rs`,
//! `tests/benches/gate.rs`): targets (a URL, headers, a body and a check of each answer) loaded
//! by concurrent keep-alive clients in slices, so that targets taking turns share a noisy
//! machine's slow stretches; bare axum serving fixed bytes as the yardstick; MCP sessions and
//! calls made over plain HTTP.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use axum::serve::ListenerExt as _;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};

use crate::nodelay;

/// Clients loading a target at once.
pub const CONCURRENCY: usize = 16;

/// The number in the environment variable `name`, or `default`.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Loads `targets` for `rounds` rounds, each target one `slice` per round in turn, so a slow
/// stretch of a shared machine hits all of them alike: each target's [`Run`].
pub async fn interleaved<const N: usize>(
    targets: &[Arc<Target>; N],
    slice: Duration,
    rounds: u64,
) -> [Run; N] {
    let mut runs: [Run; N] = std::array::from_fn(|_| Run::default());
    for _ in 0..rounds {
        for (target, run) in targets.iter().zip(runs.iter_mut()) {
            target.slice(slice, run).await;
        }
    }
    runs
}

/// What loading a target measured: requests answered, time spent, each latency.
#[derive(Default)]
pub struct Run {
    requests: usize,
    busy: Duration,
    latencies: Vec<Duration>,
}

impl Run {
    /// Requests per second.
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.busy.as_secs_f64()
    }

    /// The `p`th percentile latency.
    pub fn percentile(&mut self, p: usize) -> Duration {
        self.latencies.sort();
        self.latencies[self.latencies.len() * p / 100]
    }
}

/// What a target posts: the same bytes every time, or a JSON-RPC request with a fresh id.
pub enum Body {
    Fixed(String),
    /// `{"jsonrpc":"2.0","id":<n>,"method":"tools/call","params":<params>}`.
    ToolCall {
        params: String,
        next_id: AtomicU64,
    },
}

impl Body {
    /// The next body to post.
    pub fn next(&self) -> String {
        match self {
            Body::Fixed(b) => b.clone(),
            Body::ToolCall { params, next_id } => {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
            }
        }
    }
}

/// One HTTP target of the benchmark: a URL, the headers and the body to post, and a check of
/// the whole answer.
pub struct Target {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    body: Body,
    check: fn(&[u8]),
    /// Clients loading it at once (`CONCURRENCY`, or 1 for the sequential comparison).
    clients: usize,
}

impl Target {
    /// A target posting `body` to `url`, with `token` as its bearer.
    pub async fn new(url: String, token: Option<&str>, body: String) -> Self {
        Target::checked(url, token, body, |_| {}).await
    }

    /// [`Target::new`] with a check of each answer.
    pub async fn checked(url: String, token: Option<&str>, body: String, check: fn(&[u8])) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(t) = token {
            headers.insert(
                "authorization",
                HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
            );
        }
        Target::with(url, headers, Body::Fixed(body), check).await
    }

    /// A target of its own headers and body.
    pub async fn with(url: String, headers: HeaderMap, body: Body, check: fn(&[u8])) -> Self {
        let target = Target {
            client: client(),
            url,
            headers,
            body,
            check,
            clients: CONCURRENCY,
        };
        // Warm up the connections.
        let warm: Vec<_> = (0..CONCURRENCY).map(|_| target.post()).collect();
        futures::future::join_all(warm).await;
        target
    }

    /// One request, its whole body read (an SSE stream to its end).
    pub async fn post(&self) {
        let resp = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(self.body.next())
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.status());
        (self.check)(&resp.bytes().await.unwrap());
    }

    /// The same target loaded by one client: calls one after the other on one connection.
    pub fn sequential(mut self) -> Self {
        self.clients = 1;
        self
    }

    /// Loads the target with its clients for one slice and adds to `run`.
    pub async fn slice(self: &Arc<Self>, slice: Duration, run: &mut Run) {
        let started = Instant::now();
        let deadline = started + slice;
        let mut tasks = Vec::new();
        for _ in 0..self.clients {
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

/// A keep-alive client (reqwest sets `TCP_NODELAY` on its own sockets).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY)
        .build()
        .unwrap()
}

/// The JSON-RPC messages of an MCP answer: the JSON body, or the `data:` of each SSE event.
pub fn jsonrpc_messages(body: &[u8]) -> Vec<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return vec![v];
    }
    std::str::from_utf8(body)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim_start()).ok())
        .collect()
}

/// The `result` of the one JSON-RPC response in an MCP answer.
pub fn jsonrpc_result(body: &[u8]) -> Value {
    let messages = jsonrpc_messages(body);
    let response = messages
        .iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC response in {}", String::from_utf8_lossy(body)));
    response
        .get("result")
        .unwrap_or_else(|| panic!("JSON-RPC error: {response}"))
        .clone()
}

/// A successful `send_message` that dispatched: parsed in full during the warm-up, then a scan
/// of the bytes, the same as [`check_lap_sent`] does, so the client spends on an MCP answer
/// what it spends on LAP's.
pub fn check_sent(body: &[u8]) {
    static PARSED: AtomicU64 = AtomicU64::new(0);
    if PARSED.fetch_add(1, Ordering::Relaxed) < CONCURRENCY as u64 {
        let result = jsonrpc_result(body);
        assert_ne!(result["isError"], true, "{result}");
        let status = &result["structuredContent"]["status"];
        assert_eq!(status, "dispatched", "{result}");
    } else {
        assert_dispatched(body);
    }
}

/// A LAP `/message` answer that dispatched, checked as [`check_sent`] checks MCP's.
pub fn check_lap_sent(body: &[u8]) {
    static PARSED: AtomicU64 = AtomicU64::new(0);
    if PARSED.fetch_add(1, Ordering::Relaxed) < CONCURRENCY as u64 {
        let answer: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(answer["status"], "dispatched", "{answer}");
    } else {
        assert_dispatched(body);
    }
}

/// The answer's bytes say `"status":"dispatched"`.
pub fn assert_dispatched(body: &[u8]) {
    let dispatched = br#""status":"dispatched""#;
    let found = body.windows(dispatched.len()).any(|w| w == dispatched);
    assert!(found, "{}", String::from_utf8_lossy(body));
}

/// The headers of a request on MCP session `id` (none yet at `initialize`).
pub fn mcp_headers(id: Option<&str>, version: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    if let Some(id) = id {
        headers.insert("mcp-session-id", HeaderValue::from_str(id).unwrap());
    }
    if let Some(v) = version {
        headers.insert("mcp-protocol-version", HeaderValue::from_str(v).unwrap());
    }
    headers
}

/// Initializes an MCP session on `url` over plain HTTP, binds it to `token` with
/// `connect_session`, and returns the headers of its later requests.
pub async fn mcp_session(url: &str, token: &str) -> HeaderMap {
    let http = client();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "lap_http", "version": "1"},
    }});
    let resp = http
        .post(url)
        .headers(mcp_headers(None, None))
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "initialize: {}", resp.status());
    let id = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let result = jsonrpc_result(&resp.bytes().await.unwrap());
    let version = result["protocolVersion"].as_str().unwrap().to_owned();
    let headers = mcp_headers(Some(&id), Some(&version));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = http
        .post(url)
        .headers(headers.clone())
        .body(initialized.to_string())
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "initialized: {}", resp.status());
    let connect = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "connect_session", "arguments": {"token": token},
    }});
    let resp = http
        .post(url)
        .headers(headers.clone())
        .body(connect.to_string())
        .send()
        .await
        .unwrap();
    let result = jsonrpc_result(&resp.bytes().await.unwrap());
    assert_eq!(
        result["structuredContent"]["status"], "connected",
        "{result}"
    );
    headers
}

/// MCP `tools/call send_message` (the same message as the LAP target) on a bound session.
pub async fn mcp_send_message(url: String, token: &str) -> Target {
    let headers = mcp_session(&url, token).await;
    let params =
        json!({"name": "send_message", "arguments": {"msg": {"type": "inc"}, "waitFor": "idle"}});
    let body = Body::ToolCall {
        params: params.to_string(),
        next_id: AtomicU64::new(2),
    };
    Target::with(url, headers, body, check_sent).await
}

/// `tools/call` of `tool` with `arguments` on MCP 2026-07-28: no session, the bearer, the
/// revision's headers and `_meta` on every request.
pub async fn mcp_stateless_call(url: String, token: &str, tool: &str, arguments: Value) -> Target {
    let mut headers = mcp_headers(None, Some("2026-07-28"));
    headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
    headers.insert("mcp-name", HeaderValue::from_str(tool).unwrap());
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    let params = json!({"name": tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lap_http", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    let body = Body::ToolCall {
        params: params.to_string(),
        next_id: AtomicU64::new(1),
    };
    Target::with(url, headers, body, check_sent).await
}

/// Serves `router` on a free loopback port, with or without `TCP_NODELAY` on accepted sockets.
pub async fn serve(router: axum::Router, tcp_nodelay: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move {
        let listener = listener.tap_io(move |tcp| {
            if tcp_nodelay {
                nodelay(tcp)
            }
        });
        axum::serve(listener, service).await.unwrap();
    });
    addr
}

/// Prints a target's rate and p50/p99 latency.
pub fn report(name: &str, r: &mut Run) {
    let (p50, p99) = (r.percentile(50), r.percentile(99));
    println!(
        "{name:<34} {:>9.0} req/s   p50 {:>8.3} ms   p99 {:>8.3} ms",
        r.rps(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
}

/// This process's resident size.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Bare axum on a free loopback port answering every POST to `/bare` with `body` (the
/// yardstick): its URL.
pub async fn bare_server(body: Arc<String>) -> String {
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
    let addr = serve(app, true).await;
    format!("http://{addr}/bare")
}
