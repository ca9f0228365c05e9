//! `cargo run --example todo [--port N] [--rate-limit N/unit]`

#[tokio::main]
async fn main() {
    agent_examples::serve::run(agent_examples::todo::TodoApp::default(), 8788).await;
}
