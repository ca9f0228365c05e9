//! Who asks `/agent/mcp` before a session is found (`docs/lap.md` §7.3): the client address's
//! rate limit (bucket `identity`) and the verification of the request's bearer into the
//! binding it travels with.

use axum::http::{header, request::Parts};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{insert_header, McpAdmission};
use crate::app::App;
use crate::ops::error::ApiError;
use crate::security::{
    request_client_address, AuditEntry, AuditEvent, AuthError, Bucket, TokenRecord,
};
use crate::surface::mcp::endpoint::bound_token::BoundToken;
use crate::surface::mcp::MCP_PATH;

impl<A: App, S> McpAdmission<A, S> {
    /// The client address's rate limit (bucket `identity`): 429 with `retry-after`, audited.
    pub(super) async fn limit_address(&self, parts: &Parts) -> Result<(), Box<Response>> {
        let server = &self.server;
        let address = request_client_address(parts, server.options().trust_proxy);
        if let Err(refused) = server.take_rate(&address, Bucket::Identity).await {
            let crate::security::Refusal::Limited(limited) = refused else {
                return Err(Box::new(ApiError::from(refused).into_response()));
            };
            crate::telemetry::rate_limited(Bucket::Identity.as_str());
            server
                .audit(AuditEntry::rate_limited(server.now(), None, MCP_PATH))
                .await;
            let mut response = ApiError::from(limited).into_response();
            insert_header(
                &mut response,
                header::RETRY_AFTER,
                limited.retry_after_secs(),
            );
            return Err(Box::new(response));
        }
        Ok(())
    }

    /// The binding of the request's `Authorization` bearer and the token record it verified
    /// to: 401 `auth-failed` / 403 `revoked` (audited, and counted against the client
    /// address) when it does not verify; 429 before any lookup while the address is blocked
    /// for failing too often.
    pub(super) async fn bearer_binding(
        &self,
        parts: &Parts,
    ) -> Result<(BoundToken, TokenRecord), Box<Response>> {
        let server = &self.server;
        let now = server.now();
        let address = || request_client_address(parts, server.options().trust_proxy);
        if let Err(limited) = server.auth_blocked_by(address) {
            return Err(Box::new(ApiError::from(limited).into_response()));
        }
        let authorization = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|a| a.to_str().ok());
        let verified = crate::ops::verify_mcp_bearer(server, authorization).await;
        match verified {
            Ok(record) => {
                let binding = BoundToken {
                    tid: record.tid.clone(),
                    token_hash: record.token_hash.clone(),
                    token: authorization
                        .and_then(|a| a.strip_prefix("Bearer "))
                        .map(str::to_owned),
                };
                Ok((binding, record))
            }
            Err(AuthError::StoreFailed) => Err(Box::new(
                ApiError::from(AuthError::StoreFailed).into_response(),
            )),
            Err(e) => {
                let detail = json!({"endpoint": MCP_PATH, "code": e.code().as_str()});
                let entry = AuditEntry::new(now, AuditEvent::AuthFailed, detail);
                server.auth_failed(&address(), MCP_PATH, Some(entry)).await;
                Err(Box::new(ApiError::from(e).into_response()))
            }
        }
    }
}
