//! `/agent/mcp` (`docs/lap.md` §7.3): MCP Streamable HTTP on the app server.
//!
//! rmcp's `StreamableHttpService` (stateful, `LocalSessionManager`) does the protocol; the
//! admission layer in front of it ([`McpAdmission`](admission::McpAdmission)) bounds the sessions, binds them to agent
//! tokens and answers unknown ids with 404; the handler ([`McpHandler`]) serves the 19 tools,
//! running forwarded ones in-process through the LAP router with the bound token. A plain
//! `tools/call` that rmcp would accept as it is is answered by the admission layer itself
//! (`fast_call`, `docs/mcp.md` §Fast path), through the same code as the handler (`run`).

mod actions;
mod admission;
mod bound_token;
mod client_confirm;
mod deletions;
mod disk_bounds;
mod erased;
mod fast_call;
mod handler;
mod in_process;
mod listens;
mod notify;
#[cfg(feature = "oauth")]
pub(crate) mod oauth_check;
mod priming;
mod progress;
mod registry;
mod request_kind;
mod restore;
mod revoked;
mod run;

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;

pub use crate::ops::McpOptions;
pub(crate) use admission::McpAdmissionLayer;
pub use bound_token::BoundToken;
pub(crate) use handler::McpHandler;
pub use registry::{AtCapacity, McpSessions};

use super::action_tools::ActionCatalog;
use super::calls::ToolCatalog;
use super::tools::Surface;
use crate::app::App;
use crate::config::MAX_BODY_BYTES;
use crate::ops::ServerState;

/// What the MCP endpoint reads: the shared state and its own live sessions.
pub(crate) struct McpState<A: App> {
    server: ServerState<A>,
    sessions: Arc<McpSessions>,
    /// The `subscriptions/listen` streams open per token.
    listens: Arc<listens::ListenSlots>,
}

impl<A: App> Clone for McpState<A> {
    fn clone(&self) -> Self {
        McpState {
            server: self.server.clone(),
            sessions: self.sessions.clone(),
            listens: self.listens.clone(),
        }
    }
}

impl<A: App> McpState<A> {
    /// The live sessions of `/agent/mcp`.
    pub(crate) fn mcp_sessions(&self) -> &Arc<McpSessions> {
        &self.sessions
    }
}

impl<A: App> std::ops::Deref for McpState<A> {
    type Target = ServerState<A>;
    fn deref(&self) -> &ServerState<A> {
        &self.server
    }
}

/// The path of the MCP endpoint (matched exactly).
pub const MCP_PATH: &str = "/agent/mcp";

/// The `/agent/mcp` route (nothing when the endpoint is disabled).
pub(crate) fn mcp_routes<A: App>(server: &ServerState<A>, sessions: Arc<McpSessions>) -> Router {
    let options = &server.options().mcp;
    if !options.enabled {
        return Router::new();
    }
    let tools = Arc::new(ToolCatalog::new(Surface::Server));
    let hosted = Arc::new(ActionCatalog::hosted::<A::Msg>(server.host().describe()));
    let server = McpState {
        server: server.clone(),
        sessions,
        listens: Arc::new(listens::ListenSlots::new(options.max_listens_per_token)),
    };
    let runner = Arc::new(run::ToolRunner::new(server.clone(), tools, hosted));
    let handler_server = server.clone();
    let handler_runner = runner.clone();
    let factory = Box::new(move || {
        erased::ErasedHandler::new(McpHandler::new(
            handler_server.clone(),
            handler_runner.clone(),
        ))
    });
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        // A 2026-07-28 call that sends nothing before its result is answered as plain JSON,
        // not as an event stream (sessions keep their streams).
        .with_json_response(true)
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    if let Some(bindings) = server.mcp_bindings().cloned() {
        config.session_store = Some(Arc::new(restore::StoredMcpSessions::new(
            bindings,
            server.clock().clone(),
        )));
    }
    let service = erased::rmcp_service(factory, server.sessions.manager(), config);
    let admission = tower::Layer::layer(&McpAdmissionLayer::new(server.clone(), runner), service);
    Router::new().route_service(MCP_PATH, admission)
}
