//! The handler rmcp runs for `/agent/mcp` with the app's type erased ([`ErasedHandler`]), and
//! rmcp's service built around it here, once ([`rmcp_service`]). rmcp's sessions, transports
//! and workers are generic over their handler: around `McpHandler<A>` they were compiled again
//! in every app's binary, about a seventh of the todo example's code (`docs/architecture.md`
//! §Build). The price is a boxed future per MCP request that reaches rmcp.

use std::borrow::Cow;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

/// A future of a handler method, boxed.
type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// rmcp's service for `/agent/mcp`, as the admission layer wraps it.
pub(crate) type RmcpService = BoxCloneSyncService<Request<Body>, Response, Infallible>;

/// The methods of [`ServerHandler`] the `/agent/mcp` handler implements, object safe. Every
/// other method keeps rmcp's default, as it did on the handler itself.
pub(crate) trait SessionHandler: Send + Sync + 'static {
    fn get_info(&self) -> ServerConfig;
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]>;
    fn on_initialized(&self, context: NotificationContext<RoleServer>) -> Boxed<'_, ()>;
    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListToolsResult, ErrorData>>;
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<CallToolResponse, ErrorData>>;
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListResourcesResult, ErrorData>>;
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListResourceTemplatesResult, ErrorData>>;
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ReadResourceResponse, ErrorData>>;
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<(), ErrorData>>;
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<(), ErrorData>>;
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListPromptsResult, ErrorData>>;
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter>;
    fn listen(&self, subscription: SubscriptionContext) -> Boxed<'_, Result<(), ErrorData>>;
}

// The legacy revisions' `resources/subscribe` and `resources/unsubscribe` are deprecated in
// rmcp; the handler still serves them.
#[allow(deprecated)]
impl<H: ServerHandler> SessionHandler for H {
    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(self)
    }
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(self)
    }
    fn on_initialized(&self, context: NotificationContext<RoleServer>) -> Boxed<'_, ()> {
        Box::pin(ServerHandler::on_initialized(self, context))
    }
    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListToolsResult, ErrorData>> {
        Box::pin(ServerHandler::list_tools(self, request, context))
    }
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<CallToolResponse, ErrorData>> {
        Box::pin(ServerHandler::call_tool(self, request, context))
    }
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListResourcesResult, ErrorData>> {
        Box::pin(ServerHandler::list_resources(self, request, context))
    }
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListResourceTemplatesResult, ErrorData>> {
        Box::pin(ServerHandler::list_resource_templates(
            self, request, context,
        ))
    }
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ReadResourceResponse, ErrorData>> {
        Box::pin(ServerHandler::read_resource(self, request, context))
    }
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::subscribe(self, request, context))
    }
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::unsubscribe(self, request, context))
    }
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Boxed<'_, Result<ListPromptsResult, ErrorData>> {
        Box::pin(ServerHandler::list_prompts(self, request, context))
    }
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        ServerHandler::accepted_subscription_filter(self, requested)
    }
    fn listen(&self, subscription: SubscriptionContext) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::listen(self, subscription))
    }
}

/// One MCP session's (or one stateless request's) handler, whatever the app.
pub(crate) struct ErasedHandler(Box<dyn SessionHandler>);

impl ErasedHandler {
    pub(crate) fn new(handler: impl SessionHandler) -> Self {
        ErasedHandler(Box::new(handler))
    }
}

#[allow(deprecated)] // `subscribe` and `unsubscribe`, as above
impl ServerHandler for ErasedHandler {
    fn get_info(&self) -> ServerConfig {
        self.0.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.0.supported_protocol_versions()
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.0.on_initialized(context)
    }

    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + Send + '_ {
        self.0.list_tools(request, context)
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        self.0.call_tool(request, context)
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, ErrorData>> + Send + '_ {
        self.0.list_resources(request, context)
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, ErrorData>> + Send + '_ {
        self.0.list_resource_templates(request, context)
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, ErrorData>> + Send + '_ {
        self.0.read_resource(request, context)
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        self.0.subscribe(request, context)
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        self.0.unsubscribe(request, context)
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, ErrorData>> + Send + '_ {
        self.0.list_prompts(request, context)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.0.accepted_subscription_filter(requested)
    }

    fn listen(
        &self,
        subscription: SubscriptionContext,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        self.0.listen(subscription)
    }
}

/// rmcp's Streamable HTTP service over the handlers `factory` makes, boxed. Not generic: rmcp's
/// machinery is compiled here, with the runtime.
pub(crate) fn rmcp_service(
    factory: Box<dyn Fn() -> ErasedHandler + Send + Sync>,
    sessions: Arc<LocalSessionManager>,
    config: StreamableHttpServerConfig,
) -> RmcpService {
    let service = StreamableHttpService::new(move || Ok(factory()), sessions, config);
    let service = ServiceExt::<Request<Body>>::map_response(service, IntoResponse::into_response);
    BoxCloneSyncService::new(service)
}
