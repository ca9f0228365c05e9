//! The `tui-todo` example as a binary of the test crate, so the tmux test can start it
//! (`CARGO_BIN_EXE_tui-todo`): same code, same command line.

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
