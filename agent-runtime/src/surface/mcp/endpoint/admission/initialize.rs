//! A POST `initialize` without `mcp-session-id` (`docs/lap.md` §7.3): rate limited by client
//! address, its bearer verified (admitted AND bound; the token's LRU sessions make room), a slot
//! reserved (provisional LRU eviction, else 503 `session-capacity`), the session built by rmcp on
//! its own task and registered. The reservation is released exactly once on every path.

use axum::http::{header, request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;

use super::{insert_header, McpAdmission, McpService, SESSION_HEADER};
use crate::app::App;
use crate::ops::error::ApiError;
use crate::security::{AuditEntry, AuditEvent};
use crate::surface::mcp::endpoint::{disk_bounds, restore};
use crate::surface::mcp::MCP_PATH;
use tea_agent_schema::protocol::ErrorCode;

impl<A: App, S: McpService> McpAdmission<A, S> {
    pub(super) async fn initialize(&self, parts: Parts, bytes: Bytes) -> Response {
        let server = &self.server;
        if server.is_stopping() {
            // No new session on a server that is going away (`docs/operations.md` §Shutdown).
            return ApiError::shutting_down().into_response();
        }
        let now = server.now();
        if let Err(response) = self.limit_address(&parts).await {
            return *response;
        }
        let mut binding = None;
        if parts.headers.contains_key(header::AUTHORIZATION) {
            match self.bearer_binding(&parts).await {
                Ok((b, _)) => binding = Some(b),
                Err(response) => return *response,
            }
        }
        let sessions = server.mcp_sessions().clone();
        if let Some(b) = &binding {
            let evicted = sessions.make_room_for_token(&b.tid);
            sessions.close(evicted).await;
        }
        let reservation = match sessions.reserve(binding.is_none()) {
            Ok((reservation, evicted)) => {
                sessions.close(evicted).await;
                reservation
            }
            Err(_) => {
                let detail = json!({"endpoint": MCP_PATH, "reason": "session-capacity"});
                server
                    .audit(AuditEntry::new(now, AuditEvent::RateLimited, detail))
                    .await;
                let error = ApiError::new(ErrorCode::SessionCapacity);
                let mut response = error.into_response();
                insert_header(&mut response, header::RETRY_AFTER, 30);
                return response;
            }
        };
        // Built on its own task: a client that goes away mid-build cannot leave an rmcp
        // session behind without a registry entry.
        let this = self.clone();
        let build = tokio::spawn(async move {
            let response = this.pass(parts, bytes).await;
            let id = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match id {
                Some(id) if response.status() == StatusCode::OK => {
                    let mut kept = Ok(());
                    if let (Some(store), Some(b)) = (this.durable(), &binding) {
                        kept = restore::remember(store, &id, b, this.server.now()).await;
                    }
                    let tid = binding.as_ref().map(|b| b.tid.clone());
                    reservation.commit(id.clone(), this.server.now(), binding);
                    let sessions = this.server.mcp_sessions();
                    if let Some(store) = this.durable() {
                        let trimmed = disk_bounds::trim(store, sessions, tid.as_deref()).await;
                        kept = kept.and(trimmed);
                    }
                    // A fleet counts its token caps in the store: a session it could not
                    // record there is not kept (fail closed, `docs/mcp.md` §Sessions across
                    // replicas).
                    if kept.is_err() && tid.is_some() && sessions.deletions().is_shared() {
                        if sessions.remove(&id) {
                            sessions.close(vec![id]).await;
                        }
                        return ApiError::internal(
                            "the MCP session could not be recorded in the store the replicas \
                             share, so it was closed; initialize again",
                        )
                        .into_response();
                    }
                }
                _ => drop(reservation),
            }
            response
        });
        match build.await {
            Ok(response) => response,
            Err(e) => {
                ApiError::internal(format!("building the MCP session failed: {e}")).into_response()
            }
        }
    }
}
