//! `cargo run --example relay [--port N] [--rate-limit N/unit] [--db PATH|postgres://… |
//! --memory] [--cors-origin URL]…`: a server for paired apps only (LLui apps point their agent
//! connection at it; see the README, "A relay for LLui apps").

#[tokio::main]
async fn main() {
    agent_examples::serve::run_relay(8789).await;
}
