//! `agent-bridge`: an MCP server over stdio that forwards the agent tools to a LAP server
//! (`docs/lap.md` §8). Add it to an MCP client (Claude Desktop's `claude_desktop_config.json`), then
//! call `connect_session {url, token}` with the app's LAP URL and an agent token.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    if let Some(arg) = std::env::args().nth(1) {
        match arg.as_str() {
            "--version" | "-V" => {
                println!("agent-bridge {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            _ => {
                eprintln!(
                    "usage: agent-bridge   (an MCP server on stdin/stdout; no arguments)\n\
                     Then call connect_session {{url, token}} from the MCP client."
                );
                return ExitCode::from(2);
            }
        }
    }
    match agent_runtime::mcp::bridge::serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-bridge: {e}");
            ExitCode::FAILURE
        }
    }
}
