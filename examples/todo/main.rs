//! `cargo run --example todo [-- --help]`: flags and `AGENT_*` variables in
//! `docs/operations.md` §Configuration. OAuth is on for `/agent/mcp`
//! (`docs/authorization.md`): add `http://localhost:8788/agent/mcp` to an MCP client and
//! approve it in the browser.

#[tokio::main]
async fn main() {
    agent_examples::serve::run_with_oauth(agent_examples::todo::TodoApp::default(), 8788).await;
}
