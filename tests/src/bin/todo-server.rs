//! The todo example as its own process, for measurements of the whole process (its resident
//! memory, its restarts): the same command line as `cargo run --example todo`, OAuth on.

#[tokio::main]
async fn main() {
    agent_examples::serve::run_with_oauth(agent_examples::todo::TodoApp::default(), 8788).await;
}
