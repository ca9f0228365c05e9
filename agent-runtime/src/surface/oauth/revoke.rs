//! `POST /agent/oauth/revoke` (RFC 7009): a refresh token revokes its whole grant (and the
//! grant's agent token record); an access token only itself. An unknown token is answered
//! 200 as the RFC asks (§2.2); another client's token is refused.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::reply::{limit, no_store, read_form, OAuthError};
use super::token::revoke_grant;
use super::REVOKE_PATH;
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::oauth::{hash_of, SecretKind};
use crate::security::{AuditEntry, AuditEvent};

#[derive(Debug, Deserialize)]
struct RevokeRequest {
    token: Option<String>,
    #[allow(dead_code)] // read to accept it: both kinds are told apart by their prefix
    token_type_hint: Option<String>,
    client_id: Option<String>,
}

pub(super) async fn revoke<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return ApiError::method_not_allowed().into_response();
    }
    if let Err(limited) = limit(&server, &parts, REVOKE_PATH).await {
        return limited;
    }
    let Some(oauth) = server.oauth().cloned() else {
        return ApiError::method_not_allowed().into_response();
    };
    let request: RevokeRequest = match read_form(&parts, body).await {
        Ok(r) => r,
        Err(e) => return e.audited(&server, REVOKE_PATH).await,
    };
    let Some(token) = request.token.as_deref() else {
        return OAuthError::invalid_request("token is missing")
            .audited(&server, REVOKE_PATH)
            .await;
    };
    let Some(client_id) = request.client_id.as_deref() else {
        return OAuthError::invalid_client("client_id is missing")
            .audited(&server, REVOKE_PATH)
            .await;
    };
    let (kind, hash) = match (
        hash_of(SecretKind::Refresh, token),
        hash_of(SecretKind::Access, token),
    ) {
        (Some(hash), _) => (SecretKind::Refresh, hash),
        (None, Some(hash)) => (SecretKind::Access, hash),
        // Not a token of ours: nothing to revoke (§2.2).
        (None, None) => return no_store(StatusCode::OK, &json!({})),
    };
    let grant = match oauth.grants.grant_of_token(&hash).await {
        Ok(Some(grant)) => grant,
        Ok(None) => return no_store(StatusCode::OK, &json!({})),
        Err(e) => return store_failed(&server, &e).await,
    };
    if grant.client_id != client_id {
        return OAuthError::bad(
            "unauthorized_client",
            "the token was issued to another client",
        )
        .audited(&server, REVOKE_PATH)
        .await;
    }
    match kind {
        SecretKind::Refresh => {
            revoke_grant(&server, &oauth, &grant.id, "revocation-endpoint").await
        }
        _ => {
            let revoked = match oauth.grants.revoke_access(&hash).await {
                Ok(revoked) => revoked,
                Err(e) => return store_failed(&server, &e).await,
            };
            if revoked {
                let detail = json!({"clientId": grant.client_id, "grant": grant.id,
                    "reason": "access-token-revoked"});
                let entry = AuditEntry::new(server.now(), AuditEvent::OauthRevoked, detail)
                    .with_tid(grant.tid.clone());
                server.audit(entry).await;
            }
        }
    }
    no_store(StatusCode::OK, &json!({}))
}

/// 500 `server_error`: the store failed, nothing was revoked (the client may try again).
async fn store_failed<A: App>(
    server: &ServerState<A>,
    e: &crate::security::StoreError,
) -> Response {
    tracing::error!(target: "tea_agent_runtime::store", "oauth: {e}");
    OAuthError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the store failed; try again",
    )
    .audited(server, REVOKE_PATH)
    .await
}
