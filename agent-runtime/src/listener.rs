//! [`serve`]: `axum::serve` with the timeouts a server exposed to untrusted clients needs.
//!
//! `axum::serve` sets no timer, so a connection that sends half its headers, or a body that
//! never finishes, is held forever (and enough of them exhaust the file descriptors). [`serve`]
//! accepts on a `TcpListener` and serves each connection with hyper-util's HTTP/1 + HTTP/2
//! builder and:
//!
//! - a **header-read timeout** (default 30 s): the whole request head must arrive within it; on
//!   HTTP/1 it also bounds how long an idle keep-alive connection waits for its next request.
//!   The connection's one watchdog timer checks it (and the idle timeout) every quarter of the
//!   shorter of the two, so a stalled connection is closed within 1.25 times its timeout and a
//!   request arms no timer of its own;
//! - a **body-read timeout** (default 30 s): a request body that produces no data for this long
//!   fails, the handler answers (400 `invalid`, or 413 on an over-long body) and the connection
//!   is closed. Its timer is armed only while the body waits for bytes: a body that came with
//!   its head, as nearly every API call's does, costs no timer (registering one takes the
//!   runtime's timer lock, which the worker threads contend for under load);
//! - an **idle timeout** (default 5 min): a connection on which nothing was read or written for
//!   this long is closed, whatever it is doing. It must exceed the longest quiet answer the app
//!   serves (the LAP long polls wait at most `ServerOptions::max_wait`, 2 min by default; the
//!   event streams send a keep-alive comment well within it).
//!
//! Every accepted socket gets `TCP_NODELAY` (without it the end of each streamed answer waits
//! ~40 ms for the client's delayed ACK), and every request carries the peer address as axum's
//! `ConnectInfo<SocketAddr>`, which the runtime reads for rate-limit keys.
//!
//! ```no_run
//! # async fn run(app: axum::Router) -> std::io::Result<()> {
//! use std::time::Duration;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! tea_agent_runtime::serve(listener, app)
//!     .header_read_timeout(Duration::from_secs(10))
//!     .await
//! # }
//! ```

use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt as _;

mod body_timeout;
mod watchdog;

use body_timeout::ReadTimeoutBody;
use watchdog::{Activity, ActivityIo, Served, Serving};

/// Default of [`Serve::header_read_timeout`].
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`Serve::body_read_timeout`].
pub(crate) const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`Serve::idle_timeout`].
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of [`Serve::shutdown_timeout`].
pub(crate) const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// A future that resolves when the server should stop.
type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Serves `router` on `listener` with a header-read, a body-read and an idle timeout,
/// `TCP_NODELAY` on every connection, and the peer address in each request as axum's
/// `ConnectInfo<SocketAddr>` (the rate limits' key).
///
/// The returned [`Serve`] is a future (through `IntoFuture`) that runs until its
/// [graceful shutdown](Serve::with_graceful_shutdown) signal, if any; configure it first with
/// its methods.
pub fn serve(listener: TcpListener, router: Router) -> Serve {
    Serve {
        listener,
        router,
        header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
        body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
        idle_timeout: DEFAULT_IDLE_TIMEOUT,
        shutdown: None,
        shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
    }
}

/// A server being configured; `.await` it to run. Built by [`serve`].
#[must_use = "a Serve does nothing until awaited"]
pub struct Serve {
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    idle_timeout: Duration,
    shutdown: Option<Signal>,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("graceful_shutdown", &self.shutdown.is_some())
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

impl Serve {
    /// Time allowed for a whole request head (HTTP/1; also the keep-alive wait for the next
    /// request). Default 30 s.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Longest wait for the next piece of a request body. Default 30 s.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// A connection on which nothing is read or written for this long is closed. Default
    /// 5 minutes.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Stops when `signal` resolves: no new connection is accepted, every connection is told
    /// to finish (HTTP/1 closes after the response in flight, HTTP/2 sends `GOAWAY`), and the
    /// future completes when they are all done or after [`Self::shutdown_timeout`], whichever
    /// comes first (the rest are then dropped). With
    /// [`AgentServer::begin_shutdown`](crate::AgentServer::begin_shutdown) in `signal`, long
    /// polls and event streams end at once instead of holding their connection to the deadline.
    pub fn with_graceful_shutdown(
        mut self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    /// How long a graceful shutdown waits for open connections. Default 30 s.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    async fn run(mut self) -> io::Result<()> {
        let mut builder = Builder::new(TokioExecutor::new());
        // The header-read timeout is the connection's watchdog's (`Activity::watch`), not
        // hyper's: hyper arms a timer for every request head, and registering one takes the
        // runtime's timer lock, which the worker threads contend for under load.
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(None);
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(None);
        let builder = Arc::new(builder);
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut signal: Signal = self
            .shutdown
            .take()
            .unwrap_or_else(|| Box::pin(std::future::pending()));
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut signal => break,
            };
            let (tcp, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::error!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let connection = Connection {
                builder: builder.clone(),
                router: self.router.clone(),
                body_read_timeout: self.body_read_timeout,
                header_read_timeout: self.header_read_timeout,
                idle_timeout: self.idle_timeout,
                watcher: graceful.watcher(),
            };
            tokio::spawn(connection.run(tcp, peer));
        }
        // Stop accepting, then let the open connections finish, up to the deadline.
        drop(self.listener);
        if tokio::time::timeout(self.shutdown_timeout, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                "graceful shutdown: connections still open after {:?}; dropping them",
                self.shutdown_timeout
            );
        }
        Ok(())
    }
}

impl IntoFuture for Serve {
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

struct Connection {
    builder: Arc<Builder<TokioExecutor>>,
    router: Router,
    body_read_timeout: Duration,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    /// Tells the connection to finish when the server shuts down gracefully.
    watcher: hyper_util::server::graceful::Watcher,
}

impl Connection {
    async fn run(self, tcp: TcpStream, peer: SocketAddr) {
        let activity = Activity::new();
        let io = TokioIo::new(ActivityIo {
            inner: tcp,
            activity: activity.clone(),
        });
        let router = self.router;
        let body_timeout = self.body_read_timeout;
        let requests = activity.clone();
        let service = tower::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            // Counted from the head's arrival until the answer's body is dropped (written, or
            // the call given up): while it is, the connection waits for no head.
            let serving = Serving::start(&requests, request.version());
            let mut request = request.map(|body| {
                Body::new(ReadTimeoutBody {
                    body,
                    timeout: body_timeout,
                    sleep: None,
                })
            });
            request.extensions_mut().insert(ConnectInfo(peer));
            let answer = router.clone().oneshot(request);
            async move {
                let response = answer.await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| Served {
                    body,
                    _serving: serving,
                }))
            }
        });
        let connection = self.watcher.watch(
            self.builder
                .serve_connection_with_upgrades(io, TowerToHyperService::new(service))
                .into_owned(),
        );
        tokio::select! {
            result = connection => {
                if let Err(e) = result {
                    tracing::debug!("connection from {peer} ended: {e}");
                }
            }
            why = activity.watch(self.header_read_timeout, self.idle_timeout) => {
                tracing::debug!("closing connection from {peer}: {why}");
            }
        }
    }
}

/// Resolves when the process is asked to stop: SIGTERM (an orchestrator, `kill`) or Ctrl-C
/// (SIGINT), whichever comes first. For [`Serve::with_graceful_shutdown`]. If a handler
/// cannot be installed, only the other one is waited for (and a warning is logged).
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("stop signal received: shutting down");
}
