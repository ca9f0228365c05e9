//! The todo example as its own process, for measurements of the whole process (its resident
//! memory): the same command line as `cargo run --example todo`.

#[tokio::main]
async fn main() {
    agent_examples::serve::run(agent_examples::todo::TodoApp::default(), 8788).await;
}
