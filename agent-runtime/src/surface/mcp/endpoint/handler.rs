//! The MCP server handler of `/agent/mcp`: one per MCP session (rmcp builds it at
//! `initialize`). It serves the 18 tools; the session's binding lives in the registry, keyed by
//! the `mcp-session-id` of each request, and an operation's tool runs through the operation
//! gate with the bound token as the credential, so the whole gate applies (auth, rate limit,
//! activation, log, audit, idempotency) with no HTTP request in between.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use super::actions::{session_catalog, session_tools};
use super::disk_bounds;
use super::notify::{self, Interest, Outlet, WatchSlot};
use super::registry::Binding;
use super::restore;
use super::McpState;
use crate::app::App;
use crate::ops::{self, Operation};
use crate::security::{verify_bearer, AuthError};
use crate::surface::mcp::action_tools::ActionCatalog;
use crate::surface::mcp::calls::{self, ResolvedCall, ToolCatalog};
use crate::surface::mcp::format::{
    failure, forwarded_failure, success, LapAnswer, NOT_CONNECTED_SERVER, TOKEN_INVALID,
};
use crate::surface::mcp::forward::{connect_flow, forward_tool, DescriptionCache, Forwarder};
use crate::surface::mcp::resources;
use crate::surface::mcp::tools::ToolAction;

const INSTRUCTIONS: &str = "This server drives a running app. Start with connect_session and \
    the agent token the user copies from the app (agt_…). Then observe to read the state and \
    the actions available, and send_message to act; narrate tells the user what you are doing.";

/// The `/agent/mcp` handler of one MCP session (legacy revisions) or of one request
/// (2026-07-28).
pub(crate) struct McpHandler<A: App> {
    server: McpState<A>,
    /// The tools and their schemas, generated once for the endpoint.
    tools: Arc<ToolCatalog>,
    /// The hosted app's variants as action tools, built once for the endpoint.
    hosted: Arc<ActionCatalog>,
    cache: DescriptionCache,
    /// What this session's client asked to hear about.
    interest: Arc<Interest>,
    /// The session's watch (legacy sessions), stopped with the handler.
    watch: WatchSlot,
}

impl<A: App> McpHandler<A> {
    pub(crate) fn new(
        server: McpState<A>,
        tools: Arc<ToolCatalog>,
        hosted: Arc<ActionCatalog>,
    ) -> Self {
        McpHandler {
            server,
            tools,
            hosted,
            cache: DescriptionCache::default(),
            interest: Arc::new(Interest {
                tools: true,
                ..Interest::default()
            }),
            watch: WatchSlot::default(),
        }
    }

    fn forwarder(&self, binding: &Binding) -> InProcess<A> {
        InProcess {
            server: self.server.clone(),
            authorization: binding.token.as_ref().map(|t| format!("Bearer {t}")),
            tid: binding.tid.clone(),
        }
    }

    /// The binding of the call: its MCP session's, or a 2026-07-28 request's bearer.
    fn binding(&self, context_parts: Option<&Parts>) -> Option<Binding> {
        let parts = context_parts?;
        match parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            Some(id) => self.server.mcp_sessions().binding(id),
            None => parts.extensions.get::<Binding>().cloned(),
        }
    }

    /// Starts (or restarts) this legacy session's watch for the token `tid`.
    fn start_watch(&self, peer: rmcp::service::Peer<RoleServer>, tid: String, announce: bool) {
        self.watch.replace(notify::watch(
            self.server.clone(),
            tid,
            self.hosted.clone(),
            Outlet::Session(peer),
            self.interest.clone(),
            announce,
        ));
    }

    /// `do_<action>`: sends the action's message as `send_message` would.
    async fn call_action(
        &self,
        request: CallToolRequestParams,
        binding: Option<Binding>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("unknown tool: {}", request.name), None);
        let Some(binding) = binding else {
            return Err(unknown());
        };
        let catalog = match session_catalog(&self.server, &binding.tid, &self.hosted).await {
            Ok(catalog) => catalog,
            // As `send_message` would have failed (paused, revoked …).
            Err(e) => {
                let answer = LapAnswer::new(e.status().as_u16(), e.body());
                let op = Operation::Message;
                let text = forwarded_failure(&request.name, op.lap_path(), &answer);
                return Ok(failure(text).into());
            }
        };
        let Some(entry) = catalog.find(&request.name) else {
            return Err(unknown());
        };
        let body = entry.message_request(request.arguments.unwrap_or_default());
        let Value::Object(args) = body else {
            return Err(unknown());
        };
        let forwarder = self.forwarder(&binding);
        Ok(
            forward_tool(&forwarder, &self.cache, Operation::Message, args)
                .await
                .into(),
        )
    }

    async fn connect(
        &self,
        session: Option<&str>,
        args: &Map<String, Value>,
        peer: rmcp::service::Peer<RoleServer>,
    ) -> CallToolResponse {
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
                // The client learns about the session's actions at once.
                self.start_watch(peer, tid, true);
                result.into()
            }
            Err(text) => {
                sessions.unbind(session);
                self.cache.clear();
                self.watch.clear();
                failure(text).into()
            }
        }
    }
}

/// The HTTP request behind `context`.
fn parts(context: &RequestContext<RoleServer>) -> Option<&Parts> {
    context.extensions.get::<Parts>()
}

/// The `mcp-session-id` of the HTTP request behind `context`.
fn session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    parts(context)
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

impl<A: App> ServerHandler for McpHandler<A> {
    fn get_info(&self) -> ServerConfig {
        let options = &self.server.options().mcp;
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new(
                options.server_name.clone(),
                options.server_version.clone(),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        calls::server_protocol_versions()
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A session bound by its `initialize` bearer is watched from the start.
        let binding = self.binding(context.extensions.get::<Parts>());
        if let Some(binding) = binding {
            self.start_watch(context.peer.clone(), binding.tid, false);
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tools.list().tools;
        if let Some(binding) = self.binding(parts(&context)) {
            // A session that cannot be read now (paused) lists no actions.
            if let Ok(actions) = session_tools(&self.server, &binding.tid, &self.hosted).await {
                tools.extend(actions);
            }
        }
        // The list depends on the caller's token and its session's state.
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.declares(&request.name) {
            let binding = self.binding(parts(&context));
            return self.call_action(request, binding).await;
        }
        let (spec, args) = match self.tools.resolve(request)? {
            ResolvedCall::Run(spec, args) => (spec, args),
            ResolvedCall::Refused(refusal) => return Ok(refusal.into()),
        };
        let session = session_id(&context);
        let sessions = self.server.mcp_sessions();
        if session.is_none() {
            return Ok(self.stateless_call(spec.action, args, &context).await);
        }
        Ok(match spec.action {
            ToolAction::Connect => {
                self.connect(session.as_deref(), &args, context.peer.clone())
                    .await
            }
            ToolAction::Disconnect => {
                if let Some(id) = &session {
                    sessions.unbind(id);
                    if let Some(store) = self.server.mcp_bindings() {
                        restore::forget(store, id).await;
                    }
                }
                self.cache.clear();
                self.watch.clear();
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources::list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let op = resources::operation(&request.uri)?;
        let Some(binding) = self.binding(parts(&context)) else {
            // The hosted app's description is the same for every caller.
            if op == Operation::Describe {
                let text = self.server.host().describe().to_string();
                return Ok(resources::shared_description(text).into());
            }
            return Err(ErrorData::invalid_request(NOT_CONNECTED_SERVER, None));
        };
        let answer = self.forwarder(&binding).post(op, json!({})).await;
        if answer.failed {
            let text = forwarded_failure(op.tool(), op.lap_path(), &answer);
            return Err(ErrorData::internal_error(text, None));
        }
        let text = answer.text.unwrap_or_else(|| answer.body.to_string());
        Ok(resources::contents(&request.uri, text).into())
    }

    #[allow(deprecated)] // the legacy revisions' subscription, beside `listen`
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        resources::operation(&request.uri)?;
        lock(&self.interest.resources).insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)] // the legacy revisions' subscription, beside `listen`
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.interest.resources).remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        // No prompts: the tools and resources are the surface.
        Ok(ListPromptsResult::with_all_items(Vec::new())
            .with_ttl_ms(resources::STATIC_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let known = [resources::STATE_URI, resources::DESCRIBE_URI];
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|u| known.contains(&u.as_str()))
                .cloned()
                .collect()
        });
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(binding) = self.binding(parts(subscription.request_context())) else {
            return Err(ErrorData::invalid_request(
                STATELESS_NEEDS_BEARER.to_string(),
                None,
            ));
        };
        let accepted = subscription.accepted();
        let interest = Interest {
            tools: accepted.tools_list_changed == Some(true),
            resources: std::sync::Mutex::new(
                accepted
                    .resource_subscriptions
                    .iter()
                    .flatten()
                    .cloned()
                    .collect(),
            ),
        };
        let watch = notify::watch(
            self.server.clone(),
            binding.tid,
            self.hosted.clone(),
            Outlet::Listen(subscription.sink().clone()),
            Arc::new(interest),
            false,
        );
        // The watch ends when the client stops taking notifications or the token goes.
        tokio::select! {
            () = subscription.cancelled() => {}
            () = watch => {}
        }
        Ok(())
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<A: App> McpHandler<A> {
    /// A tool call of a sessionless revision: the binding is the request's bearer; there is
    /// nothing to connect or disconnect (`docs/mcp.md` §Two generations).
    async fn stateless_call(
        &self,
        action: ToolAction,
        args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let binding = self.binding(parts(context));
        match (action, binding) {
            (ToolAction::Connect, Some(binding)) => {
                let forwarder = self.forwarder(&binding);
                self.cache.clear();
                match connect_flow(&forwarder, &self.cache).await {
                    Ok(result) => result.into(),
                    Err(text) => failure(text).into(),
                }
            }
            (ToolAction::Connect | ToolAction::Disconnect, None) => {
                failure(STATELESS_NEEDS_BEARER).into()
            }
            (ToolAction::Disconnect, Some(_)) => failure(STATELESS_DISCONNECT).into(),
            (ToolAction::Run(_), None) => failure(STATELESS_NEEDS_BEARER).into(),
            (ToolAction::Run(op), Some(binding)) => {
                let forwarder = self.forwarder(&binding);
                forward_tool(&forwarder, &self.cache, op, args).await.into()
            }
        }
    }
}

/// What a sessionless client without a bearer is told, by `connect_session` and every tool.
const STATELESS_NEEDS_BEARER: &str = "On MCP 2026-07-28 there is no session to connect: send \
    the agent token (agt_…) on every request as the header `Authorization: Bearer agt_…`. \
    With Claude Code: claude mcp add --transport http <app> <url of /agent/mcp> --header \
    \"Authorization: Bearer agt_…\"";

/// `disconnect_session` on a sessionless revision.
const STATELESS_DISCONNECT: &str = "On MCP 2026-07-28 the token travels with each request: \
    remove the Authorization header from the client's configuration to disconnect (the user \
    revokes the token in the app).";

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
