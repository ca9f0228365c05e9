//! The pairing client (feature `pairing-client`): hosts an app's session in this process and
//! pairs it with a server by URL + token (`docs/pairing.md`), so an agent that talks to the server
//! drives an app it cannot reach. The app is the same [`App`] a server would host: its
//! validation, affordances, confirmations and diff run here, through the [`Session`] handle
//! the host app also uses for its own UI (approving proposals with [`Session::approve`],
//! dispatching the user's actions, reading the state).
//!
//! After a drop the client reconnects with the same token (1 s, 2 s, 4 s … at most 30 s,
//! giving up after 5 minutes by default); a token the server no longer pairs is claimed again
//! with `/agent/resume/claim` when [`PairingConfig::claim`] says how.
//!
//! ```no_run
//! # use tea_agent_runtime::{app::App, Host};
//! # use tea_agent_runtime::pairing::client::{PairingClient, PairingConfig};
//! # async fn pair<A: App>(app: A) -> Result<(), Box<dyn std::error::Error>> {
//! let host = Host::new(app)?;
//! let session = host.create_session(None)?;
//! let config = PairingConfig::new("http://127.0.0.1:8788", "agt_…");
//! let client = PairingClient::new(&host, session.clone(), config).spawn();
//! // … the app's own UI uses `session`; `client.status()` tells whether an agent is on.
//! client.stop().await;
//! # Ok(()) }
//! ```

mod answer;
mod socket;

use std::time::Duration;

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;

use crate::app::App;
use crate::engine::host::Host;
use crate::engine::session::Session;
use crate::ops::hosted::HostedSession;
use crate::ops::IdempotencyStore;
use crate::ops::ServerOptions;

/// Reconnection delays: doubling from `initial` up to `max`, giving up after `give_up`
/// without a successful pairing.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first delay (default 1 s).
    pub initial: Duration,
    /// The longest delay (default 30 s).
    pub max: Duration,
    /// Stop trying after this long without a pairing (default 5 min).
    pub give_up: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
            give_up: Duration::from_secs(300),
        }
    }
}

/// How to claim the session again when the server no longer takes the token
/// (`POST /agent/resume/claim {tid}` with the identity that minted it).
#[derive(Debug, Clone)]
pub struct Claim {
    /// The token id (from the mint answer).
    pub tid: String,
    /// Headers that carry the identity (a cookie, an auth header).
    pub headers: Vec<(String, String)>,
}

/// Where and how to pair.
#[derive(Debug, Clone)]
pub struct PairingConfig {
    /// The server's base URL (`http://host:port`), or the `ws://…/agent/ws` URL itself.
    pub url: String,
    /// The bearer token (`agt_…`) minted for a paired session.
    pub token: String,
    /// Reconnection delays.
    pub backoff: Backoff,
    /// Claiming the session again when the token is refused.
    pub claim: Option<Claim>,
}

impl PairingConfig {
    /// Pairs with the server at `url` with `token`, default backoff, no claim.
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Self {
        PairingConfig {
            url: url.into(),
            token: token.into(),
            backoff: Backoff::default(),
            claim: None,
        }
    }

    /// The `ws(s)://…/agent/ws` URL.
    fn ws_base(&self) -> String {
        let url = self.url.trim_end_matches('/');
        if url.starts_with("ws://") || url.starts_with("wss://") {
            return url.to_string();
        }
        let url = if let Some(rest) = url.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if let Some(rest) = url.strip_prefix("http://") {
            format!("ws://{rest}")
        } else {
            format!("ws://{url}")
        };
        format!("{url}{}", super::socket_path())
    }

    /// The `http(s)://` base of the server.
    fn http_base(&self) -> String {
        let ws = self.ws_base();
        let base = ws.trim_end_matches(super::socket_path());
        if let Some(rest) = base.strip_prefix("wss://") {
            format!("https://{rest}")
        } else {
            format!("http://{}", base.trim_start_matches("ws://"))
        }
    }
}

/// A token minted for a paired session by [`mint`].
#[derive(Clone)]
pub struct Minted {
    /// The bearer (`agt_…`): the app pairs with it and the agent calls LAP with it.
    pub token: String,
    /// The token id.
    pub tid: String,
    /// The LAP base URL to give the agent.
    pub lap_url: String,
    /// The identity cookie the server issued (anonymous minting), for claiming later.
    pub cookie: Option<String>,
}

impl std::fmt::Debug for Minted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minted")
            .field("tid", &self.tid)
            .field("lap_url", &self.lap_url)
            .finish_non_exhaustive()
    }
}

impl Minted {
    /// A configuration that pairs with `url` using this token, and claims the session again
    /// with the same identity when the token is refused.
    pub fn config(&self, url: impl Into<String>) -> PairingConfig {
        let mut config = PairingConfig::new(url, self.token.clone());
        config.claim = Some(Claim {
            tid: self.tid.clone(),
            headers: self
                .cookie
                .iter()
                .map(|c| ("cookie".to_string(), c.clone()))
                .collect(),
        });
        config
    }
}

/// `POST /agent/mint {"paired": true}` on the server at `url` (with `headers` for the
/// identity, if the server needs one; anonymous minting when it allows it).
pub async fn mint(url: &str, headers: &[(String, String)]) -> Result<Minted, String> {
    let config = PairingConfig::new(url, "");
    let mut request = reqwest::Client::new()
        .post(format!("{}/agent/mint", config.http_base()))
        .header("content-type", "application/json")
        .body(r#"{"paired":true}"#)
        .timeout(Duration::from_secs(30));
    for (k, v) in headers {
        request = request.header(k, v);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let cookie = response
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_string);
    let body: Value = response.json().await.map_err(|e| e.to_string())?;
    let field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
    match (status.is_success(), field("token"), field("tid")) {
        (true, Some(token), Some(tid)) => Ok(Minted {
            token,
            tid,
            lap_url: field("lapUrl").unwrap_or_default(),
            cookie,
        }),
        _ => Err(format!("mint refused ({status}): {body}")),
    }
}

/// Where the pairing stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingStatus {
    /// Connecting (or waiting to reconnect).
    Connecting,
    /// The socket is open and the server answered `hello`.
    Paired,
    /// An agent drives the session (the server pushed `active`).
    Active,
    /// The session was revoked; the client stopped.
    Revoked,
    /// The client stopped: the token was refused, or it gave up reconnecting.
    Stopped(String),
}

/// Pairs one session with a server.
pub struct PairingClient<A: App> {
    session: Session<A>,
    /// The operations of `session`, as a server hosting it would answer them.
    hosted: Arc<HostedSession<A>>,
    /// The keyed messages answered, so a repeated key gets its first answer.
    keys: Arc<IdempotencyStore>,
    describe: Value,
    config: PairingConfig,
}

impl<A: App> PairingClient<A> {
    /// A client for `session` (a session of `host`).
    pub fn new(host: &Host<A>, session: Session<A>, config: PairingConfig) -> Self {
        // Waits are clamped as a server with default options clamps them.
        let max_wait_ms = ServerOptions::default().max_wait_ms();
        PairingClient {
            hosted: Arc::new(HostedSession::new(
                session.clone(),
                host.clone(),
                max_wait_ms,
            )),
            keys: Arc::new(IdempotencyStore::new(
                host.config(),
                host.retained().clone(),
            )),
            session,
            describe: host.describe().clone(),
            config,
        }
    }

    /// Runs the pairing on its own task until revoked, refused, out of retries, or stopped.
    pub fn spawn(self) -> PairingHandle {
        let (status_tx, status) = watch::channel(PairingStatus::Connecting);
        let (stop_tx, stop_rx) = watch::channel(false);
        let (token_tx, token) = watch::channel(self.config.token.clone());
        let task = tokio::spawn(socket::run(
            self.session,
            self.hosted,
            self.keys,
            self.describe,
            self.config,
            socket::Reports {
                status: status_tx,
                token: token_tx,
            },
            stop_rx,
        ));
        PairingHandle {
            status,
            token,
            stop: stop_tx,
            task,
        }
    }
}

/// A running pairing.
pub struct PairingHandle {
    status: watch::Receiver<PairingStatus>,
    token: watch::Receiver<String>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl PairingHandle {
    /// The current status, to watch (`changed().await`).
    pub fn status(&self) -> watch::Receiver<PairingStatus> {
        self.status.clone()
    }

    /// The bearer the client pairs with, to watch: the configured one, then the one each claim
    /// rotated it to (`docs/pairing.md` §The Rust pairing client). The app and its agent share
    /// the bearer, and a claim ends the old one for both: when it changes, the app shows the new
    /// one to the person, who hands it to the agent (`docs/security.md` §Resuming after the
    /// grace window).
    pub fn token(&self) -> watch::Receiver<String> {
        self.token.clone()
    }

    /// Waits until the status satisfies `f` or `timeout` passes; answers the last status.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        f: impl Fn(&PairingStatus) -> bool,
    ) -> PairingStatus {
        let mut rx = self.status.clone();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|s| f(s))).await;
        let status = rx.borrow().clone();
        status
    }

    /// Closes the socket and stops the client.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}
