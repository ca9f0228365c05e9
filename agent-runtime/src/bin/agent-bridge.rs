//! `agent-bridge`: an MCP server over stdio that forwards the agent tools to a LAP server
//! (`docs/lap.md` §8, `docs/mcp.md`). Add it to an MCP client (Claude Desktop's
//! `claude_desktop_config.json`). Started with a LAP URL and a token (the environment
//! variables `AGENT_LAP_URL` and `AGENT_TOKEN`, or `--token-file`) it is connected from the
//! start, so the token never goes through the conversation; otherwise the model calls
//! `connect_session {url, token}`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The command line; each flag has an environment variable, a flag wins over it.
#[derive(Debug, Parser)]
#[command(
    name = "agent-bridge",
    version,
    about = "An MCP server on stdin/stdout for a LAP app. With a LAP URL and a token it starts \
             connected to that app; without them, call connect_session {url, token} from the MCP \
             client.",
    args_override_self = true
)]
struct Args {
    /// The app's LAP URL, e.g. http://127.0.0.1:8788/agent/lap/v1.
    #[arg(long, env = "AGENT_LAP_URL", value_name = "URL")]
    url: Option<String>,
    /// The agent token (agt_…). Other users of the machine see arguments (`ps`): prefer
    /// AGENT_TOKEN or --token-file.
    #[arg(
        long,
        env = "AGENT_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// A file whose first line is the agent token.
    #[arg(
        long,
        env = "AGENT_TOKEN_FILE",
        value_name = "FILE",
        conflicts_with = "token"
    )]
    token_file: Option<PathBuf>,
}

/// The LAP URL and token `args` give (none: start unconnected). A URL without a token (or
/// the reverse) is an error, as is a URL that is not `http(s)://…` or a token that is not an
/// agent token.
fn binding(args: Args) -> Result<Option<(String, String)>, String> {
    let token = match (&args.token_file, args.token) {
        (Some(path), _) => Some(read_token(path)?),
        (None, token) => token.filter(|t| !t.is_empty()),
    };
    let url = args.url.filter(|u| !u.is_empty());
    match (url, token) {
        (None, None) => Ok(None),
        (Some(url), Some(token)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "--url: the LAP URL must start with http:// or https://: {url:?}"
                ));
            }
            if !token.starts_with("agt_") {
                return Err("--token: the token must be an agent token (agt_…)".to_string());
            }
            Ok(Some((url, token)))
        }
        (Some(_), None) => {
            Err("a LAP URL needs a token (AGENT_TOKEN, --token-file or --token)".into())
        }
        (None, Some(_)) => Err("a token needs a LAP URL (--url or AGENT_LAP_URL)".into()),
    }
}

/// The first line of `path`, trimmed.
fn read_token(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--token-file {}: cannot read: {e}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        return Err(format!(
            "--token-file {}: the file is empty",
            path.display()
        ));
    }
    Ok(token)
}

#[tokio::main]
async fn main() -> ExitCode {
    // `--help` and `--version` print and exit 0; a flag that does not read exits 2.
    let args = Args::try_parse().unwrap_or_else(|e| e.exit());
    let served = match binding(args) {
        Err(e) => {
            eprintln!("agent-bridge: {e}");
            return ExitCode::from(2);
        }
        Ok(None) => tea_agent_runtime::mcp::bridge::serve_stdio().await,
        Ok(Some((url, token))) => {
            tea_agent_runtime::mcp::bridge::serve_stdio_bound(&url, &token).await
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-bridge: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Option<(String, String)>, String> {
        let args = Args::try_parse_from(std::iter::once("agent-bridge").chain(a.iter().copied()))
            .map_err(|e| e.to_string())?;
        binding(args)
    }

    fn bound(u: &str, t: &str) -> Result<Option<(String, String)>, String> {
        Ok(Some((u.into(), t.into())))
    }

    #[test]
    fn flags_and_their_errors() {
        // The process's own `AGENT_*` variables would take part; tests run without them.
        if std::env::vars().any(|(k, _)| k.starts_with("AGENT_")) {
            return;
        }
        assert_eq!(parse(&[]), Ok(None));
        assert_eq!(
            parse(&["--url", "http://h/agent/lap/v1", "--token", "agt_x"]),
            bound("http://h/agent/lap/v1", "agt_x")
        );
        assert_eq!(
            parse(&["--url=https://h/l", "--token=agt_y"]),
            bound("https://h/l", "agt_y")
        );
        let dir = std::env::temp_dir().join(format!("agent-bridge-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "agt_file\n").unwrap();
        let file = file.display().to_string();
        assert_eq!(
            parse(&["--url", "http://h/l", "--token-file", &file]),
            bound("http://h/l", "agt_file")
        );
        std::fs::write(&file, "\n").unwrap();
        assert!(parse(&["--url", "http://h/l", "--token-file", &file])
            .unwrap_err()
            .contains("is empty"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(parse(&["--url", "http://h/l", "--token-file", &file])
            .unwrap_err()
            .contains("cannot read"));
        assert!(parse(&["--url", "http://h/l"])
            .unwrap_err()
            .contains("needs a token"));
        assert!(parse(&["--token", "agt_x"])
            .unwrap_err()
            .contains("needs a LAP URL"));
        assert!(parse(&["--url"]).unwrap_err().contains("--url"));
        assert!(parse(&["--url", "ftp://h", "--token", "agt_x"])
            .unwrap_err()
            .contains("http://"));
        assert!(parse(&["--url", "http://h", "--token", "secret"])
            .unwrap_err()
            .contains("agent token"));
        assert!(parse(&["--bogus"]).unwrap_err().contains("--bogus"));
    }
}
