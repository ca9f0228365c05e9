//! `agent-bridge`: an MCP server over stdio that forwards the agent tools to a LAP server
//! (`docs/lap.md` §8, `docs/mcp.md`). Add it to an MCP client (Claude Desktop's
//! `claude_desktop_config.json`). Started with `--url <lapUrl> --token <agt_…>` (or the
//! environment variables `AGENT_LAP_URL` and `AGENT_TOKEN`) it is connected from the start, so
//! the token never goes through the conversation; otherwise the model calls
//! `connect_session {url, token}`.

use std::process::ExitCode;

const USAGE: &str = "usage: agent-bridge [--url <lapUrl> --token <agt_…>]
  An MCP server on stdin/stdout. With --url and --token (or the environment variables
  AGENT_LAP_URL and AGENT_TOKEN) it starts connected to that app; without them, call
  connect_session {url, token} from the MCP client. --version prints the version.";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Version,
    Serve { binding: Option<(String, String)> },
}

/// Reads the arguments and the environment: flags win over the environment; a URL without a
/// token (or the reverse) is an error, as is a URL that is not `http(s)://…`.
fn parse(
    args: impl IntoIterator<Item = String>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Command, String> {
    let (mut url, mut token) = (None, None);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "--version" | "-V" => return Ok(Command::Version),
            "--url" | "--token" => {
                let value = match inline.or_else(|| args.next()) {
                    Some(v) if !v.is_empty() => v,
                    _ => return Err(format!("{flag} needs a value")),
                };
                if flag == "--url" {
                    url = Some(value);
                } else {
                    token = Some(value);
                }
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
    let url = url.or_else(|| non_empty("AGENT_LAP_URL"));
    let token = token.or_else(|| non_empty("AGENT_TOKEN"));
    let binding = match (url, token) {
        (None, None) => None,
        (Some(url), Some(token)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "the LAP URL must start with http:// or https://: {url:?}"
                ));
            }
            if !token.starts_with("agt_") {
                return Err("the token must be an agent token (agt_…)".to_string());
            }
            Some((url, token))
        }
        (Some(_), None) => return Err("a LAP URL needs a token (--token or AGENT_TOKEN)".into()),
        (None, Some(_)) => return Err("a token needs a LAP URL (--url or AGENT_LAP_URL)".into()),
    };
    Ok(Command::Serve { binding })
}

#[tokio::main]
async fn main() -> ExitCode {
    let command = match parse(std::env::args().skip(1), |k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agent-bridge: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let served = match command {
        Command::Version => {
            println!("agent-bridge {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Serve { binding: None } => agent_runtime::mcp::bridge::serve_stdio().await,
        Command::Serve {
            binding: Some((url, token)),
        } => agent_runtime::mcp::bridge::serve_stdio_bound(&url, &token).await,
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

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn flags_environment_and_their_errors() {
        let bound = |u: &str, t: &str| Command::Serve {
            binding: Some((u.into(), t.into())),
        };
        assert_eq!(
            parse(args(&[]), no_env),
            Ok(Command::Serve { binding: None })
        );
        assert_eq!(parse(args(&["--version"]), no_env), Ok(Command::Version));
        assert_eq!(
            parse(
                args(&["--url", "http://h/agent/lap/v1", "--token", "agt_x"]),
                no_env
            ),
            Ok(bound("http://h/agent/lap/v1", "agt_x"))
        );
        assert_eq!(
            parse(args(&["--url=https://h/l", "--token=agt_y"]), no_env),
            Ok(bound("https://h/l", "agt_y"))
        );
        let env = |k: &str| match k {
            "AGENT_LAP_URL" => Some("http://env/l".to_string()),
            "AGENT_TOKEN" => Some("agt_env".to_string()),
            _ => None,
        };
        assert_eq!(parse(args(&[]), env), Ok(bound("http://env/l", "agt_env")));
        // A flag wins over the environment.
        assert_eq!(
            parse(args(&["--token", "agt_flag"]), env),
            Ok(bound("http://env/l", "agt_flag"))
        );
        assert!(parse(args(&["--url", "http://h/l"]), no_env)
            .unwrap_err()
            .contains("needs a token"));
        assert!(parse(args(&["--token", "agt_x"]), no_env)
            .unwrap_err()
            .contains("needs a LAP URL"));
        assert!(parse(args(&["--url"]), no_env)
            .unwrap_err()
            .contains("needs a value"));
        assert!(
            parse(args(&["--url", "ftp://h", "--token", "agt_x"]), no_env)
                .unwrap_err()
                .contains("http://")
        );
        assert!(
            parse(args(&["--url", "http://h", "--token", "secret"]), no_env)
                .unwrap_err()
                .contains("agent token")
        );
        assert!(parse(args(&["--bogus"]), no_env)
            .unwrap_err()
            .contains("unknown argument"));
    }
}
