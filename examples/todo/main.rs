//! `cargo run --example todo [-- --help]`: flags and `AGENT_*` variables in
//! `docs/operations.md` §Configuration. With `--features oauth`, OAuth is on for `/agent/mcp`
//! (`docs/authorization.md`): add `http://localhost:8788/agent/mcp` to an MCP client and
//! approve it in the browser.

#[tokio::main]
async fn main() {
    let app = agent_examples::todo::TodoApp::default();
    #[cfg(feature = "oauth")]
    agent_examples::serve::run_with_oauth(app, 8788).await;
    #[cfg(not(feature = "oauth"))]
    agent_examples::serve::run(app, 8788).await;
}
