//! The examples' configuration (`docs/operations.md` §Configuration): flags, each with an
//! environment variable, over an optional TOML file (`--config`), over the examples' defaults.
//!
//! A file holds the library's option structs as tables: `[server]` is
//! [`ServerOptions`] (with `[server.mcp]` and `[server.pairing]`), `[host]` is
//! [`HostConfig`]; every key is optional, an unknown one is an error that names it. A flag or
//! its environment variable wins over the file. Whatever does not read stops start-up with one
//! line that names the setting.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use serde::Deserialize;
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::security::{RateLimitSpec, TrustProxy};
use tea_agent_runtime::ServerOptions;

/// The command line of `counter`, `todo` and `relay` (`--help` lists it with the environment
/// variables).
#[derive(Debug, Clone, Parser)]
#[command(
    version,
    about = "An example app with the agent surface (LAP, MCP, the console).",
    args_override_self = true
)]
pub struct ExampleArgs {
    /// Address to listen on, IP:PORT or IP [default: 127.0.0.1 and the example's port]. An
    /// address beyond loopback needs --allowed-host.
    #[arg(long, env = "AGENT_BIND", value_name = "ADDR", value_parser = bind_address)]
    pub bind: Option<BindAddress>,
    /// The port to listen on, whatever --bind says (0 picks a free one).
    #[arg(long, env = "AGENT_PORT")]
    pub port: Option<u16>,
    /// A host name clients reach the server by (`Host` header; repeatable, or comma-separated
    /// in the environment; `*` accepts any) [default: localhost, 127.0.0.1, ::1].
    #[arg(
        long = "allowed-host",
        env = "AGENT_ALLOWED_HOSTS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// Trusted appending proxies in front of the server (their `X-Forwarded-For` entries give
    /// the client address) [default: 0].
    #[arg(long, env = "AGENT_TRUST_PROXY", value_name = "N")]
    pub trust_proxy: Option<u32>,
    /// An origin whose pages may call the agent routes from the browser (repeatable, or
    /// comma-separated in the environment), e.g. http://localhost:5173.
    #[arg(
        long = "cors-origin",
        env = "AGENT_CORS_ORIGINS",
        value_name = "URL",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// The store: a SQLite file or a postgres:// URL [default: counter.db, todo.db or
    /// relay.db in the working directory].
    #[arg(long, env = "AGENT_DB", value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Keep nothing: sessions and tokens live in memory.
    #[arg(long, conflicts_with = "db")]
    pub memory: bool,
    /// Per-token LAP rate limit, N/second|minute|hour [default: 30/minute].
    #[arg(long, env = "AGENT_RATE_LIMIT", value_name = "N/UNIT")]
    pub rate_limit: Option<RateLimitSpec>,
    /// A token unused this long expires (e.g. 1h; 0 = never) [default: 1h].
    #[arg(long, env = "AGENT_SLIDING_TTL", value_name = "DURATION", value_parser = duration)]
    pub sliding_ttl: Option<Duration>,
    /// A token expires this long after its mint, whatever its use (e.g. 7days) [default: 24h].
    #[arg(long, env = "AGENT_HARD_EXPIRY", value_name = "DURATION", value_parser = duration)]
    pub hard_expiry: Option<Duration>,
    /// A session unused this long is closed in memory (e.g. 30m; 0 = never) [default: 30m].
    #[arg(long, env = "AGENT_SESSION_IDLE", value_name = "DURATION", value_parser = duration)]
    pub session_idle: Option<Duration>,
    /// A stored session unused this long is deleted (e.g. 30days; 0 = never) [default:
    /// 30days].
    #[arg(
        long,
        env = "AGENT_STORED_SESSION_TTL",
        value_name = "DURATION",
        value_parser = duration
    )]
    pub stored_session_ttl: Option<Duration>,
    /// Serve the metrics in Prometheus text at GET /metrics on this address (IP:PORT), apart
    /// from the agent routes [default: none].
    #[arg(long, env = "AGENT_METRICS_BIND", value_name = "ADDR")]
    pub metrics_bind: Option<SocketAddr>,
    /// The base URL the other replicas of a fleet reach this one at (e.g.
    /// http://10.0.0.5:8789): a paired session's calls arriving on another replica are carried
    /// here when this one holds its socket. Needs a postgres:// store and AGENT_FLEET_SECRET
    /// (`docs/operations.md` §Several replicas behind a load balancer) [default: none].
    #[cfg(feature = "postgres")]
    #[arg(long, env = "AGENT_FLEET_ADDRESS", value_name = "URL")]
    pub fleet_address: Option<String>,
    /// The key every replica of the fleet shares (at least 32 characters); prefer the
    /// environment variable, which `ps` does not show.
    #[cfg(feature = "postgres")]
    #[arg(
        long,
        env = "AGENT_FLEET_SECRET",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub fleet_secret: Option<String>,
    /// A TOML file of options: `[server]` (ServerOptions, with `[server.mcp]` and
    /// `[server.pairing]`) and `[host]` (HostConfig); flags win over it.
    #[arg(long, env = "AGENT_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// What `--bind` names: an address, or an IP whose port comes from `--port` or the example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindAddress {
    /// `IP:PORT`.
    Socket(SocketAddr),
    /// `IP` alone.
    Ip(IpAddr),
}

fn bind_address(text: &str) -> Result<BindAddress, String> {
    let text = text.trim();
    text.parse()
        .map(BindAddress::Socket)
        .or_else(|_| text.parse().map(BindAddress::Ip))
        .map_err(|_| {
            format!("{text:?} is neither IP:PORT nor an IP (e.g. 0.0.0.0:8788, [::]:8788)")
        })
}

/// `30s`, `10m`, `1h 30m`, `30days`; a bare `0` is zero.
fn duration(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(text).map_err(|e| format!("{e} (write e.g. 90s, 10m, 1h, 30days)"))
}

/// A `--config` file.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    server: ServerOptions,
    host: HostConfig,
}

/// Options of an example server, resolved from [`ExampleArgs`].
#[derive(Debug, Clone)]
pub struct ExampleOptions {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// The store: `memory`, a SQLite path or a `postgres://` URL; `None` is the default
    /// SQLite file `<app name>.db` in the working directory.
    pub db: Option<String>,
    /// The HTTP surface's options (anonymous minting and native pairing on, unless a file
    /// says otherwise).
    pub server: ServerOptions,
    /// The host's options.
    pub host: HostConfig,
    /// Relay paired sessions only (the `relay` example): a bare mint is paired, a hosted mint
    /// is refused. Not a flag: the relay sets it.
    pub paired_only: bool,
    /// Where to serve the metrics (`--metrics-bind`).
    pub metrics_bind: Option<SocketAddr>,
}

impl ExampleOptions {
    /// The port listened on (0: a free one is picked at bind).
    pub fn port(&self) -> u16 {
        self.bind.port()
    }
}

/// Parses `args` (without the program name) and the `AGENT_*` environment, reads the
/// `--config` file if any; `default_port` is the example's port. `Err` is one line naming the
/// setting that does not read (or, for `--help` and `--version`, their text).
pub fn parse_args(
    args: impl IntoIterator<Item = String>,
    default_port: u16,
) -> Result<ExampleOptions, String> {
    let program = std::iter::once("example".to_string());
    let args = ExampleArgs::try_parse_from(program.chain(args))
        .map_err(|e| e.render().to_string().trim_end().to_string())?;
    resolve(args, default_port)
}

/// The options `args` ask for.
pub fn resolve(args: ExampleArgs, default_port: u16) -> Result<ExampleOptions, String> {
    let file = match &args.config {
        Some(path) => read_config(path)?,
        None => examples_defaults(toml::Table::new())
            .try_into()
            .map_err(|e| format!("the examples' defaults: {e}"))?,
    };
    let (mut server, mut host) = (file.server, file.host);
    let mut bind = match args.bind {
        Some(BindAddress::Socket(addr)) => addr,
        Some(BindAddress::Ip(ip)) => SocketAddr::new(ip, default_port),
        None => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), default_port),
    };
    if let Some(port) = args.port {
        bind.set_port(port);
    }
    if !args.allowed_hosts.is_empty() {
        // `*` alone: any `Host` (an empty list).
        let hosts: Vec<String> = args
            .allowed_hosts
            .iter()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty() && h != "*")
            .collect();
        server.allowed_hosts = hosts.clone();
        #[cfg(feature = "full")]
        {
            server.mcp.allowed_hosts = hosts;
        }
    } else if !bind.ip().is_loopback() && args.config.is_none() {
        return Err(format!(
            "--bind {bind}: an address beyond loopback needs the host names clients use, \
             --allowed-host NAME (AGENT_ALLOWED_HOSTS), or --allowed-host '*' to accept any"
        ));
    }
    if let Some(n) = args.trust_proxy {
        server.trust_proxy = TrustProxy::hops(n);
    }
    if !args.cors_origins.is_empty() {
        for origin in &args.cors_origins {
            check_origin(origin)?;
        }
        server.cors_origins = args.cors_origins.clone();
    }
    if let Some(rate) = args.rate_limit {
        server.rate_limit = rate;
    }
    if let Some(ttl) = args.sliding_ttl {
        server.sliding_ttl = (!ttl.is_zero()).then_some(ttl);
    }
    if let Some(expiry) = args.hard_expiry {
        if expiry.is_zero() {
            return Err("--hard-expiry: give a lifetime longer than zero (e.g. 24h)".into());
        }
        server.hard_expiry = expiry;
    }
    #[cfg(feature = "postgres")]
    {
        if let Some(address) = &args.fleet_address {
            server.pairing.fleet_address = Some(address.clone());
        }
        if let Some(secret) = &args.fleet_secret {
            server.pairing.fleet_secret = Some(secret.clone());
        }
    }
    if let Some(idle) = args.session_idle {
        host.session_idle = idle;
    }
    if let Some(ttl) = args.stored_session_ttl {
        host.stored_session_ttl = ttl;
    }
    let db = if args.memory {
        Some("memory".to_string())
    } else {
        match args.db {
            Some(db) if db.trim().is_empty() => {
                return Err("--db: give a SQLite file or a postgres:// URL".into())
            }
            other => other,
        }
    };
    Ok(ExampleOptions {
        bind,
        db,
        server,
        host,
        paired_only: false,
        metrics_bind: args.metrics_bind,
    })
}

/// The examples' defaults where the file is silent: anonymous minting (the console mints
/// for whoever opens it) and native pairing (`tui-todo`).
fn examples_defaults(mut table: toml::Table) -> toml::Table {
    let server = table
        .entry("server")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(server) = server {
        server
            .entry("allow_anonymous")
            .or_insert(toml::Value::Boolean(true));
        #[cfg(feature = "full")]
        if let toml::Value::Table(pairing) = server
            .entry("pairing")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            pairing
                .entry("native_apps")
                .or_insert(toml::Value::Boolean(true));
        }
    }
    // The examples record their agents' runs, so the console can export them
    // (`HostConfig::transcripts`, off in the library).
    if let toml::Value::Table(host) = table
        .entry("host")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
    {
        host.entry("transcripts")
            .or_insert(toml::Value::Boolean(true));
    }
    table
}

fn read_config(path: &std::path::Path) -> Result<ConfigFile, String> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--config {shown}: cannot read: {e}"))?;
    // Read once as written, for errors that point at their line; then again with the
    // examples' defaults where the file is silent.
    toml::from_str::<ConfigFile>(&text).map_err(|e| one_line(&shown, &text, e))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| one_line(&shown, &text, e))?;
    examples_defaults(table)
        .try_into()
        .map_err(|e| one_line(&shown, &text, e))
}

/// A TOML error as one line: `--config FILE:LINE: <the line>: <message>`.
fn one_line(path: &impl std::fmt::Display, text: &str, e: toml::de::Error) -> String {
    let message = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return format!("--config {path}: {message}");
    };
    let start = span.start.min(text.len());
    let number = text[..start].matches('\n').count() + 1;
    let line: String = text[..start]
        .rsplit('\n')
        .next()
        .into_iter()
        .chain(text[start..].split('\n').next())
        .collect::<String>()
        .trim()
        .chars()
        .take(80)
        .collect();
    format!("--config {path}:{number}: `{line}`: {message}")
}

/// An origin is `scheme://host[:port]`, exactly as a browser sends it.
fn check_origin(origin: &str) -> Result<(), String> {
    let ok = origin.split_once("://").is_some_and(|(scheme, rest)| {
        matches!(scheme, "http" | "https") && !rest.is_empty() && !rest.contains('/')
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--cors-origin {origin:?}: an origin is scheme://host[:port], without a path"
        ))
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
