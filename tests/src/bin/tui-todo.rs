//! The `tui-todo` example's program, built as a binary of this crate so tests can run it in a
//! real terminal (`tests/examples/tui_todo.rs` drives it under tmux).

#[tokio::main]
async fn main() {
    agent_examples::tui::cli::main().await;
}
