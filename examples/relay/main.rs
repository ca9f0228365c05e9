//! `cargo run --example relay [-- --help]` (flags and `AGENT_*` environment variables in
//! `docs/operations.md` §Configuration): a server for paired apps only (LLui apps point their agent
//! connection at it; see the README, "A relay for LLui apps").

#[tokio::main]
async fn main() {
    agent_examples::serve::run_relay(agent_examples::relay::Relay, 8789).await;
}
