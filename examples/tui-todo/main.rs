//! `cargo run --example tui-todo --features tui -- --server http://127.0.0.1:8788 [--token agt_…]`
//!
//! The todo app in the terminal, paired with a server (start `cargo run --example todo` first):
//! use it with the keyboard while an agent drives it through the server.

#[tokio::main]
async fn main() {
    agent_examples::tui::cli::main().await;
}
