//! The admission layer of `/agent/mcp` (`docs/lap.md` §7.3), a tower layer in front of rmcp's
//! `StreamableHttpService`.
//!
//! Checks first, in order: body over 1 MiB → 413; `Host` not allowed → 403; a POST without
//! both accepted media types → 406, without a JSON body → 415, with unparsable JSON-RPC → rmcp's
//! 400. Then every request sweeps the expired sessions, and:
//! - with `mcp-session-id`: a live id is touched and handed to rmcp (`DELETE` closes it and
//!   answers 200 here; a plain `tools/call` is answered here, `fast_call`); with a durable store, an id issued before a restart, bound to a token
//!   that is still valid and not deleted is rebuilt bound to that token (a bearer, when sent,
//!   must be that token); any other id → 404
//!   `{"error":"session not found"}`;
//! - without it: `server/discover` goes to rmcp; a request of the sessionless revision has its
//!   bearer verified (a plain `tools/call` with one is answered here, `fast_call`) and goes to
//!   rmcp; anything else but a POST `initialize` → 400
//!   `{"error":"mcp-session-id required"}`; an `initialize` is rate limited (client address),
//!   its bearer verified (admitted AND bound; the token's LRU sessions make room), a slot
//!   reserved (provisional LRU eviction, else 503 `session-capacity`), the session built and
//!   registered. The reservation is released exactly once on every path.
//!
//! `caller` holds the address's rate limit and the bearer's verification; `initialize` the
//! `initialize` path.

mod caller;
mod initialize;

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, request::Parts, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::StreamExt as _;
use http_body_util::{BodyExt, Limited};
use serde_json::json;
use tower::{Layer, Service, ServiceExt as _};

use super::disk_bounds;
use super::fast_call::{self, PlainCall, Route};
use super::priming::ClientRevision;
use super::request_kind::{
    accepts_json_and_sse, declared_length, header_names_stateless_revision, is_json,
    is_stateless_revision, Kind, Peek,
};
use super::restore;
use super::revoked;
use super::run::ToolRunner;
use super::McpState;
use crate::app::App;
use crate::config::MAX_BODY_BYTES;
use crate::ops::error::ApiError;
use crate::security::AllowedHosts;
use tea_agent_schema::protocol::ErrorCode;

const SESSION_HEADER: &str = "mcp-session-id";

/// The service the layer wraps (rmcp's `StreamableHttpService`): the bounds every impl of
/// [`McpAdmission`] needs, named once.
pub(crate) trait McpService:
    Service<Request<Body>, Response: IntoResponse, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> McpService for S where
    S: Service<Request<Body>, Response: IntoResponse, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// Builds [`McpAdmission`] around rmcp's service.
pub(crate) struct McpAdmissionLayer<A: App> {
    server: McpState<A>,
    runner: std::sync::Arc<ToolRunner<A>>,
    hosts: AllowedHosts,
    restoring: std::sync::Arc<tokio::sync::Mutex<()>>,
}

impl<A: App> McpAdmissionLayer<A> {
    /// The admission rules of `server`'s MCP options; `runner` answers the plain tool calls
    /// of the fast path.
    pub(crate) fn new(server: McpState<A>, runner: std::sync::Arc<ToolRunner<A>>) -> Self {
        let hosts = AllowedHosts::new(&server.options().mcp.allowed_hosts);
        McpAdmissionLayer {
            server,
            runner,
            hosts,
            restoring: Default::default(),
        }
    }
}

impl<A: App, S> Layer<S> for McpAdmissionLayer<A> {
    type Service = McpAdmission<A, S>;

    fn layer(&self, inner: S) -> Self::Service {
        McpAdmission {
            server: self.server.clone(),
            runner: self.runner.clone(),
            hosts: std::sync::Arc::new(self.hosts.clone()),
            restoring: self.restoring.clone(),
            inner: std::sync::Arc::new(inner),
        }
    }
}

/// The admission service: the session rules of `docs/lap.md` §7.3 in front of `S`. Cloned
/// for every request (by axum and for its future), so what it holds is shared.
pub(crate) struct McpAdmission<A: App, S> {
    server: McpState<A>,
    /// Runs the tool calls answered here (`fast_call`), as rmcp's handler runs them.
    runner: std::sync::Arc<ToolRunner<A>>,
    /// `McpOptions::allowed_hosts`, parsed once.
    hosts: std::sync::Arc<AllowedHosts>,
    /// Held while a session is rebuilt from the store, so the requests a client sends together
    /// after a restart (its event stream and a call) rebuild it once; shared by all clones.
    restoring: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// rmcp's service (its clone copies its whole configuration: made only to pass a request).
    inner: std::sync::Arc<S>,
}

impl<A: App, S> Clone for McpAdmission<A, S> {
    fn clone(&self) -> Self {
        McpAdmission {
            server: self.server.clone(),
            runner: self.runner.clone(),
            hosts: self.hosts.clone(),
            restoring: self.restoring.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<A: App, S: McpService> Service<Request<Body>> for McpAdmission<A, S> {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            #[cfg(feature = "oauth")]
            {
                let (parts, body) = request.into_parts();
                let challenge_parts = strip_body_parts(&parts);
                let mut response = this.admit(Request::from_parts(parts, body)).await;
                super::oauth_check::challenge_401(&this.server, &challenge_parts, &mut response);
                Ok(response)
            }
            #[cfg(not(feature = "oauth"))]
            Ok(this.admit(request).await)
        })
    }
}

impl<A: App, S: McpService> McpAdmission<A, S> {
    async fn pass(&self, parts: Parts, body: Bytes) -> Response {
        let request = Request::from_parts(parts, Body::from(body));
        match S::clone(&self.inner).oneshot(request).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        }
    }

    /// The admission rules, and the answer shaped for the client's revision (`priming`).
    async fn admit(&self, request: Request<Body>) -> Response {
        let mut revision = ClientRevision::from_headers(request.headers());
        let response = self.route(request, &mut revision).await;
        revision.shape(response)
    }

    /// Admits `request` and routes it; an `initialize` sets `revision` to the one it
    /// negotiates.
    async fn route(&self, request: Request<Body>, revision: &mut ClientRevision) -> Response {
        let (parts, body) = request.into_parts();
        if declared_length(&parts.headers).is_some_and(|n| n > MAX_BODY_BYTES as u64) {
            return ApiError::payload_too_large().into_response();
        }
        if !self.hosts.allows(&parts.headers, parts.uri.authority()) {
            return plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            );
        }
        if ![Method::POST, Method::GET, Method::DELETE].contains(&parts.method) {
            // rmcp answers 405 with `Allow`.
            return self.pass(parts, Bytes::new()).await;
        }
        let mut kind = Kind::Other;
        let mut stateless = header_names_stateless_revision(&parts.headers);
        let mut bytes = Bytes::new();
        // A plain `tools/call`, read once for admission and the fast path.
        let mut call = None;
        if parts.method == Method::POST {
            if !accepts_json_and_sse(&parts.headers) {
                return plain(
                    StatusCode::NOT_ACCEPTABLE,
                    "Not Acceptable: Client must accept both application/json and text/event-stream",
                );
            }
            if !is_json(&parts.headers) {
                return plain(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Unsupported Media Type: Content-Type must be application/json",
                );
            }
            bytes = match Limited::new(body, MAX_BODY_BYTES).collect().await {
                Ok(c) => c.to_bytes(),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    return ApiError::payload_too_large().into_response()
                }
                Err(_) => return plain(StatusCode::BAD_REQUEST, "Bad Request: unreadable body"),
            };
            if let Some(plain) = PlainCall::read(&bytes) {
                // What the peek below reads of it.
                stateless |= plain.version().is_some_and(is_stateless_revision);
                kind = Kind::ToolCall;
                call = Some(plain);
            } else {
                match serde_json::from_slice::<Peek<'_>>(&bytes) {
                    // rmcp answers unparsable JSON or JSON-RPC with 400; nothing is allocated.
                    Err(_) => return self.pass(parts, bytes).await,
                    Ok(peek) => {
                        stateless |= peek.version().is_some_and(is_stateless_revision);
                        kind = peek.kind();
                        if kind == Kind::Initialize {
                            *revision = ClientRevision::at_initialize(peek.requested_version());
                        }
                    }
                }
            }
        }
        if stateless {
            // Its `_meta` may name the revision that its headers do not.
            *revision = ClientRevision::SESSIONLESS;
        }
        let sessions = self.server.mcp_sessions();
        let expired = sessions.sweep(self.server.now());
        sessions.close(expired).await;
        sessions.forget_ended().await;
        revoked::end_revoked(&self.server).await;
        revoked::end_deleted(&self.server).await;
        let session = parts
            .headers
            .get(SESSION_HEADER)
            .map(|v| v.to_str().unwrap_or_default().to_string());
        #[cfg(feature = "oauth")]
        if let Some(answer) =
            super::oauth_check::check(&self.server, &parts, &bytes, kind, session.as_deref()).await
        {
            return answer;
        }
        match session {
            Some(id) => self.with_session(parts, bytes, id, call).await,
            None => match (&parts.method, kind) {
                (&Method::POST, Kind::Discover) => self.pass(parts, bytes).await,
                (&Method::POST, Kind::Initialize) => self.initialize(parts, bytes).await,
                _ if stateless => self.stateless(parts, bytes, call, kind).await,
                _ => bare_error(StatusCode::BAD_REQUEST, "mcp-session-id required"),
            },
        }
    }

    async fn with_session(
        &self,
        parts: Parts,
        bytes: Bytes,
        id: String,
        call: Option<PlainCall>,
    ) -> Response {
        let sessions = self.server.mcp_sessions();
        // Registered ids only: never issued, expired, evicted, deleted or ended → 404; with
        // a durable store, an id issued before a restart is rebuilt.
        if !sessions.touch(&id, self.server.now()) {
            return self.restore(parts, bytes, id, call).await;
        }
        if sessions.is_rebuilding(&id) {
            // rmcp takes a session as present once its worker exists, before the stored
            // `initialize` is replayed to it; a request passed in between kills the worker.
            // The rebuilding request holds the lock until rmcp has restored the session.
            drop(self.restoring.clone().lock_owned().await);
        }
        self.live_session(parts, bytes, id, call).await
    }

    /// A request for live session `id`.
    async fn live_session(
        &self,
        parts: Parts,
        bytes: Bytes,
        id: String,
        call: Option<PlainCall>,
    ) -> Response {
        let sessions = self.server.mcp_sessions();
        // A session rebuilt without its raw token ends once its token's record changed hash
        // (a claim rotated it) or stopped verifying.
        if let Some(binding) = sessions.bound_token(&id) {
            if !restore::still_bound(&self.server, &binding).await {
                sessions.remove(&id);
                sessions.close(vec![id]).await;
                return bare_error(StatusCode::NOT_FOUND, "session not found");
            }
        }
        if parts.method == Method::DELETE {
            sessions.remove(&id);
            // Also deletes the stored binding.
            sessions.close(vec![id.clone()]).await;
            return StatusCode::OK.into_response();
        }
        if let Some(call) = call {
            let route = Route::Session(&id);
            if let Some(answer) = self.fast_call(&parts, call, route).await {
                return answer;
            }
        }
        self.pass(parts, bytes).await
    }

    /// A plain `tools/call` answered here, or `None` for rmcp (`fast_call`).
    async fn fast_call(
        &self,
        parts: &Parts,
        call: PlainCall,
        route: Route<'_>,
    ) -> Option<Response> {
        let sessions = self.server.mcp_sessions();
        fast_call::answer(&self.runner, sessions, &parts.headers, call, route).await
    }

    fn durable(&self) -> Option<&std::sync::Arc<dyn crate::engine::store::McpBindings>> {
        self.server.mcp_bindings()
    }

    /// An id this server does not hold: with a durable store, one it issued (not deleted) and
    /// bound to a token is rebuilt under the same id (rmcp replays the stored `initialize`),
    /// bound to that token again: the session id is the client's credential, as it was before
    /// the restart. The checks (`restore::admit_stored`: the client address's failures, the
    /// stored binding, the token's record and hash) hold no lock; only a request that passed
    /// them takes the rebuild lock. Anything else → 404.
    async fn restore(
        &self,
        parts: Parts,
        bytes: Bytes,
        id: String,
        call: Option<PlainCall>,
    ) -> Response {
        let not_found = || bare_error(StatusCode::NOT_FOUND, "session not found");
        let Some(store) = self.durable() else {
            return not_found();
        };
        let binding = match restore::admit_stored(&self.server, store, &parts, &id).await {
            Ok(binding) => binding,
            Err(restore::Refused::NotFound) => return not_found(),
            Err(restore::Refused::Limited(limited)) => {
                return ApiError::from(limited).into_response()
            }
        };
        let rebuilding = self.restoring.clone().lock_owned().await;
        let server = &self.server;
        let sessions = server.mcp_sessions().clone();
        // Another request may have rebuilt it while this one waited.
        if sessions.touch(&id, server.now()) {
            drop(rebuilding);
            return self.live_session(parts, bytes, id, call).await;
        }
        if parts.method == Method::DELETE {
            restore::delete(store, &id).await;
            return StatusCode::OK.into_response();
        }
        let evicted = sessions.make_room_for_token(&binding.tid);
        sessions.close(evicted).await;
        let reservation = match sessions.reserve(false) {
            Ok((reservation, evicted)) => {
                sessions.close(evicted).await;
                reservation
            }
            Err(_) => {
                let error = ApiError::new(ErrorCode::SessionCapacity);
                let mut response = error.into_response();
                insert_header(&mut response, header::RETRY_AFTER, 30);
                return response;
            }
        };
        let tid = binding.tid.clone();
        reservation.commit_rebuilding(id.clone(), server.now(), binding);
        // (A failure is logged; the rebuilt session is a row the store already holds.)
        let _ = disk_bounds::trim(store, &sessions, Some(&tid)).await;
        // Held until rmcp has restored the session (its answer's head comes after that), so
        // the client's other requests for this id wait for the restore (see `with_session`).
        // A POST is answered with an event stream and a GET is one, so this is not a tool's
        // run time.
        let response = self.pass(parts, bytes).await;
        if response.status() == StatusCode::NOT_FOUND {
            // rmcp could not restore it: never rebuilt, the row goes.
            sessions.remove(&id);
            restore::delete(store, &id).await;
        } else {
            sessions.rebuilt(&id);
        }
        drop(rebuilding);
        response
    }

    /// A request of a sessionless revision (2026-07-28, `docs/mcp.md` §Two generations): the
    /// bearer, when sent, is verified and travels with the request to the handler as its
    /// binding; without one, the client address is rate limited. rmcp then checks the
    /// revision's headers and `_meta` and serves it statelessly.
    async fn stateless(
        &self,
        mut parts: Parts,
        bytes: Bytes,
        call: Option<PlainCall>,
        kind: Kind,
    ) -> Response {
        let mut listen_slot = None;
        if parts.headers.contains_key(header::AUTHORIZATION) {
            match self.bearer_binding(&parts).await {
                Ok((binding, record)) => {
                    if let Some(call) = call {
                        let route = Route::Stateless(&binding, Box::new(record));
                        if let Some(answer) = self.fast_call(&parts, call, route).await {
                            return answer;
                        }
                    }
                    if matches!(kind, Kind::Listen) {
                        match self.server.listens.take(&binding.tid) {
                            Ok(slot) => listen_slot = Some(slot),
                            Err(max) => return too_many_listens(max),
                        }
                    }
                    parts.extensions.insert(binding);
                }
                Err(response) => return *response,
            }
        } else if let Err(response) = self.limit_address(&parts).await {
            return *response;
        }
        let response = self.pass(parts, bytes).await;
        match listen_slot {
            // Held as long as the stream's body is.
            Some(slot) => response.map(|body| {
                Body::from_stream(body.into_data_stream().map(move |chunk| {
                    let _held = &slot;
                    chunk
                }))
            }),
            None => response,
        }
    }
}

/// A `subscriptions/listen` over the token's streams: 429 `rate-limited`, saying why.
fn too_many_listens(max: usize) -> Response {
    ApiError::new(ErrorCode::RateLimited)
        .with_detail(format!(
            "this token already holds {max} open subscriptions/listen streams, the most one \
             token may hold: close one before opening another"
        ))
        .into_response()
}

/// What the challenge of a 401 reads of a request (its headers and URI), kept while the
/// request itself is handed on.
#[cfg(feature = "oauth")]
fn strip_body_parts(parts: &Parts) -> Parts {
    let mut request = Request::builder()
        .method(parts.method.clone())
        .uri(parts.uri.clone())
        .body(())
        .map(|r| r.into_parts().0)
        .unwrap_or_else(|_| Request::new(()).into_parts().0);
    request.headers = parts.headers.clone();
    request
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// `{"error": "<text>"}`: the two MCP answers with a bare string.
fn bare_error(status: StatusCode, text: &str) -> Response {
    let mut response = (status, json!({ "error": text }).to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn insert_header(response: &mut Response, name: header::HeaderName, value: u64) {
    if let Ok(v) = HeaderValue::try_from(value.to_string()) {
        response.headers_mut().insert(name, v);
    }
}
