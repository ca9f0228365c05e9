//! `POST /agent/oauth/token` (OAuth 2.1 §3.2): an authorization code (PKCE S256, single use,
//! short lived, for this resource) or a refresh token (rotated; a retired one revokes the
//! grant) exchanged for an access token and a new refresh token. Answers are JSON with
//! `Cache-Control: no-store`; refusals carry RFC 6749 §5.2's codes and are audited.

use axum::extract::Request;
use axum::http::{request::Parts, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::reply::{limit, no_store, read_form, resource_url, OAuthError};
use super::TOKEN_PATH;
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::oauth::{
    hash_of, pkce, resolve_client, ClientRefused, CodeTaken, GrantError, Issued, OAuth, Refreshed,
    ResolvedClient, SecretKind,
};
use crate::security::{
    lifecycle, mint_token, scopes, AuditEntry, AuditEvent, TokenRecord, TokenStatus,
    MAX_TOKENS_PER_SESSION,
};

/// The longest label a grant's token record takes (the client's name, cut).
const LABEL_CHARS: usize = 64;

#[derive(Debug, Deserialize)]
struct TokenRequest {
    grant_type: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
    client_id: Option<String>,
    refresh_token: Option<String>,
    resource: Option<String>,
    scope: Option<String>,
}

pub(super) async fn token<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return ApiError::method_not_allowed().into_response();
    }
    if let Err(limited) = limit(&server, &parts, TOKEN_PATH).await {
        return limited;
    }
    let Some(oauth) = server.oauth().cloned() else {
        return ApiError::method_not_allowed().into_response();
    };
    let request: TokenRequest = match read_form(&parts, body).await {
        Ok(r) => r,
        Err(e) => return e.audited(&server, TOKEN_PATH).await,
    };
    let answered = match request.grant_type.as_deref() {
        Some("authorization_code") => exchange_code(&server, &oauth, &parts, request).await,
        Some("refresh_token") => refresh(&server, &oauth, &parts, request).await,
        Some(other) => Err(OAuthError::bad(
            "unsupported_grant_type",
            format!(
                "grant_type {:?} is not supported (authorization_code, refresh_token)",
                other.chars().take(64).collect::<String>()
            ),
        )),
        None => Err(OAuthError::invalid_request("grant_type is missing")),
    };
    match answered {
        Ok(response) => response,
        Err(e) => e.audited(&server, TOKEN_PATH).await,
    }
}

/// The client of a token request: 401 `invalid_client` when it is missing or unknown, or its
/// metadata document does not stand for a client (503 `temporarily_unavailable` when the
/// document cannot be fetched now).
async fn client_of(
    oauth: &OAuth,
    client_id: Option<&str>,
    now: u64,
) -> Result<ResolvedClient, OAuthError> {
    let id = client_id.ok_or_else(|| OAuthError::invalid_client("client_id is missing"))?;
    // The request was counted against the endpoint's rate already.
    match resolve_client(oauth, id, now, None).await {
        Ok(client) => Ok(client),
        Err(ClientRefused::Unknown) => Err(OAuthError::invalid_client(
            "the client is unknown or its registration expired",
        )),
        Err(ClientRefused::Document(e)) if e.is_busy() => Err(OAuthError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            e.code(),
            e.description(),
        )),
        Err(ClientRefused::Document(e)) => Err(OAuthError::invalid_client(e.description())),
        Err(ClientRefused::Store(e)) => Err(server_error(&e.to_string())),
    }
}

/// The answer handing out `issued` (RFC 6749 §5.1).
fn issued_answer(issued: &Issued, now: u64) -> Response {
    let body = json!({
        "access_token": issued.access.expose(),
        "token_type": "Bearer",
        "expires_in": issued.access_expires_at.saturating_sub(now) / 1000,
        "refresh_token": issued.refresh.expose(),
        "scope": issued.grant.scope,
    });
    no_store(StatusCode::OK, &body)
}

async fn exchange_code<A: App>(
    server: &ServerState<A>,
    oauth: &OAuth,
    parts: &Parts,
    request: TokenRequest,
) -> Result<Response, OAuthError> {
    let now = server.now();
    let client = client_of(oauth, request.client_id.as_deref(), now).await?;
    let client_id = client.client_id.clone();
    let code = request
        .code
        .as_deref()
        .ok_or_else(|| OAuthError::invalid_request("code is missing"))?;
    let verifier = request
        .code_verifier
        .as_deref()
        .ok_or_else(|| OAuthError::invalid_request("code_verifier is missing: PKCE is required"))?;
    let hash = hash_of(SecretKind::Code, code)
        .ok_or_else(|| OAuthError::invalid_grant("the code is not one this server made"))?;
    let taken = oauth.grants.take_code(&hash, now).await;
    let code = match taken.map_err(|e| server_error(&e.to_string()))? {
        CodeTaken::Fresh(code) => code,
        CodeTaken::Expired => return Err(OAuthError::invalid_grant("the code expired")),
        CodeTaken::Unknown => return Err(OAuthError::invalid_grant("the code is unknown")),
        CodeTaken::Reused(grant) => {
            // RFC 6749 §4.1.2: a code used twice revokes what it granted.
            if let Some(grant) = grant {
                revoke_grant(server, oauth, &grant, "code-reused").await;
            }
            return Err(OAuthError::invalid_grant("the code was already used"));
        }
    };
    if code.client_id != client_id {
        return Err(OAuthError::invalid_grant(
            "the code was issued to another client",
        ));
    }
    if request.redirect_uri.as_deref() != Some(code.redirect_uri.as_str()) {
        return Err(OAuthError::invalid_grant(
            "redirect_uri does not match the authorization request's",
        ));
    }
    if !pkce::verifies(verifier, &code.challenge) {
        return Err(OAuthError::invalid_grant(
            "the code_verifier does not match the code_challenge",
        ));
    }
    let resource = resource_url(server, parts);
    if request
        .resource
        .as_deref()
        .is_some_and(|r| r != code.resource || r != resource)
    {
        return Err(OAuthError::bad(
            "invalid_target",
            format!("this server is the resource {resource}"),
        ));
    }
    let live = server
        .tokens()
        .list_by_session(&code.session_id)
        .await
        .map_err(|e| server_error(&e.to_string()))?
        .iter()
        .filter(|r| r.status != TokenStatus::Revoked && r.expires_at > now)
        .count();
    if live >= MAX_TOKENS_PER_SESSION {
        return Err(OAuthError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            format!("the session has {live} live agents, the most it may have: revoke one first"),
        ));
    }
    // The grant's agent token record: its bearer (an `agt_` token) is never handed out; the
    // access tokens stand for it.
    let (_, hidden_hash) = mint_token();
    let client_name = client.client_name;
    let mut record = TokenRecord::minted(
        hidden_hash,
        Some(code.uid.clone()),
        code.session_id.clone(),
        server.oauth_issuer(parts),
        now,
    );
    record.label = Some(client_name.chars().take(LABEL_CHARS).collect());
    record.scope = Some(code.scope.clone());
    record.expires_at = now.saturating_add(oauth.grants.limits().grant_ttl_ms);
    let tid = record.tid.clone();
    let (uid, session_id, scope) = (
        code.uid.clone(),
        code.session_id.clone(),
        code.scope.clone(),
    );
    if let Err(e) = lifecycle::store_minted(&**server.tokens(), record).await {
        server
            .audit(AuditEntry::store_failed(
                now,
                "oauth-grant",
                &tid,
                Some(&uid),
            ))
            .await;
        return Err(server_error(&e.to_string()));
    }
    let issued = match oauth
        .grants
        .create_grant(&hash, code, tid.clone(), now)
        .await
    {
        Ok(issued) => issued,
        Err(e) => {
            // The record never stood for anything handed out.
            let _ = lifecycle::revoke(&**server.tokens(), &tid).await;
            return Err(match e {
                GrantError::Full(full) => OAuthError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    format!("the server holds {} grants, the most it keeps", full.0),
                ),
                GrantError::CodeReused => OAuthError::invalid_grant(
                    "the code was presented again before its grant was made: nothing is granted",
                ),
                GrantError::Store(e) => server_error(&e.to_string()),
            });
        }
    };
    if let Err(e) = oauth.clients.used(&client_id, now).await {
        // The grant stands; the registration may expire early (then ask for consent again).
        tracing::error!(target: "tea_agent_runtime::store", "oauth: client use not stored: {e}");
    }
    let detail = json!({"clientId": client_id, "grant": issued.grant.id, "sessionId": session_id,
        "scope": scope});
    let entry = AuditEntry::new(now, AuditEvent::OauthGranted, detail)
        .with_tid(tid)
        .with_uid(Some(uid));
    server.audit(entry).await;
    Ok(issued_answer(&issued, now))
}

async fn refresh<A: App>(
    server: &ServerState<A>,
    oauth: &OAuth,
    parts: &Parts,
    request: TokenRequest,
) -> Result<Response, OAuthError> {
    let now = server.now();
    let client_id = client_of(oauth, request.client_id.as_deref(), now)
        .await?
        .client_id;
    let presented = request
        .refresh_token
        .as_deref()
        .ok_or_else(|| OAuthError::invalid_request("refresh_token is missing"))?;
    let hash = hash_of(SecretKind::Refresh, presented).ok_or_else(|| {
        OAuthError::invalid_grant("the refresh token is not one this server made")
    })?;
    let resource = resource_url(server, parts);
    if request.resource.as_deref().is_some_and(|r| r != resource) {
        return Err(OAuthError::bad(
            "invalid_target",
            format!("this server is the resource {resource}"),
        ));
    }
    let refreshed = oauth.grants.refresh(&hash, &client_id, now).await;
    let issued = match refreshed.map_err(|e| server_error(&e.to_string()))? {
        Refreshed::Rotated(issued) => issued,
        Refreshed::Refused(why) => return Err(OAuthError::invalid_grant(why)),
        Refreshed::Reused(grant) => {
            // A retired refresh token came back: it was copied. The whole grant ends.
            revoke_record(
                server,
                &grant.tid,
                &grant.client_id,
                &grant.id,
                "refresh-reused",
            )
            .await;
            return Err(OAuthError::invalid_grant(
                "the refresh token was already used: the grant is revoked",
            ));
        }
    };
    if let Some(asked) = request.scope.as_deref() {
        let asked = scopes::parse_list(asked)
            .map_err(|word| OAuthError::bad("invalid_scope", format!("unknown scope {word:?}")))?
            .unwrap_or_default();
        if asked
            .iter()
            .any(|s| !scopes::allows(Some(&issued.grant.scope), *s))
        {
            let access = hash_of(SecretKind::Access, issued.access.expose()).unwrap_or_default();
            oauth
                .grants
                .revoke_access(&access)
                .await
                .map_err(|e| server_error(&e.to_string()))?;
            return Err(OAuthError::bad(
                "invalid_scope",
                "the scope asked is more than the grant holds",
            ));
        }
    }
    // The grant's record decides too: revoked in the console or past its end, the grant ends.
    let record = server
        .tokens()
        .find_by_tid(&issued.grant.tid)
        .await
        .map_err(|e| server_error(&e.to_string()))?;
    match record {
        Some(r) if r.status != TokenStatus::Revoked && r.expires_at > now => {}
        _ => {
            oauth
                .grants
                .revoke(&issued.grant.id)
                .await
                .map_err(|e| server_error(&e.to_string()))?;
            return Err(OAuthError::invalid_grant("the grant was revoked or ended"));
        }
    }
    // A refresh is a use: the record's sliding expiry restarts.
    if let Err(e) = lifecycle::touch(&**server.tokens(), &issued.grant.tid, now).await {
        return Err(server_error(&e.to_string()));
    }
    let detail = json!({"clientId": client_id, "grant": issued.grant.id});
    let entry = AuditEntry::new(now, AuditEvent::OauthRefreshed, detail)
        .with_tid(issued.grant.tid.clone())
        .with_uid(Some(issued.grant.uid.clone()));
    server.audit(entry).await;
    Ok(issued_answer(&issued, now))
}

/// 500 `server_error`, the store's text logged only.
fn server_error(detail: &str) -> OAuthError {
    tracing::error!(target: "tea_agent_runtime::store", "oauth: {detail}");
    OAuthError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the token store failed; try again",
    )
}

/// Revokes grant `id` and its agent token record, audited.
pub(super) async fn revoke_grant<A: App>(
    server: &ServerState<A>,
    oauth: &OAuth,
    id: &str,
    reason: &str,
) {
    match oauth.grants.revoke(id).await {
        Ok(Some(grant)) => {
            revoke_record(server, &grant.tid, &grant.client_id, &grant.id, reason).await
        }
        Ok(None) => {}
        Err(e) => {
            tracing::error!(target: "tea_agent_runtime::store", "oauth: revoking {id} failed: {e}")
        }
    }
}

/// Revokes the agent token record `tid` of a grant (its calls in flight end, as a revoke
/// in the console would), audited.
pub(super) async fn revoke_record<A: App>(
    server: &ServerState<A>,
    tid: &str,
    client_id: &str,
    grant: &str,
    reason: &str,
) {
    if let Err(e) = lifecycle::revoke(&**server.tokens(), tid).await {
        tracing::error!(target: "tea_agent_runtime::store", "oauth: revoking {tid} failed: {e}");
    }
    let _ = server.revocations().send(tid.to_owned());
    let detail = json!({"clientId": client_id, "grant": grant, "reason": reason});
    server
        .audit(
            AuditEntry::new(server.now(), AuditEvent::OauthRevoked, detail)
                .with_tid(tid.to_owned()),
        )
        .await;
}
