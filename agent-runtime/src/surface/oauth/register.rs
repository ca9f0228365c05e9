//! `POST /agent/oauth/register`: dynamic client registration (RFC 7591), bounded in count
//! and size, rate limited per address; the registration expires when no grant uses it.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::reply::{limit, no_store, read_body, OAuthError};
use super::REGISTER_PATH;
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::oauth::{RegistrationError, RegistrationRequest};
use crate::security::{AuditEntry, AuditEvent};

pub(super) async fn register<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return ApiError::method_not_allowed().into_response();
    }
    if let Err(limited) = limit(&server, &parts, REGISTER_PATH).await {
        return limited;
    }
    let Some(oauth) = server.oauth() else {
        return ApiError::method_not_allowed().into_response();
    };
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(e) => return e.audited(&server, REGISTER_PATH).await,
    };
    let request: RegistrationRequest = match serde_json::from_slice(&bytes) {
        Ok(request) => request,
        Err(e) => {
            let error = OAuthError::bad(
                "invalid_client_metadata",
                format!("the registration is not the JSON object of RFC 7591: {e}"),
            );
            return error.audited(&server, REGISTER_PATH).await;
        }
    };
    let now = server.now();
    let client = match oauth.clients.register(request, now).await {
        Ok(client) => client,
        Err(e) => {
            let status = match &e {
                RegistrationError::Full(_) => StatusCode::SERVICE_UNAVAILABLE,
                RegistrationError::Store(e) => {
                    tracing::error!(target: "tea_agent_runtime::store", "oauth: {e}");
                    StatusCode::INTERNAL_SERVER_ERROR
                }
                _ => StatusCode::BAD_REQUEST,
            };
            let error = OAuthError::new(status, e.code(), e.description());
            return error.audited(&server, REGISTER_PATH).await;
        }
    };
    let detail = json!({"clientId": client.client_id, "clientName": client.client_name});
    server
        .audit(AuditEntry::new(now, AuditEvent::OauthRegistered, detail))
        .await;
    let body = json!({
        "client_id": client.client_id,
        "client_id_issued_at": now / 1000,
        "client_name": client.client_name,
        "redirect_uris": client.redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    no_store(StatusCode::CREATED, &body)
}
