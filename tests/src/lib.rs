//! Harness for the workspace-level integration tests: starts an app's agent surface on
//! `127.0.0.1:0` and talks to it over real HTTP, plus a probe app for runtime tests.

pub mod api_version;
pub mod app;
pub mod architecture;
pub mod build_graph;
pub mod busy;
pub mod chromium;
pub mod example;
pub mod lb;
pub mod load;
pub mod mcp;
pub mod oauth;
#[cfg(feature = "full")]
pub mod paired;
pub mod ports;
pub mod postgres;
pub mod probe;
pub mod process;
pub mod resident;
pub mod server;
pub mod store_conformance;
pub mod tab;
pub mod temp;
pub mod token_faults;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};
use tea_agent_runtime::app::App;
use tea_agent_runtime::security::TracingAuditSink;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::AgentServer;
use tea_agent_runtime::{config::HostConfig, Host};

pub use server::ServerBuilder;

/// The header the test identity resolver reads: requests carrying it are that user.
pub const USER_HEADER: &str = "x-test-user";

/// A running server.
pub struct TestServer<A: App> {
    /// The agent server (host, token store, …).
    pub server: AgentServer<A>,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// A client without cookies.
    pub http: reqwest::Client,
}

/// An HTTP answer: status, headers and JSON body (`null` when not JSON).
#[derive(Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: HeaderMap,
    /// Parsed body.
    pub body: Value,
}

/// A minted agent token.
#[derive(Debug, Clone)]
pub struct Minted {
    /// `agt_…`.
    pub token: String,
    /// Token id.
    pub tid: String,
    /// Session the token drives.
    pub session_id: String,
}

/// Serves an already built `server` (its own identity resolver, if any) on a free loopback
/// port.
pub async fn serve<A: App>(server: AgentServer<A>) -> TestServer<A> {
    serve_stoppable(server).await.0
}

/// Serves `server` like [`serve`], and answers the task serving it too: aborting it (and
/// dropping the server) stops it, a restart within one process.
pub async fn serve_stoppable<A: App>(
    server: AgentServer<A>,
) -> (TestServer<A>, tokio::task::JoinHandle<()>) {
    let app = server
        .router()
        .into_make_service_with_connect_info::<SocketAddr>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener.tap_io(nodelay), app).await;
    });
    let test = TestServer {
        server,
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
    };
    (test, task)
}

/// The identity resolver of the tests: a request carrying [`USER_HEADER`] is that user.
pub fn header_identity() -> Arc<dyn tea_agent_runtime::security::IdentityResolver> {
    Arc::new(|parts: &axum::http::request::Parts| {
        parts
            .headers
            .get(USER_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    })
}

/// An HTTP client that keeps the identity cookie the server gives it, as a browser does (a
/// new one is a different person).
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .expect("client")
}

/// The sequence number and state of `session` as the store at `url` (a SQLite file or a
/// `postgres://` URL) holds them: the truth every replica loads.
pub async fn stored_session(url: &str, session: &str) -> (u64, serde_json::Value) {
    let stores = Stores::open(url).await.expect("store");
    stored_in(&stores, session).await
}

/// [`stored_session`] through stores already open.
pub async fn stored_in(stores: &Stores, session: &str) -> (u64, serde_json::Value) {
    let record = stores
        .sessions
        .load_session(session)
        .await
        .expect("load")
        .expect("the session is stored");
    let state = serde_json::from_str(&record.state).expect("state JSON");
    (record.seq, state)
}

/// Sets `TCP_NODELAY` on an accepted socket (for [`ListenerExt::tap_io`]): without it the end
/// of a streamed answer (MCP's SSE) waits for the peer's delayed ACK, ~40 ms per call.
pub fn nodelay(tcp: &mut tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
}

/// The runtime of the stores' and memory benchmarks: two worker threads.
pub fn bench_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A host of `app` that keeps its sessions in `stores`, under `config`, auditing to the log.
pub fn host_on<A: App>(app: A, stores: &Stores, config: HostConfig) -> Host<A> {
    Host::with_store(
        app,
        config,
        Arc::new(TracingAuditSink),
        stores.sessions.clone(),
    )
    .expect("host")
}

/// Starts a server for `app` with default host options ([`TestServer::builder`] for others).
pub async fn start_app<A: App>(app: A) -> TestServer<A> {
    TestServer::builder(app).start().await
}

async fn answer(resp: reqwest::Response) -> Answer {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.unwrap_or_default();
    Answer {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

impl<A: App> TestServer<A> {
    /// `POST /agent/mint` as `user` (optionally for an existing session).
    pub async fn mint(&self, user: &str, session: Option<&str>) -> Minted {
        let body = match session {
            Some(s) => json!({ "session": s }),
            None => json!({}),
        };
        let a = self.post_json("/agent/mint", Some(user), None, &body).await;
        assert_eq!(a.status, 200, "mint failed: {:?}", a.body);
        Minted {
            token: a.body["token"].as_str().unwrap().to_string(),
            tid: a.body["tid"].as_str().unwrap().to_string(),
            session_id: a.body["sessionId"].as_str().unwrap().to_string(),
        }
    }

    /// A POST with a JSON body, as a user (identity header) and/or with a bearer token.
    pub async fn post_json(
        &self,
        path: &str,
        user: Option<&str>,
        token: Option<&str>,
        body: &Value,
    ) -> Answer {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(u) = user {
            req = req.header(USER_HEADER, u);
        }
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        answer(req.send().await.expect("request")).await
    }

    /// A GET as a user.
    pub async fn get(&self, path: &str, user: Option<&str>) -> Answer {
        let mut req = self.http.get(format!("{}{path}", self.base));
        if let Some(u) = user {
            req = req.header(USER_HEADER, u);
        }
        answer(req.send().await.expect("request")).await
    }

    /// A LAP call: `POST /agent/lap/v1<tail>` with the bearer token.
    pub async fn lap(&self, token: &str, tail: &str, body: &Value) -> Answer {
        self.post_json(&format!("/agent/lap/v1{tail}"), None, Some(token), body)
            .await
    }

    /// `POST /agent/lap/v1/state` with each malformed or unknown `Authorization` value (and
    /// none): each must answer 401 `auth-failed`.
    pub async fn assert_bad_bearers_refused(&self) {
        for auth in [
            None,
            Some("Basic x"),
            Some("Bearer agt_unknown"),
            Some("bearer x"),
        ] {
            let mut req = self.request(reqwest::Method::POST, "/agent/lap/v1/state");
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let a = self.send(req).await;
            assert_eq!(a.status, 401, "{auth:?}");
            assert_eq!(a.body, json!({"error":{"code":"auth-failed"}}), "{auth:?}");
        }
    }

    /// The same LAP call on a task of its own, for calls that wait (confirmations, long polls)
    /// while the test acts meanwhile.
    pub fn spawn_lap(
        &self,
        token: &str,
        tail: &str,
        body: Value,
    ) -> tokio::task::JoinHandle<Answer> {
        let request = self
            .http
            .post(format!("{}/agent/lap/v1{tail}", self.base))
            .header("content-type", "application/json")
            .bearer_auth(token)
            .body(body.to_string());
        tokio::spawn(async move { answer(request.send().await.expect("request")).await })
    }

    /// The pending confirmations of `m`'s session, as its owner `user` sees them.
    pub async fn pending(&self, user: &str, m: &Minted) -> Vec<Value> {
        let a = self
            .get(
                &format!("/agent/human/sessions/{}", m.session_id),
                Some(user),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
        a.body["pending"].as_array().expect("pending").clone()
    }

    /// Polls until `m`'s session has at least `n` pending confirmations; returns them.
    pub async fn wait_for_pending(&self, user: &str, m: &Minted, n: usize) -> Vec<Value> {
        for _ in 0..250 {
            let pending = self.pending(user, m).await;
            if pending.len() >= n {
                return pending;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("{n} pending confirmation(s) did not appear");
    }

    /// The id of the oldest pending confirmation, once there is one.
    pub async fn next_confirm_id(&self, user: &str, m: &Minted) -> String {
        self.wait_for_pending(user, m, 1).await[0]["id"]
            .as_str()
            .expect("confirmation id")
            .to_owned()
    }

    /// `POST /agent/human/sessions/{session}/confirms/{id}` with `body` as `user`.
    pub async fn decide(&self, user: &str, m: &Minted, id: &str, body: Value) -> (u16, Value) {
        let path = format!("/agent/human/sessions/{}/confirms/{id}", m.session_id);
        let a = self.post_json(&path, Some(user), None, &body).await;
        (a.status, a.body)
    }

    /// `POST /agent/human/sessions/{session}/dispatch {msg}` as `user`.
    pub async fn human_dispatch(&self, user: &str, m: &Minted, msg: Value) -> Answer {
        let path = format!("/agent/human/sessions/{}/dispatch", m.session_id);
        self.post_json(&path, Some(user), None, &json!({ "msg": msg }))
            .await
    }

    /// A raw request builder against the server.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base))
    }

    /// Sends a prepared request and parses the answer.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Answer {
        answer(req.send().await.expect("request")).await
    }
}
