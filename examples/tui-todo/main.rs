//! `cargo run -p agent-examples --features tui --example tui-todo -- --server http://127.0.0.1:8788 [--token agt_…]`

#[tokio::main]
async fn main() {
    let opts = match agent_examples::tui_todo::parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = agent_examples::tui_todo::run(opts).await {
        eprintln!("tui-todo: {e}");
        std::process::exit(1);
    }
}
