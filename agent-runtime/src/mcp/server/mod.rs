//! `/agent/mcp` (`lap.md` §7.3): MCP Streamable HTTP on the app server.
//!
//! rmcp's `StreamableHttpService` (stateful, `LocalSessionManager`) does the protocol; the
//! admission layer in front of it ([`McpAdmission`]) bounds the sessions, binds them to agent
//! tokens and answers unknown ids with 404; the handler ([`McpHandler`]) serves the 16 tools,
//! running forwarded ones in-process through the LAP router with the bound token.

mod admission;
mod handler;
mod registry;
mod restore;

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

pub use admission::McpAdmissionLayer;
pub use handler::McpHandler;
pub use registry::{AtCapacity, McpSessions};

use super::calls::ToolCatalog;
use super::tools::Surface;
use crate::app::App;
use crate::config::MAX_BODY_BYTES;
use crate::server::AgentServer;

/// The path of the MCP endpoint (matched exactly).
pub const MCP_PATH: &str = "/agent/mcp";

/// Options of `/agent/mcp` (`lap.md` §1, §7.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpOptions {
    /// Serve `/agent/mcp` (default on).
    pub enabled: bool,
    /// Live sessions at most (default 64).
    pub max_sessions: usize,
    /// Live unauthenticated sessions at most (default 16; clamped to `[1, max_sessions]`).
    pub max_unauthenticated_sessions: usize,
    /// Live sessions bound to one token at most (default 8).
    pub max_sessions_per_token: usize,
    /// An authenticated session expires this long after its last request (default 30 min).
    pub idle_ttl_ms: u64,
    /// An unauthenticated session expires this long after its creation, whatever its traffic
    /// (default 30 min).
    pub unauthenticated_max_lifetime_ms: u64,
    /// `serverInfo.name` (default `agent`).
    pub server_name: String,
    /// `serverInfo.version` (default `1`).
    pub server_version: String,
    /// `Host` values accepted (`mcpAllowedHosts`; a name matches any port, `name:port` only
    /// that port; default `localhost`, `127.0.0.1`, `::1`). Empty accepts any host.
    pub allowed_hosts: Vec<String>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            enabled: true,
            max_sessions: 64,
            max_unauthenticated_sessions: 16,
            max_sessions_per_token: 8,
            idle_ttl_ms: 30 * 60 * 1000,
            unauthenticated_max_lifetime_ms: 30 * 60 * 1000,
            server_name: "agent".into(),
            server_version: "1".into(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
        }
    }
}

/// The `/agent/mcp` route (nothing when the endpoint is disabled).
pub(crate) fn mcp_routes<A: App>(server: &AgentServer<A>) -> Router {
    let options = &server.options().mcp;
    if !options.enabled {
        return Router::new();
    }
    let sessions = server.mcp_sessions().clone();
    let tools = Arc::new(ToolCatalog::new(Surface::Server));
    let handler_server = server.clone();
    let factory = move || Ok(McpHandler::new(handler_server.clone(), tools.clone()));
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    if let Some(bindings) = server.inner.mcp_bindings.clone() {
        config.session_store = Some(Arc::new(restore::StoredMcpSessions::new(
            bindings,
            server.clock().clone(),
        )));
    }
    let service = StreamableHttpService::new(factory, sessions.manager(), config);
    let admission = tower::Layer::layer(&McpAdmissionLayer::new(server.clone()), service);
    Router::new().route_service(MCP_PATH, admission)
}

impl<A: App> AgentServer<A> {
    /// The live sessions of `/agent/mcp`.
    pub fn mcp_sessions(&self) -> &Arc<McpSessions> {
        &self.inner.mcp
    }
}
