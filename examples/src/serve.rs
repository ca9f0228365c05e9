//! How the runnable examples start: their command line ([`crate::config`]; `cargo run
//! --example <name> -- --help` lists it), the store, the server, a graceful shutdown.
//!
//! Sessions, tokens and the identity signing key are durable by default: a SQLite file
//! `<app name>.db` in the working directory (`--db PATH` another file, `--db postgres://…`
//! a PostgreSQL database shared by replicas, `--memory` nothing kept).

use std::future::IntoFuture as _;
use std::net::SocketAddr;

use clap::Parser as _;
use tea_agent_runtime::app::App;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::{AgentServer, ServerOptions};

pub use crate::config::{parse_args, ExampleArgs, ExampleOptions};

fn server_options(opts: &ExampleOptions) -> ServerOptions {
    #[allow(unused_mut)]
    let mut options = opts.server.clone();
    #[cfg(feature = "full")]
    if opts.paired_only {
        // A bare mint (LLui's client) starts a paired session; nothing is hosted here.
        options.pairing.mint_paired = true;
        options.pairing.hosted_mints = false;
    }
    options
}

/// The store spec of `opts` for `app` (the default SQLite file is `<app name>.db`).
pub fn store_spec<A: App>(app: &A, opts: &ExampleOptions) -> String {
    opts.db
        .clone()
        .unwrap_or_else(|| format!("{}.db", app.name()))
}

/// Builds the agent surface for `app` on the store `opts` names (sessions, tokens and the
/// identity signing key in it; nothing kept for `memory`), with anonymous minting on (local
/// use).
pub async fn agent_server<A: App>(app: A, opts: &ExampleOptions) -> Result<AgentServer<A>, String> {
    let spec = store_spec(&app, opts);
    let mut builder = AgentServer::builder(app)
        .options(server_options(opts))
        .host_config(opts.host.clone());
    if spec != "memory" {
        let stores = Stores::open(&spec)
            .await
            .map_err(|e| format!("--db {spec}: cannot open the store: {e}"))?;
        builder = builder.stores(&stores);
    }
    builder.build().await.map_err(|e| e.to_string())
}

/// A running example server.
pub struct RunningExample<A: App> {
    /// The agent surface (host, token store, …).
    pub server: AgentServer<A>,
    /// The bound address.
    pub addr: SocketAddr,
    /// The serving task (ends on a server error, or after a graceful shutdown).
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl<A: App> RunningExample<A> {
    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        // Listening on every address: name the loopback one, which always works here.
        let shown = match self.addr.ip() {
            std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::from(([127, 0, 0, 1], self.addr.port()))
            }
            std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, self.addr.port()))
            }
            _ => self.addr,
        };
        format!("http://{shown}")
    }

    /// The one line an example prints when it is up: the base URL, the console and MCP (for the
    /// relay: where an LLui app points its agent connection).
    pub fn banner(&self) -> String {
        let base = self.base_url();
        #[cfg(feature = "full")]
        if !self.server.options().pairing.hosted_mints {
            return format!(
                "relay is running at {base} — point an LLui app's agentBasePath at {base}/agent \
                 (and run the relay with --cors-origin <the app's origin>); agents connect at \
                 {base}/agent/mcp; the console is {base}/agent/console"
            );
        }
        format!(
            "{} is running at {base} — open {base}/agent/console to mint a token and watch; MCP at {base}/agent/mcp",
            self.server.host().app().name()
        )
    }
}

/// Binds `opts.bind` and serves `app`'s agent surface on a tokio task.
pub async fn start<A: App>(app: A, opts: &ExampleOptions) -> std::io::Result<RunningExample<A>> {
    start_until(app, opts, std::future::pending()).await
}

/// [`start`], shutting down gracefully when `stop` resolves (`docs/operations.md`
/// §Shutdown): the server begins its shutdown, the open connections finish (30 s at most),
/// and the task ends; then call [`AgentServer::finish_shutdown`].
pub async fn start_until<A: App>(
    app: A,
    opts: &ExampleOptions,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<RunningExample<A>> {
    let server = agent_server(app, opts)
        .await
        .map_err(std::io::Error::other)?;
    let listener = tokio::net::TcpListener::bind(opts.bind)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("--bind {}: {e}", opts.bind)))?;
    let addr = listener.local_addr()?;
    let stopping = server.clone();
    // Header-read, body-read and idle timeouts, TCP_NODELAY, the peer address for rate limits.
    let serve =
        tea_agent_runtime::serve(listener, server.router()).with_graceful_shutdown(async move {
            stop.await;
            stopping.begin_shutdown();
        });
    let task = tokio::spawn(serve.into_future());
    Ok(RunningExample { server, addr, task })
}

/// Runs an example: reads the command line and the environment, binds, prints one line with the
/// base URL and the console, and serves until interrupted.
pub async fn run<A: App>(app: A, default_port: u16) {
    serve_until_interrupted(app, command_line(default_port)).await;
}

/// Runs `app` as [`run`] does, with OAuth on `/agent/mcp` (`docs/authorization.md`): an MCP
/// client (Claude's connectors, Claude Code) connects by the person's consent in the browser,
/// no token pasted. The issuer is the request's origin unless the config file names one
/// (`[server.oauth] issuer`); `agt_` bearers keep working beside it.
#[cfg(feature = "full")]
pub async fn run_with_oauth<A: App>(app: A, default_port: u16) {
    let mut opts = command_line(default_port);
    opts.server.oauth.enabled = true;
    serve_until_interrupted(app, opts).await;
}

/// Runs the relay example: the command line of the others, paired sessions only.
#[cfg(feature = "full")]
pub async fn run_relay(default_port: u16) {
    let opts = ExampleOptions {
        paired_only: true,
        ..command_line(default_port)
    };
    serve_until_interrupted(crate::relay::Relay, opts).await;
}

/// The command line's options. `--help` and `--version` print and exit 0; a setting that does
/// not read prints one line naming it and exits 2.
fn command_line(default_port: u16) -> ExampleOptions {
    let args = ExampleArgs::try_parse().unwrap_or_else(|e| e.exit());
    crate::config::resolve(args, default_port).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    })
}

async fn serve_until_interrupted<A: App>(app: A, opts: ExampleOptions) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .try_init();
    let metrics = match opts.metrics_bind {
        Some(addr) => match crate::metrics::serve_metrics(addr).await {
            Ok(endpoint) => Some(endpoint),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        },
        None => None,
    };
    // SIGTERM (an orchestrator, `kill`) or Ctrl-C: a graceful shutdown.
    let running = match start_until(app, &opts, tea_agent_runtime::shutdown_signal()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!("{}", running.banner());
    if let Some(metrics) = &metrics {
        println!(
            "metrics (Prometheus text) at http://{}/metrics",
            metrics.addr
        );
    }
    match running.task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("server error: {e}"),
        Err(e) => eprintln!("server task failed: {e}"),
    }
    // What the store and the audit sink hold back is written before the process ends.
    if let Err(e) = running.server.finish_shutdown().await {
        eprintln!("shutdown: {e}");
        std::process::exit(1);
    }
}
