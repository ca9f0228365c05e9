//! The counter example as its own process, for the tests that kill it (`SIGKILL`) and start
//! it again: the same command line as `cargo run --example counter`.

#[tokio::main]
async fn main() {
    agent_examples::serve::run(agent_examples::counter::Counter, 8787).await;
}
