//! `tui-todo --server URL [--token agt_…]`: the terminal todo app paired with a server.
//!
//! Without `--token` it mints a paired session itself (`POST /agent/mint {"paired":true}`, which
//! the example servers allow anonymously) and keeps the identity cookie, so after a long outage
//! it can claim the session again (`/agent/resume/claim`, a rotated token).

use tea_agent_runtime::pairing::client::{mint, PairingClient, PairingConfig, PairingStatus};
use tea_agent_runtime::Host;
use tokio::sync::watch;

use crate::todo::TodoApp;

/// What the command line asks for (`--help` lists it with the environment variables).
#[derive(Debug, Clone, PartialEq, Eq, clap::Parser)]
#[command(
    name = "tui-todo",
    version,
    about = "The terminal todo app, paired with an agent server.",
    args_override_self = true
)]
pub struct TuiOptions {
    /// The server's base URL, e.g. http://127.0.0.1:8788.
    #[arg(long, env = "AGENT_SERVER", value_name = "URL", value_parser = base_url)]
    pub server: String,
    /// An agent token minted for a paired session (minted here when absent). Other users of
    /// the machine see arguments (`ps`): prefer AGENT_TOKEN.
    #[arg(
        long,
        env = "AGENT_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
}

fn base_url(text: &str) -> Result<String, String> {
    if text.starts_with("http://") || text.starts_with("https://") {
        Ok(text.trim_end_matches('/').to_string())
    } else {
        Err(format!("{text:?} is not an http:// or https:// URL"))
    }
}

/// Parses the arguments (without the program name) and the environment.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<TuiOptions, String> {
    use clap::Parser as _;
    TuiOptions::try_parse_from(std::iter::once("tui-todo".to_string()).chain(args))
        .map_err(|e| e.render().to_string().trim_end().to_string())
}

/// The screen's heading for a pairing status.
pub fn heading(server: &str, token: &str, status: &PairingStatus) -> String {
    let status = match status {
        PairingStatus::Connecting => "connecting…".to_string(),
        PairingStatus::Paired => "paired, waiting for an agent".to_string(),
        PairingStatus::Active => "an agent is connected".to_string(),
        PairingStatus::Revoked => "revoked".to_string(),
        PairingStatus::Stopped(why) => format!("stopped: {why}"),
    };
    format!("todo · {server} · {status}\nagent token: {token}")
}

/// Pairs a new todo session with the server and runs the terminal app until the person quits.
pub async fn run(options: TuiOptions) -> Result<(), String> {
    let config = match &options.token {
        Some(token) => PairingConfig::new(options.server.clone(), token.clone()),
        None => mint(&options.server, &[])
            .await
            .map_err(|e| format!("cannot mint a paired session on {}: {e}", options.server))?
            .config(options.server.clone()),
    };
    let token = config.token.clone();
    let host = Host::new(TodoApp::default()).map_err(|e| e.to_string())?;
    let session = host.create_session(None).map_err(|e| e.to_string())?;
    let client = PairingClient::new(&host, session.clone(), config).spawn();
    let mut status = client.status();
    let (heading_tx, heading_rx) = watch::channel(heading(
        &options.server,
        &token,
        &status.borrow_and_update(),
    ));
    let server = options.server.clone();
    // A claim rotates the bearer (after a sleep past the grace window): the heading shows the
    // new one, which the person hands to the agent. The token changes before the status does.
    let tokens = client.token();
    let follow = tokio::spawn(async move {
        while status.changed().await.is_ok() {
            let token = tokens.borrow().clone();
            let line = heading(&server, &token, &status.borrow_and_update());
            if heading_tx.send(line).is_err() {
                return;
            }
        }
    });
    let result = super::run(session, heading_rx).await;
    follow.abort();
    client.stop().await;
    result.map_err(|e| format!("terminal: {e}"))
}

/// `main` of the example: parses the arguments, runs, reports an error on stderr.
pub async fn main() {
    // `--help` and `--version` print and exit 0; a flag that does not read exits 2.
    let options = <TuiOptions as clap::Parser>::try_parse().unwrap_or_else(|e| e.exit());
    if let Err(e) = run(options).await {
        eprintln!("{e}");
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
    fn server_is_required_and_token_optional() {
        assert_eq!(
            parse_args(args(&["--server", "http://h:1/", "--token=agt_x"])).unwrap(),
            TuiOptions {
                server: "http://h:1".into(),
                token: Some("agt_x".into())
            }
        );
        if std::env::var_os("AGENT_SERVER").is_none() {
            assert!(parse_args(args(&[])).unwrap_err().contains("--server"));
        }
        assert!(parse_args(args(&["--server"]))
            .unwrap_err()
            .contains("--server"));
        assert!(parse_args(args(&["--server", "h:1"]))
            .unwrap_err()
            .contains("http://"));
        assert!(parse_args(args(&["--port", "1"]))
            .unwrap_err()
            .contains("--port"));
    }

    #[test]
    fn heading_says_whether_an_agent_is_on() {
        let h = heading("http://h", "agt_t", &PairingStatus::Active);
        assert_eq!(
            h,
            "todo · http://h · an agent is connected\nagent token: agt_t"
        );
    }
}
