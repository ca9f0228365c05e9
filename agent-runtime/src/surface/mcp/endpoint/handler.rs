//! The MCP server handler of `/agent/mcp`: one per MCP session (rmcp builds it at
//! `initialize`). It serves the 19 tools; the session's binding lives in the registry, keyed by
//! the `mcp-session-id` of each request, and an operation's tool runs through the operation
//! gate with the bound token as the credential, so the whole gate applies (auth, rate limit,
//! activation, log, audit, idempotency) with no HTTP request in between.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use super::actions::session_tools;
use super::bound_token::BoundToken;
use super::client_confirm::InClient;
use super::disk_bounds;
use super::notify::{self, Interest, Outlet, WatchSlot};
use super::progress;
use super::restore;
use super::run::{
    ClientAsks, Generation, ToolAnswer, ToolCall, ToolRunner, STATELESS_NEEDS_BEARER,
};
use super::McpState;
use crate::app::App;
use crate::ops::budget::Asked;
use crate::ops::Operation;
use crate::security::verify_tid;
use crate::security::{request_client_address, verify_bearer, AuthError};
use crate::surface::mcp::app_view;
use crate::surface::mcp::calls;
use crate::surface::mcp::format::{
    failure, forwarded_failure, success, NOT_CONNECTED_SERVER, TOKEN_INVALID,
};
use crate::surface::mcp::forward::{connect_flow, DescriptionCache, Forwarder};
use crate::surface::mcp::resources;
use crate::surface::mcp::tools::ToolAction;
use crate::surface::mcp::MCP_PATH;

const INSTRUCTIONS: &str = "This server drives a running app. Start with connect_session and \
    the agent token the user copies from the app (agt_…). Then observe to read the state and \
    the actions available, and send_message to act; narrate tells the user what you are doing.";

/// The `/agent/mcp` handler of one MCP session (legacy revisions) or of one request
/// (2026-07-28).
pub(crate) struct McpHandler<A: App> {
    server: McpState<A>,
    /// The tools, the hosted app's action tools and what runs them, built once for the
    /// endpoint and shared with the admission layer's fast path.
    runner: Arc<ToolRunner<A>>,
    cache: DescriptionCache,
    /// What this session's client asked to hear about.
    interest: Arc<Interest>,
    /// The session's watch (legacy sessions), stopped with the handler.
    watch: WatchSlot,
}

impl<A: App> McpHandler<A> {
    /// The connect flow's result, within the budget (it holds the state as `observe` does).
    fn connected(&self, result: CallToolResult) -> CallToolResponse {
        let asked = Asked::of(Operation::Observe, &Map::new());
        let answer = ToolAnswer::Result(Box::new(result.into()));
        self.runner.within_budget(&asked, answer).into_response()
    }

    pub(crate) fn new(server: McpState<A>, runner: Arc<ToolRunner<A>>) -> Self {
        McpHandler {
            server,
            runner,
            cache: DescriptionCache::default(),
            interest: Arc::new(Interest {
                tools: true,
                ..Interest::default()
            }),
            watch: WatchSlot::default(),
        }
    }

    /// The binding of the call: its MCP session's, or a 2026-07-28 request's bearer.
    fn binding(&self, context_parts: Option<&Parts>) -> Option<BoundToken> {
        let parts = context_parts?;
        match parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            Some(id) => self.server.mcp_sessions().bound_token(id),
            None => parts.extensions.get::<BoundToken>().cloned(),
        }
    }

    /// Starts (or restarts) this legacy session's watch for the token `tid`.
    fn start_watch(&self, peer: rmcp::service::Peer<RoleServer>, tid: String, announce: bool) {
        self.watch.replace(notify::watch(
            self.server.clone(),
            tid,
            Outlet::Session(peer),
            self.interest.clone(),
            announce,
        ));
    }

    async fn connect(
        &self,
        session: Option<&str>,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let Some(session) = session else {
            return failure("connect_session needs an MCP session (mcp-session-id)").into();
        };
        let token = args
            .get("token")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let sessions = self.server.mcp_sessions();
        // A token that does not verify counts against the client address, which is refused
        // before the lookup once it failed too often.
        let address = parts(context)
            .map(|p| request_client_address(p, self.server.options().trust_proxy))
            .unwrap_or_default();
        if let Err(limited) = self.server.auth_blocked_by(|| address.clone()) {
            let wait = limited.retry_after_secs();
            return failure(format!(
                "Too many failed authentications from this address: retry in {wait} s."
            ))
            .into();
        }
        let verified = verify_bearer(
            Some(&format!("Bearer {token}")),
            &**self.server.tokens(),
            self.server.now(),
            self.server.options().sliding_ttl_ms(),
        )
        .await;
        // A store that failed is not the caller's failure.
        if matches!(verified, Err(ref e) if e.refused_credential()) {
            self.server.auth_failed(&address, MCP_PATH, None).await;
        }
        let record = match verified {
            Ok(record) => record,
            Err(AuthError::AuthFailed) => return failure(TOKEN_INVALID).into(),
            Err(AuthError::Lapsed(lapse)) => {
                return failure(format!("Token {}: {}.", lapse.as_str(), lapse.detail())).into()
            }
            Err(e) => return failure(format!("Auth failed: {e}")).into(),
        };
        let binding = BoundToken {
            tid: record.tid,
            token_hash: record.token_hash,
            token: Some(token.to_string()),
        };
        let forwarder = self.runner.forwarder(&binding);
        let tid = binding.tid.clone();
        let binding_kept = binding.clone();
        let Some(evicted) = sessions.bind(session, binding) else {
            return failure("connect_session failed: this MCP session is no longer live").into();
        };
        sessions.close(evicted).await;
        self.cache.clear();
        match connect_flow(&forwarder, &self.cache).await {
            Ok(result) => {
                // Kept by token id, so the binding survives a restart (never the token).
                if let Some(store) = self.server.mcp_bindings() {
                    let kept = restore::remember(store, session, &binding_kept, self.server.now());
                    let kept = kept.await;
                    let trimmed = disk_bounds::trim(store, sessions, Some(&tid)).await;
                    // A fleet counts its token caps in the store (`docs/mcp.md` §Sessions
                    // across replicas): a binding it could not record there is dropped.
                    if kept.and(trimmed).is_err() && sessions.deletions().is_shared() {
                        sessions.unbind(session, self.server.now());
                        self.cache.clear();
                        return failure(
                            "connect_session failed: the binding could not be recorded in the \
                             store the replicas share; call connect_session again",
                        )
                        .into();
                    }
                }
                // The client learns about the session's actions at once.
                self.start_watch(context.peer.clone(), tid, true);
                self.connected(result)
            }
            Err(text) => {
                sessions.unbind(session, self.server.now());
                self.cache.clear();
                self.watch.clear();
                failure(text).into()
            }
        }
    }
}

/// `ttlMs` of a `tools/list` that cannot change for its credential (2026-07-28, a hosted app):
/// a new version of the app (a restart) is seen within it.
const STABLE_LIST_TTL_MS: u64 = 10 * 60 * 1000;

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
        // The 19 tools alone are the same for everyone with every scope.
        let mut tools = None;
        let mut fixed = true;
        if let Some(binding) = self.binding(parts(&context)) {
            // A session that cannot be read now (paused) lists no actions; a token lists the
            // tools its scopes allow (the MCP revision lets a list vary by authorization).
            match session_tools(&self.server, &binding.tid, self.runner.hosted()).await {
                Ok(actions) => {
                    let mut own = self.runner.tools().listed_for(actions.scope.as_deref());
                    own.extend(actions.tools);
                    tools = Some(own);
                    fixed = actions.fixed;
                }
                Err(_) => fixed = false,
            }
        }
        let mut tools = tools.unwrap_or_else(|| self.runner.tools().list().tools);
        // A client that renders MCP Apps (declared at initialize, or per request on 2026-07-28)
        // sees the tools the view shows tied to it; any other sees the list unchanged.
        if app_view::declared(context.client_capabilities().as_ref()) {
            app_view::tie(&mut tools);
        }
        // The list depends on the caller's token and its app's schema, never on the state: a
        // sessionless client may keep it while nothing can change it; a session may bind or
        // unbind (`connect_session`), a paired app pair again, so theirs stays fresh.
        let ttl = match session_id(&context) {
            None if fixed => STABLE_LIST_TTL_MS,
            _ => 0,
        };
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(ttl)
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = session_id(&context);
        let on = self.server.options().mcp.confirm_in_client;
        let in_client = InClient::of(on, session.is_none(), &mut request, &context);
        let (action, args) = match self.runner.resolve(request)? {
            ToolCall::Bound(call) => {
                let generation = match session {
                    Some(_) => Generation::Session,
                    None => Generation::Stateless,
                };
                let binding = self.binding(parts(&context));
                let follow = progress::watch_of(&context);
                let answer = self.runner.run(
                    call,
                    binding,
                    None,
                    generation,
                    &self.cache,
                    ClientAsks {
                        in_client: &in_client,
                        follow: Some(follow.clone()),
                    },
                );
                let answer = progress::followed(follow, &context, answer).await?;
                return Ok(answer.into_response());
            }
            ToolCall::Session(action, args) => (action, args),
        };
        let Some(session) = session else {
            return Ok(self.stateless_session_tool(action, &context).await);
        };
        Ok(match action {
            ToolAction::Connect => self.connect(Some(&session), &args, &context).await,
            // `ToolAction::Run` never comes here (it is a bound call).
            _ => {
                let sessions = self.server.mcp_sessions();
                sessions.unbind(&session, self.server.now());
                if let Some(store) = self.server.mcp_bindings() {
                    restore::forget(store, &session).await;
                }
                self.cache.clear();
                self.watch.clear();
                success(json!({"status": "disconnected"})).into()
            }
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
        if request.uri == app_view::VIEW_URI {
            return Ok(self.read_view(parts(&context)).await.into());
        }
        let op = resources::operation(&request.uri)?;
        let Some(binding) = self.binding(parts(&context)) else {
            // The hosted app's description is the same for every caller.
            if op == Operation::Describe {
                let text = self.server.host().describe().to_string();
                return Ok(resources::shared_description(text).into());
            }
            return Err(ErrorData::invalid_request(NOT_CONNECTED_SERVER, None));
        };
        match self.runner.forwarder(&binding).post(op, json!({})).await {
            Ok(success) => {
                let text = self.runner.resource_within_budget(op, success);
                Ok(resources::contents(&request.uri, text).into())
            }
            Err(e) => {
                let text = forwarded_failure(op.tool(), op.lap_path(), &e);
                Err(ErrorData::internal_error(text, None))
            }
        }
    }

    #[allow(deprecated)] // the legacy revisions' subscription, beside `listen`
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if request.uri == app_view::VIEW_URI {
            return Err(ErrorData::invalid_params(
                format!(
                    "{} does not change: there is nothing to subscribe to",
                    app_view::VIEW_URI
                ),
                Some(json!({ "uri": request.uri })),
            ));
        }
        resources::operation(&request.uri)?;
        self.interest.resources.lock().insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)] // the legacy revisions' subscription, beside `listen`
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.interest.resources.lock().remove(&request.uri);
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
            resources: parking_lot::Mutex::new(
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

impl<A: App> McpHandler<A> {
    /// The session view, for the reader's session when its binding still verifies (a store
    /// that fails leaves it out too: the view then says what its first call answers).
    async fn read_view(&self, parts: Option<&Parts>) -> rmcp::model::ReadResourceResult {
        let record = match self.binding(parts) {
            Some(binding) => verify_tid(
                &binding.tid,
                &**self.server.tokens(),
                self.server.now(),
                self.server.options().sliding_ttl_ms(),
            )
            .await
            .ok(),
            None => None,
        };
        let rate = &self.server.options().rate_limit;
        app_view::contents(app_view::document(record.as_ref(), rate))
    }

    /// `connect_session` / `disconnect_session` on a sessionless revision: the binding is the
    /// request's bearer; there is nothing to connect or disconnect (`docs/mcp.md` §Two
    /// generations).
    async fn stateless_session_tool(
        &self,
        action: ToolAction,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        match (action, self.binding(parts(context))) {
            (ToolAction::Connect, Some(binding)) => {
                let forwarder = self.runner.forwarder(&binding);
                self.cache.clear();
                match connect_flow(&forwarder, &self.cache).await {
                    Ok(result) => self.connected(result),
                    Err(text) => failure(text).into(),
                }
            }
            (_, None) => failure(STATELESS_NEEDS_BEARER).into(),
            (_, Some(_)) => failure(STATELESS_DISCONNECT).into(),
        }
    }
}

/// `disconnect_session` on a sessionless revision.
const STATELESS_DISCONNECT: &str = "On MCP 2026-07-28 the token travels with each request: \
    remove the Authorization header from the client's configuration to disconnect (the user \
    revokes the token in the app).";
