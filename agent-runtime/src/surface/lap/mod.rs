//! The HTTP surface on axum: LAP (`/agent/lap/v1/…`, generated from the operation table), the
//! management routes, the human routes and the OpenAPI document.
//! [`AgentServer::router`](crate::AgentServer::router) composes them with the console,
//! `/agent/ws` and `/agent/mcp` into one `Router` that the host app merges into its own.

mod anonymous_mints;
mod body;
mod human;
mod human_access;
mod human_close;
#[cfg(feature = "pairing")]
mod human_paired;
mod human_undo;
mod management;
mod openapi;
mod operations;
#[cfg(feature = "pairing")]
mod resume;

use axum::Router;

use crate::app::App;
use crate::ops::ServerState;

/// The LAP, management, human and resume routes.
pub(crate) fn routes<A: App>(server: &ServerState<A>) -> Router {
    let router = Router::new()
        .merge(management::management_routes(server))
        .merge(operations::lap_routes(server))
        .merge(human::human_routes(server))
        .merge(human_close::close_routes(server))
        .merge(human_undo::undo_routes(server));
    #[cfg(feature = "pairing")]
    let router = router.merge(resume::resume_routes(server));
    router
}
