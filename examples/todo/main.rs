//! `cargo run --example todo [-- --help]`: flags and `AGENT_*` variables in
//! `docs/operations.md` §Configuration.

#[tokio::main]
async fn main() {
    agent_examples::serve::run(agent_examples::todo::TodoApp::default(), 8788).await;
}
