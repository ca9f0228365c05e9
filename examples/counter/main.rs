//! `cargo run --example counter [-- --help]`: flags and `AGENT_*` variables in
//! `docs/operations.md` §Configuration.

#[tokio::main]
async fn main() {
    agent_examples::serve::run(agent_examples::counter::Counter, 8787).await;
}
