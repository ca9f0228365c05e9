//! The MCP server handler of `/agent/mcp`: one per MCP session (rmcp builds it at
//! `initialize`). It serves the 16 tools; the session's binding lives in the registry, keyed by
//! the `mcp-session-id` of each request, and forwarded tools run in-process as a synthetic
//! `POST {lapBasePath}{lapPath}` with the bound bearer through the LAP router, so the whole
//! gate applies (auth, rate limit, activation, log, audit).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{header, request::Parts, Method, Request};
use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use tower::ServiceExt as _;

use super::registry::Binding;
use crate::app::App;
use crate::lap::{AgentServer, Endpoint};
use crate::mcp::calls::{self, ResolvedCall};
use crate::mcp::format::{failure, success, LapAnswer, NOT_CONNECTED_SERVER, TOKEN_INVALID};
use crate::mcp::forward::{connect_flow, forward_tool, DescriptionCache, Forwarder};
use crate::mcp::tools::{Surface, ToolAction};
use crate::security::{verify_bearer, AuthError};

const INSTRUCTIONS: &str = "This server drives a running app. Start with connect_session and \
    the agent token the user copies from the app (agt_…). Then observe to read the state and \
    the actions available, and send_message to act; narrate tells the user what you are doing.";

/// The `/agent/mcp` handler of one MCP session.
pub struct McpHandler<A: App> {
    server: AgentServer<A>,
    /// The LAP router, built on first use and shared by every session of the endpoint.
    lap: Arc<OnceLock<Router>>,
    cache: DescriptionCache,
}

impl<A: App> McpHandler<A> {
    pub(crate) fn new(server: AgentServer<A>, lap: Arc<OnceLock<Router>>) -> Self {
        McpHandler {
            server,
            lap,
            cache: DescriptionCache::default(),
        }
    }

    fn forwarder(&self, token: &str) -> InProcess {
        let router = self.lap.get_or_init(|| self.server.lap_router()).clone();
        InProcess {
            router,
            base: self
                .server
                .options()
                .lap_base_path
                .trim_end_matches('/')
                .to_string(),
            token: token.to_string(),
        }
    }

    async fn connect(&self, session: Option<&str>, args: &Map<String, Value>) -> CallToolResponse {
        let Some(session) = session else {
            return failure("connect_session needs an MCP session (mcp-session-id)").into();
        };
        let token = args
            .get("token")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let sessions = self.server.mcp_sessions();
        let verified = verify_bearer(
            Some(&format!("Bearer {token}")),
            &**self.server.tokens(),
            self.server.now(),
            self.server.options().sliding_ttl_ms,
        )
        .await;
        let tid = match verified {
            Ok(record) => record.tid,
            Err(AuthError::AuthFailed) => return failure(TOKEN_INVALID).into(),
            Err(e) => return failure(format!("Auth failed: {e}")).into(),
        };
        let binding = Binding {
            tid,
            token: token.to_string(),
        };
        let Some(evicted) = sessions.bind(session, binding) else {
            return failure("connect_session failed: this MCP session is no longer live").into();
        };
        sessions.close(evicted).await;
        self.cache.clear();
        match connect_flow(&self.forwarder(token), &self.cache).await {
            Ok(result) => result.into(),
            Err(text) => {
                sessions.unbind(session);
                self.cache.clear();
                failure(text).into()
            }
        }
    }
}

/// The `mcp-session-id` of the HTTP request behind `context`.
fn session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

impl<A: App> ServerHandler for McpHandler<A> {
    fn get_info(&self) -> ServerConfig {
        let options = &self.server.options().mcp;
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new(
                options.server_name.clone(),
                options.server_version.clone(),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        calls::supported_protocol_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(calls::list_tools(Surface::Server))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (spec, args) = match calls::resolve(Surface::Server, &request)? {
            ResolvedCall::Run(spec, args) => (spec, args),
            ResolvedCall::Refused(refusal) => return Ok(refusal.into()),
        };
        let session = session_id(&context);
        let sessions = self.server.mcp_sessions();
        Ok(match spec.action {
            ToolAction::Connect => self.connect(session.as_deref(), &args).await,
            ToolAction::Disconnect => {
                if let Some(id) = &session {
                    sessions.unbind(id);
                }
                self.cache.clear();
                success(json!({"status": "disconnected"})).into()
            }
            ToolAction::Forward(endpoint) => {
                match session.as_deref().and_then(|id| sessions.binding(id)) {
                    None => failure(NOT_CONNECTED_SERVER).into(),
                    Some(binding) => {
                        let forwarder = self.forwarder(&binding.token);
                        forward_tool(&forwarder, &self.cache, endpoint, args)
                            .await
                            .into()
                    }
                }
            }
        })
    }
}

/// Forwards through the LAP router in-process. A 2xx answer whose body has an `error` key
/// also counts as a failure.
struct InProcess {
    router: Router,
    base: String,
    token: String,
}

impl Forwarder for InProcess {
    async fn post(&self, endpoint: Endpoint, body: Value) -> LapAnswer {
        let request = Request::builder()
            .method(Method::POST)
            .uri(format!("{}{}", self.base, endpoint.tail()))
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()));
        let request = match request {
            Ok(r) => r,
            Err(e) => return LapAnswer::network(e.to_string()),
        };
        let response = match self.router.clone().oneshot(request).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let status = response.status().as_u16();
        let body = match axum::body::to_bytes(response.into_body(), usize::MAX).await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(e) => return LapAnswer::network(e.to_string()),
        };
        let mut answer = LapAnswer::new(status, body);
        if answer.body.get("error").is_some() {
            answer.failed = true;
        }
        answer
    }
}
