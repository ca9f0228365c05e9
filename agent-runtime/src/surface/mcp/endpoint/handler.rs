//! The MCP server handler of `/agent/mcp`: one per MCP session (rmcp builds it at
//! `initialize`). It serves the 18 tools; the session's binding lives in the registry, keyed by
//! the `mcp-session-id` of each request, and an operation's tool runs through the operation
//! gate with the bound token as the credential, so the whole gate applies (auth, rate limit,
//! activation, log, audit, idempotency) with no HTTP request in between.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use super::disk_bounds;
use super::registry::Binding;
use super::restore;
use super::McpState;
use crate::app::App;
use crate::ops::{self, Operation};
use crate::security::{verify_bearer, AuthError};
use crate::surface::mcp::calls::{self, ResolvedCall, ToolCatalog};
use crate::surface::mcp::format::{
    failure, success, LapAnswer, NOT_CONNECTED_SERVER, TOKEN_INVALID,
};
use crate::surface::mcp::forward::{connect_flow, forward_tool, DescriptionCache, Forwarder};
use crate::surface::mcp::tools::ToolAction;

const INSTRUCTIONS: &str = "This server drives a running app. Start with connect_session and \
    the agent token the user copies from the app (agt_…). Then observe to read the state and \
    the actions available, and send_message to act; narrate tells the user what you are doing.";

/// The `/agent/mcp` handler of one MCP session.
pub(crate) struct McpHandler<A: App> {
    server: McpState<A>,
    /// The tools and their schemas, generated once for the endpoint.
    tools: Arc<ToolCatalog>,
    cache: DescriptionCache,
}

impl<A: App> McpHandler<A> {
    pub(crate) fn new(server: McpState<A>, tools: Arc<ToolCatalog>) -> Self {
        McpHandler {
            server,
            tools,
            cache: DescriptionCache::default(),
        }
    }

    fn forwarder(&self, binding: &Binding) -> InProcess<A> {
        InProcess {
            server: self.server.clone(),
            authorization: binding.token.as_ref().map(|t| format!("Bearer {t}")),
            tid: binding.tid.clone(),
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
            token: Some(token.to_string()),
        };
        let forwarder = self.forwarder(&binding);
        let tid = binding.tid.clone();
        let Some(evicted) = sessions.bind(session, binding) else {
            return failure("connect_session failed: this MCP session is no longer live").into();
        };
        sessions.close(evicted).await;
        self.cache.clear();
        match connect_flow(&forwarder, &self.cache).await {
            Ok(result) => {
                // Kept by token id, so the binding survives a restart (never the token).
                if let Some(store) = self.server.mcp_bindings() {
                    restore::remember(store, session, &tid, self.server.now()).await;
                    disk_bounds::trim(store, sessions, Some(&tid)).await;
                }
                result.into()
            }
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
        Ok(self.tools.list())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (spec, args) = match self.tools.resolve(request)? {
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
                    if let Some(store) = self.server.mcp_bindings() {
                        restore::forget(store, id).await;
                    }
                }
                self.cache.clear();
                success(json!({"status": "disconnected"})).into()
            }
            ToolAction::Run(op) => match session.as_deref().and_then(|id| sessions.binding(id)) {
                None => failure(NOT_CONNECTED_SERVER).into(),
                Some(binding) => {
                    let forwarder = self.forwarder(&binding);
                    forward_tool(&forwarder, &self.cache, op, args).await.into()
                }
            },
        })
    }
}

/// Runs operations through the gate in-process, with the bound token as the credential.
struct InProcess<A: App> {
    server: McpState<A>,
    /// `Bearer agt_…`; `None` for a binding rebuilt without the raw token.
    authorization: Option<String>,
    /// The bound token's id: the trusted credential when the raw token is not known.
    tid: String,
}

impl<A: App> Forwarder for InProcess<A> {
    async fn post(&self, op: Operation, body: Value) -> LapAnswer {
        let credential = match &self.authorization {
            Some(authorization) => ops::Credential::Bearer(Some(authorization)),
            None => ops::Credential::Tid(&self.tid),
        };
        let reply = match ops::admit_credential(&self.server, credential).await {
            Ok(caller) => ops::call(&self.server, caller, op, body).await,
            Err(e) => ops::Reply::from_error(&e),
        };
        let body = serde_json::from_str(reply.body()).unwrap_or(Value::Null);
        let mut answer = LapAnswer::new(reply.status().as_u16(), body);
        answer.text = Some(reply.into_body());
        answer
    }
}
