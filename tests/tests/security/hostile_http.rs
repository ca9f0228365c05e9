//! Issue 13, against a real server on 127.0.0.1:0 served by `tea_agent_runtime::serve`: stalled
//! headers and bodies are closed within the timeout, a foreign `Host` is refused on every
//! route, every 429 carries `retry-after`, anonymous mints have their own bucket, the console
//! cannot be framed, idle sessions free their slot, and the owner closes a session.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_examples::counter::Counter;
use agent_tests::{ServerBuilder, TestServer};
use reqwest::header::HeaderMap;
use serde_json::{json, Value};
use tea_agent_runtime::AgentServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
const BODY_TIMEOUT: Duration = Duration::from_millis(300);
/// How long a test waits for the server to close a stalled connection (timeout + margin).
const CLOSE_WITHIN: Duration = Duration::from_secs(3);

struct Running {
    server: AgentServer<Counter>,
    addr: SocketAddr,
    base: String,
}

/// Serves `builder`'s server (no identity header) with the runtime's own `serve` and short
/// timeouts.
async fn run_with(builder: ServerBuilder<Counter>) -> Running {
    let server = builder.cookie_identity_only().build().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serve = tea_agent_runtime::serve(listener, server.router())
        .header_read_timeout(HEADER_TIMEOUT)
        .body_read_timeout(BODY_TIMEOUT)
        .idle_timeout(Duration::from_secs(2));
    tokio::spawn(std::future::IntoFuture::into_future(serve));
    Running {
        server,
        addr,
        base: format!("http://{addr}"),
    }
}

fn anonymous() -> ServerBuilder<Counter> {
    TestServer::builder(Counter).anonymous()
}

async fn run() -> Running {
    run_with(anonymous()).await
}

/// Reads until the server closes the connection; panics if it stays open past `within`.
/// Returns what was read and how long it took.
async fn read_until_closed(tcp: &mut TcpStream, within: Duration) -> (String, Duration) {
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = within.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Err(_) => panic!(
                "connection still open after {within:?}; read so far: {:?}",
                String::from_utf8_lossy(&seen)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
    (String::from_utf8_lossy(&seen).into_owned(), start.elapsed())
}

#[tokio::test]
async fn stalled_headers_are_closed_within_the_timeout() {
    let r = run().await;
    let mut tcp = TcpStream::connect(r.addr).await.expect("connect");
    tcp.write_all(b"GET /agent/console HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .expect("write");
    let (_, took) = read_until_closed(&mut tcp, CLOSE_WITHIN).await;
    assert!(took >= HEADER_TIMEOUT / 2, "closed too early: {took:?}");

    // An idle keep-alive connection is closed the same way after its answer.
    let mut tcp = TcpStream::connect(r.addr).await.expect("connect");
    tcp.write_all(b"GET /agent/console HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("write");
    let (seen, _) = read_until_closed(&mut tcp, CLOSE_WITHIN).await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
}

#[tokio::test]
async fn unfinished_bodies_are_closed_within_the_timeout() {
    let r = run().await;
    let minted = reqwest::Client::new()
        .post(format!("{}/agent/mint", r.base))
        .json(&json!({}))
        .send()
        .await
        .expect("mint");
    let token = minted.json::<Value>().await.expect("json")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    for (path, auth) in [
        ("/agent/mint", String::new()),
        (
            "/agent/lap/v1/message",
            format!("Authorization: Bearer {token}\r\n"),
        ),
    ] {
        let mut tcp = TcpStream::connect(r.addr).await.expect("connect");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"msg\":"
        );
        tcp.write_all(head.as_bytes()).await.expect("write");
        let (seen, took) = read_until_closed(&mut tcp, CLOSE_WITHIN).await;
        assert!(
            took >= BODY_TIMEOUT / 2,
            "{path}: closed too early: {took:?}"
        );
        assert!(
            seen.is_empty() || seen.starts_with("HTTP/1.1 4"),
            "{path}: {seen}"
        );
    }
    // The server still serves.
    let ok = reqwest::get(format!("{}/agent/console", r.base))
        .await
        .expect("get");
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route() {
    let r = run().await;
    let http = reqwest::Client::new();
    let port = r.addr.port();
    let routes: [(reqwest::Method, &str); 7] = [
        (reqwest::Method::POST, "/agent/mint"),
        (reqwest::Method::POST, "/agent/revoke"),
        (reqwest::Method::GET, "/agent/sessions"),
        (reqwest::Method::GET, "/agent/lap/v1/describe"),
        (reqwest::Method::GET, "/agent/human/sessions"),
        (reqwest::Method::GET, "/agent/console"),
        (reqwest::Method::POST, "/agent/mcp"),
    ];
    for (method, path) in routes {
        for host in ["evil.example", &format!("evil.example:{port}"), "127.0.0.2"] {
            let resp = http
                .request(method.clone(), format!("{}{path}", r.base))
                .header("host", host)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .expect("send");
            assert_eq!(resp.status(), 403, "{method} {path} with Host {host}");
            if path != "/agent/mcp" {
                let body: Value = resp.json().await.expect("json");
                assert_eq!(body["error"]["code"], "forbidden", "{path}");
                assert_eq!(body["error"]["detail"], "Host header is not allowed");
            }
        }
    }
    // Loopback names pass, with any port.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let resp = http
            .get(format!("{}/agent/console", r.base))
            .header("host", host.as_str())
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 200, "{host}");
    }
    // A deployment lists its names; empty accepts any.
    let open = run_with(anonymous().options(|o| o.allowed_hosts = Vec::new())).await;
    let resp = http
        .get(format!("{}/agent/console", open.base))
        .header("host", "app.example")
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
}

/// `POST /agent/mint {}` with `http` (its cookie jar, if any, keeps the identity): the answer.
async fn mint_anonymously(http: &reqwest::Client, base: &str) -> Value {
    http.post(format!("{base}/agent/mint"))
        .json(&json!({}))
        .send()
        .await
        .expect("mint")
        .json()
        .await
        .expect("json")
}

fn retry_after(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn every_429_has_retry_after_and_mints_do_not_share_the_mcp_bucket() {
    let r = run_with(anonymous().rate_limit("1/minute")).await;
    let http = reqwest::Client::new();
    let mint = || http.post(format!("{}/agent/mint", r.base)).json(&json!({}));
    let first = mint().send().await.expect("mint");
    assert_eq!(first.status(), 200);
    let token = first.json::<Value>().await.expect("json")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let second = mint().send().await.expect("mint");
    assert_eq!(second.status(), 429);
    let secs = retry_after(second.headers()).expect("retry-after on mint");
    let body: Value = second.json().await.expect("json");
    let ms = body["error"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert_eq!(secs, ms.div_ceil(1000).max(1));

    // LAP: the token's own bucket.
    let lap = || {
        http.get(format!("{}/agent/lap/v1/describe", r.base))
            .bearer_auth(&token)
    };
    assert_eq!(lap().send().await.expect("lap").status(), 200);
    let limited = lap().send().await.expect("lap");
    assert_eq!(limited.status(), 429);
    assert!(retry_after(limited.headers()).is_some_and(|s| s >= 1));

    // MCP `initialize` from the same address still has its bucket (mint used the other).
    let initialize = || {
        http.post(format!("{}/agent/mcp", r.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                    "protocolVersion":"2025-06-18","capabilities":{},
                    "clientInfo":{"name":"hostile","version":"1"}}})
                .to_string(),
            )
            .send()
    };
    let init = initialize().await.expect("initialize");
    assert_eq!(init.status(), 200);
    let again = initialize().await.expect("initialize");
    assert_eq!(again.status(), 429);
    assert!(retry_after(again.headers()).is_some());
}

#[tokio::test]
async fn the_console_cannot_be_framed() {
    let r = run().await;
    let resp = reqwest::get(format!("{}/agent/console", r.base))
        .await
        .expect("get");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-frame-options"], "DENY");
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .expect("csp");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let page = resp.text().await.expect("page");
    assert!(page.contains("data-testid=\"close-session\""));
}

#[tokio::test]
async fn idle_sessions_expire_and_free_their_slot() {
    let r = run_with(anonymous().config(|c| {
        c.max_sessions = 2;
        c.session_idle = std::time::Duration::from_millis(400);
    }))
    .await;
    let http = reqwest::Client::new();
    let mint = || async {
        http.post(format!("{}/agent/mint", r.base))
            .json(&json!({}))
            .send()
            .await
            .expect("mint")
    };
    // Cookieless mints: a new anonymous owner each time, as in the attack.
    let a = mint().await;
    assert_eq!(a.status(), 200);
    let token = a.json::<Value>().await.expect("json")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    assert_eq!(mint().await.status(), 200);
    assert_eq!(mint().await.status(), 503, "the host is full");
    // Used sessions stay; the other expires.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let used = http
            .get(format!("{}/agent/lap/v1/describe", r.base))
            .bearer_auth(&token)
            .send()
            .await
            .expect("lap");
        assert_eq!(used.status(), 200);
    }
    assert_eq!(r.server.host().session_count(), 1, "the unused one expired");
    assert_eq!(mint().await.status(), 200, "its slot came back");
    // Once unused, the first expires too and its token is paused.
    let deadline = Instant::now() + Duration::from_secs(5);
    while r.server.host().session_count() > 1 {
        assert!(Instant::now() < deadline, "no expiry");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let paused = http
        .get(format!("{}/agent/lap/v1/state", r.base))
        .bearer_auth(&token)
        .send()
        .await
        .expect("lap");
    assert_eq!(paused.status(), 503);
}

#[tokio::test]
async fn the_owner_closes_a_session() {
    let r = run().await;
    let owner = agent_tests::browser();
    let minted = mint_anonymously(&owner, &r.base).await;
    let id = minted["sessionId"].as_str().expect("id").to_owned();
    let token = minted["token"].as_str().expect("token").to_owned();
    let close = format!("{}/agent/human/sessions/{id}/close", r.base);

    // Someone else, an agent token, a cross-origin page and a GET cannot close it.
    let stranger = agent_tests::browser();
    let _ = stranger
        .get(format!("{}/agent/console", r.base))
        .send()
        .await
        .expect("console");
    let refused = stranger
        .post(&close)
        .json(&json!({}))
        .send()
        .await
        .expect("post");
    assert_eq!(refused.status(), 403);
    let agent = reqwest::Client::new()
        .post(&close)
        .bearer_auth(&token)
        .json(&json!({}))
        .send()
        .await
        .expect("post");
    assert_eq!(agent.status(), 403);
    let cross = owner
        .post(&close)
        .header("origin", "http://evil.example")
        .json(&json!({}))
        .send()
        .await
        .expect("post");
    assert_eq!(cross.status(), 403);
    assert_eq!(owner.get(&close).send().await.expect("get").status(), 405);
    assert!(r.server.host().session(&id).is_some());

    let closed = owner
        .post(&close)
        .json(&json!({}))
        .send()
        .await
        .expect("post");
    assert_eq!(closed.status(), 200);
    let body: Value = closed.json().await.expect("json");
    assert_eq!(body, json!({"closed": true, "sessionId": id}));
    assert!(r.server.host().session(&id).is_none());
    assert_eq!(r.server.host().session_count(), 0);
    let lap = reqwest::Client::new()
        .get(format!("{}/agent/lap/v1/state", r.base))
        .bearer_auth(&token)
        .send()
        .await
        .expect("lap");
    // Closing revoked the session's tokens.
    assert_eq!(lap.status(), 403);
    let list: Value = owner
        .get(format!("{}/agent/human/sessions", r.base))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(list["sessions"], json!([]));
    // Closing again: no longer the owner's (gone).
    let again = owner
        .post(&close)
        .json(&json!({}))
        .send()
        .await
        .expect("post");
    assert_eq!(again.status(), 403);
}

#[tokio::test]
async fn the_counter_saturates_over_lap() {
    let r = run().await;
    let http = reqwest::Client::new();
    let minted = mint_anonymously(&http, &r.base).await;
    let token = minted["token"].as_str().expect("token");
    let send = |msg: Value| {
        http.post(format!("{}/agent/lap/v1/message", r.base))
            .bearer_auth(token)
            .json(&json!({ "msg": msg }))
            .send()
    };
    let bulk = send(json!({"type": "bulkAdd", "amounts": [i64::MAX, i64::MAX]}))
        .await
        .expect("bulk");
    assert_eq!(bulk.status(), 200);
    let inc = send(json!({"type": "inc"})).await.expect("inc");
    assert_eq!(inc.status(), 200);
    let session = r
        .server
        .host()
        .session(minted["sessionId"].as_str().expect("id"))
        .expect("session");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let count = session.with_state(|s| s.count);
        if count == i64::MAX {
            break;
        }
        assert!(Instant::now() < deadline, "count {count}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Five-point-oh is refused by validation, not by deserialization.
    let float = send(json!({"type": "setCount", "value": 5.0}))
        .await
        .expect("set");
    let body: Value = float.json().await.expect("json");
    assert!(body.to_string().contains("without a fraction"), "{body}");
}

/// Records the keys of mint checks; allows everything.
#[derive(Default)]
struct RecordingLimiter {
    mint_keys: std::sync::Mutex<Vec<String>>,
}

impl tea_agent_runtime::security::RateLimiter for RecordingLimiter {
    fn check<'a>(
        &'a self,
        key: &'a str,
        bucket: tea_agent_runtime::security::Bucket,
    ) -> futures::future::BoxFuture<'a, Result<(), tea_agent_runtime::security::RateLimited>> {
        if bucket == tea_agent_runtime::security::Bucket::Mint {
            self.mint_keys.lock().expect("lock").push(key.to_owned());
        }
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn serve_hands_the_peer_address_to_the_runtime() {
    let limiter = Arc::new(RecordingLimiter::default());
    let server = anonymous()
        .cookie_identity_only()
        .into_agent_builder()
        .rate_limiter(limiter.clone())
        .build()
        .await
        .expect("server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(std::future::IntoFuture::into_future(
        tea_agent_runtime::serve(listener, server.router()),
    ));
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/agent/mint"))
        .json(&json!({}))
        .send()
        .await
        .expect("mint");
    assert_eq!(resp.status(), 200);
    // A cookieless mint is keyed by the client address: the TCP peer, not the shared `anon`.
    assert_eq!(*limiter.mint_keys.lock().expect("lock"), ["127.0.0.1"]);
}
