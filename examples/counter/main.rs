//! `cargo run --example counter [--port N] [--rate-limit N/unit]`

#[tokio::main]
async fn main() {
    agent_examples::serve::run(agent_examples::counter::Counter, 8787).await;
}
