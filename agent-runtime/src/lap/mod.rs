//! The HTTP surface on axum: LAP (`/agent/lap/v1/…`), the management routes, the human routes
//! and the console page. [`AgentServer::router`] composes them into one `Router` that the host
//! app merges into its own; anything else falls through to the app.

mod body;
mod console;
mod endpoints;
mod error;
mod gate;
mod human;
mod idempotency;
mod management;
mod server;

use axum::Router;

pub use body::MAX_BODY_BYTES;
pub use endpoints::Endpoint;
pub use error::ApiError;
pub use idempotency::IDEMPOTENCY_WINDOW_MS;
pub use server::{AgentServer, AgentServerBuilder, ServerOptions, DEFAULT_RATE_LIMIT};

use crate::app::App;

impl<A: App> AgentServer<A> {
    /// Only the LAP routes (`{lapBasePath}/…`): what MCP's in-process forwarding calls.
    pub(crate) fn lap_router(&self) -> Router {
        gate::lap_routes(self)
    }

    /// The agent surface as one `Router` (state already applied): merge it into the app's.
    pub fn router(&self) -> Router {
        Router::new()
            .merge(management::management_routes(self))
            .merge(gate::lap_routes(self))
            .merge(human::human_routes(self))
            .merge(console::console_routes(self))
            .merge(crate::mcp::server::mcp_routes(self))
    }
}
