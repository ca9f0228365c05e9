//! The command line shared by the runnable examples:
//! `cargo run --example <name> [--port N] [--rate-limit N/unit] [--db PATH|postgres://… | --memory]
//! [--cors-origin URL]…`.
//!
//! Sessions, tokens and the identity signing key are durable by default: a SQLite file
//! `<app name>.db` in the working directory (`--db PATH` another file, `--db postgres://…`
//! a PostgreSQL database shared by replicas, `--memory` nothing kept).

use std::future::IntoFuture as _;
use std::net::SocketAddr;

use agent_runtime::app::App;
use agent_runtime::security::loopback_hosts;
use agent_runtime::security::RateLimitSpec;
use agent_runtime::store::Stores;
use agent_runtime::{AgentServer, ServerOptions};

/// Options of an example server.
#[derive(Debug, Clone)]
pub struct ExampleOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Per-token LAP rate limit.
    pub rate_limit: RateLimitSpec,
    /// The store: `memory`, a SQLite path or a `postgres://` URL; `None` is the default
    /// SQLite file `<app name>.db` in the working directory.
    pub db: Option<String>,
    /// Origins whose pages may call the agent routes from the browser (`--cors-origin`,
    /// repeatable; `ServerOptions::cors_origins`).
    pub cors_origins: Vec<String>,
    /// Relay paired sessions only (the `relay` example): a bare mint is paired, a hosted mint
    /// is refused. Not a flag: the relay sets it.
    pub paired_only: bool,
}

/// Parses `--port N` and `--rate-limit N/unit` (also `--port=N`); `default_port` otherwise.
pub fn parse_args(
    args: impl IntoIterator<Item = String>,
    default_port: u16,
) -> Result<ExampleOptions, String> {
    let mut opts = ExampleOptions {
        port: default_port,
        rate_limit: ServerOptions::default().rate_limit,
        db: None,
        cors_origins: Vec::new(),
        paired_only: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--port" => {
                let v = value()?;
                opts.port = v.parse().map_err(|_| format!("invalid port {v:?}"))?;
            }
            "--rate-limit" => {
                let v = value()?;
                opts.rate_limit = v.parse().map_err(|e| format!("{e}"))?;
            }
            "--db" => {
                let v = value()?;
                if v.is_empty() {
                    return Err("--db needs a path or a postgres:// URL".into());
                }
                opts.db = Some(v);
            }
            "--memory" => opts.db = Some("memory".into()),
            "--cors-origin" => opts.cors_origins.push(value()?),
            "-h" | "--help" => {
                return Err(
                    "usage: [--port N (0 = any free port)] [--rate-limit N/second|minute|hour] \
                     [--db PATH|postgres://… (default <app>.db) | --memory] \
                     [--cors-origin URL (repeatable, e.g. http://localhost:5173)]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(opts)
}

fn server_options(opts: &ExampleOptions) -> ServerOptions {
    let mut options = ServerOptions::default();
    options.allow_anonymous = true;
    options.rate_limit = opts.rate_limit;
    // Only loopback names in `Host` (a DNS-rebinding page cannot reach the server).
    options.allowed_hosts = loopback_hosts();
    options.cors_origins = opts.cors_origins.clone();
    // The examples pair native apps (`tui-todo`, the Rust pairing client) besides pages.
    #[cfg(feature = "full")]
    {
        options.pairing.native_apps = true;
    }
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
    let mut builder = AgentServer::builder(app).options(server_options(opts));
    if spec != "memory" {
        let stores = Stores::open(&spec)
            .await
            .map_err(|e| format!("cannot open the store {spec:?}: {e}"))?;
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
        format!("http://{}", self.addr)
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

/// Binds `127.0.0.1:<opts.port>` and serves `app`'s agent surface on a tokio task.
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
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", opts.port)).await?;
    let addr = listener.local_addr()?;
    let stopping = server.clone();
    // Header-read, body-read and idle timeouts, TCP_NODELAY, the peer address for rate limits.
    let serve =
        agent_runtime::serve(listener, server.router()).with_graceful_shutdown(async move {
            stop.await;
            stopping.begin_shutdown();
        });
    let task = tokio::spawn(serve.into_future());
    Ok(RunningExample { server, addr, task })
}

/// Runs an example: parses the command line, binds `127.0.0.1`, prints one line with the
/// base URL and the console, and serves until interrupted.
pub async fn run<A: App>(app: A, default_port: u16) {
    serve_until_interrupted(app, command_line(default_port)).await;
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

/// The command line's options; exits 2 with the usage when it does not read.
fn command_line(default_port: u16) -> ExampleOptions {
    match parse_args(std::env::args().skip(1), default_port) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}

async fn serve_until_interrupted<A: App>(app: A, opts: ExampleOptions) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .try_init();
    // SIGTERM (an orchestrator, `kill`) or Ctrl-C: a graceful shutdown.
    let running = match start_until(app, &opts, agent_runtime::shutdown_signal()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot serve on 127.0.0.1:{}: {e}", opts.port);
            std::process::exit(1);
        }
    };
    println!("{}", running.banner());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_port_and_rate_limit() {
        let o = parse_args(args(&["--port", "0", "--rate-limit=5/second"]), 8787).unwrap();
        assert!(o.cors_origins.is_empty());
        let cors = parse_args(
            args(&[
                "--cors-origin",
                "http://localhost:5173",
                "--cors-origin=https://app.example",
            ]),
            8787,
        )
        .unwrap();
        assert_eq!(
            cors.cors_origins,
            ["http://localhost:5173", "https://app.example"]
        );
        assert_eq!(o.port, 0);
        assert_eq!(o.rate_limit.to_string(), "5/second");
        assert_eq!(parse_args(args(&[]), 8787).unwrap().port, 8787);
        assert!(parse_args(args(&["--port"]), 1).is_err());
        assert!(parse_args(args(&["--rate-limit", "0/minute"]), 1).is_err());
        assert!(parse_args(args(&["--bogus"]), 1).is_err());
        assert_eq!(parse_args(args(&[]), 1).unwrap().db, None);
        assert_eq!(
            parse_args(args(&["--memory"]), 1).unwrap().db.as_deref(),
            Some("memory")
        );
        assert_eq!(
            parse_args(args(&["--db", "x.db"]), 1)
                .unwrap()
                .db
                .as_deref(),
            Some("x.db")
        );
        assert!(parse_args(args(&["--db="]), 1).is_err());
    }
}
