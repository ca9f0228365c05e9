//! The notes app's server: its own routes, and the agent surface (LAP, MCP, the console)
//! with its sessions in a SQLite file.

use notes_app::Notes;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::AgentServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stores = Stores::open("notes.db").await?;
    // Checks the app's schema once, here. `local_development()`: anonymous identities (the
    // console on this machine mints without a sign-in) and audit lines on stderr.
    let agent = AgentServer::builder(Notes)
        .stores(&stores)
        .local_development()
        .build()
        .await?;
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "my notes app" }))
        .merge(agent.router()); // /agent/... ; everything else is yours
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8790").await?;
    println!("console: {}", agent.console_url(listener.local_addr()?));
    // Header-read, body-read and idle timeouts (`axum::serve` has none). On SIGTERM or
    // Ctrl-C a graceful shutdown: long polls and event streams end with a hint to reconnect.
    let stopping = agent.clone();
    tea_agent_runtime::serve(listener, app)
        .with_graceful_shutdown(async move {
            tea_agent_runtime::shutdown_signal().await;
            stopping.begin_shutdown();
        })
        .await?;
    // What the store and the audit sink hold back is written before the process ends.
    agent.finish_shutdown().await?;
    Ok(())
}
