//! `tui-todo --server URL [--token agt_…]`: the terminal todo app paired with a server.
//!
//! Without `--token` it mints a paired session itself (`POST /agent/mint {"paired":true}`, which
//! the example servers allow anonymously) and keeps the identity cookie, so after a long outage
//! it can claim the session again (`/agent/resume/claim`, a rotated token).

use agent_runtime::pairing::client::{mint, PairingClient, PairingConfig, PairingStatus};
use agent_runtime::Host;
use tokio::sync::watch;

use crate::todo::TodoApp;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiOptions {
    /// The server's base URL (`http://127.0.0.1:8788`).
    pub server: String,
    /// An agent token minted for a paired session; minted here when absent.
    pub token: Option<String>,
}

const USAGE: &str = "usage: tui-todo --server http://127.0.0.1:8788 [--token agt_…]";

/// Parses the arguments (without the program name).
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<TuiOptions, String> {
    let mut server = None;
    let mut token = None;
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
            "--server" => server = Some(value()?),
            "--token" => token = Some(value()?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let server = server.ok_or_else(|| format!("--server is required\n{USAGE}"))?;
    Ok(TuiOptions {
        server: server.trim_end_matches('/').to_string(),
        token,
    })
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
    let follow = tokio::spawn(async move {
        while status.changed().await.is_ok() {
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
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
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
        assert!(parse_args(args(&[]))
            .unwrap_err()
            .contains("--server is required"));
        assert!(parse_args(args(&["--server"]))
            .unwrap_err()
            .contains("needs a value"));
        assert!(parse_args(args(&["--port", "1"]))
            .unwrap_err()
            .contains("unknown argument"));
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
