//! Management routes (`docs/lap.md` §4): mint, revoke, and the caller's agent sessions.

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};

use super::body::{check_content_length, read_bytes, read_json};
use crate::app::App;
use crate::engine::host::CreateSessionError;
use crate::ops::error::{json_ok, ApiError};
use crate::ops::ServerState;
use crate::security::scopes;
use crate::security::{
    lifecycle, mint_token, request_client_address, AgentSession, AuditEntry, Bucket,
    LifecycleError, TokenRecord, TokenStatus, SWEEP_RETENTION_MS,
};
use tea_agent_schema::protocol::ErrorCode;
use tea_agent_schema::protocol::Fields;

/// `/agent/mint`, `/agent/revoke`, `/agent/sessions`.
pub(crate) fn management_routes<A: App>(server: &ServerState<A>) -> Router {
    let (s1, s2, s3) = (server.clone(), server.clone(), server.clone());
    Router::new()
        .route(
            "/agent/mint",
            any(move |req: Request| mint(s1.clone(), req)),
        )
        .route(
            "/agent/revoke",
            any(move |req: Request| revoke(s2.clone(), req)),
        )
        .route(
            "/agent/sessions",
            any(move |req: Request| sessions(s3.clone(), req)),
        )
}

async fn mint<A: App>(server: ServerState<A>, req: Request) -> Response {
    match mint_inner(&server, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn mint_inner<A: App>(server: &ServerState<A>, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    if server.is_stopping() {
        // No new token on a server that is going away (`docs/operations.md` §Shutdown).
        return Err(ApiError::shutting_down());
    }
    check_content_length(&parts.headers)?;
    server.origin().check(&parts)?;
    let bytes = read_bytes(body).await?;
    let bad_body = || {
        ApiError::invalid(
            r#"body must be empty, {"session": "<sessionId>"} or {"paired": true|false}"#,
        )
    };
    let mut paired = paired_by_default(server);
    let mut label = None;
    let mut scope = None;
    let requested_session = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(o)) => {
                match o.get("paired") {
                    None | Some(Value::Null) => {}
                    Some(Value::Bool(b)) => paired = *b,
                    Some(_) => return Err(bad_body()),
                }
                label = mint_label(o.get("label"))?;
                scope = mint_scope(o.get("scope"))?;
                match o.get("session") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => {
                        paired = false;
                        Some(s.clone())
                    }
                    Some(_) => return Err(bad_body()),
                }
            }
            _ => return Err(bad_body()),
        }
    };
    #[cfg(feature = "pairing")]
    if !paired && !server.options().pairing.hosted_mints {
        return Err(ApiError::invalid(RELAY_ONLY));
    }
    let now = server.now();
    let identity = server.identity().resolve(&parts).await;
    if identity.is_none() && !server.identity().allows_anonymous() {
        return Err(
            ApiError::auth_required().with_detail(server.identity().missing_identity_detail())
        );
    }
    let limit_key = identity
        .clone()
        .unwrap_or_else(|| request_client_address(&parts, server.options().trust_proxy));
    if let Err(refused) = server.take_rate(&limit_key, Bucket::Mint).await {
        let crate::security::Refusal::Limited(limited) = refused else {
            return Err(refused.into());
        };
        crate::telemetry::rate_limited(Bucket::Mint.as_str());
        server
            .audit(AuditEntry::rate_limited(
                now,
                identity.as_deref(),
                "/agent/mint",
            ))
            .await;
        return Err(limited.into());
    }
    super::anonymous_mints::check(server, &parts, identity.as_deref(), now).await?;
    let origin = server.origin().request_origin(&parts);
    let (uid, set_cookie) = match identity {
        Some(uid) => (uid, None),
        None => {
            let issued = server
                .identity()
                .issue_anonymous(origin.is_https())
                .ok_or_else(ApiError::auth_required)?;
            (issued.uid, Some(issued.set_cookie))
        }
    };
    if paired {
        return mint_paired(server, uid, (label, scope), &origin, set_cookie, now).await;
    }
    let for_existing_session = requested_session.is_some();
    let session = match requested_session {
        Some(id) => server
            .host()
            .try_load_session(&id)
            .await
            .map_err(|refused| match refused.owner {
                Some(owner) if owner == uid => ApiError::paused().with_detail(refused.reason),
                _ => ApiError::forbidden("unknown session or not yours"),
            })?
            .filter(|s| s.owner() == Some(uid.as_str()))
            .ok_or_else(|| ApiError::forbidden("unknown session or not yours"))?,
        None => server
            .host()
            .create_session_within_caps(Some(uid.clone()), server.live_agents())
            .await
            .map_err(|e| match e {
                CreateSessionError::Capacity(detail) => {
                    ApiError::new(ErrorCode::SessionCapacity).with_detail(detail)
                }
                other => ApiError::internal(other.to_string()),
            })?,
    };
    if for_existing_session {
        session_token_cap(server, session.id(), now).await?;
    }
    // A new session is in the store before its token is (another replica can load it).
    session.stored().await;
    sweep(server, now).await;
    if let Some(store) = server.durable_idempotency() {
        let before = now.saturating_sub(crate::clock::millis(crate::IDEMPOTENCY_WINDOW));
        if let Err(e) = store.sweep_idempotent(before).await {
            tracing::error!(target: "tea_agent_runtime::store", "idempotency sweep failed: {e}");
        }
    }
    let (token, hash) = mint_token();
    let mut record = TokenRecord::minted(
        hash,
        Some(uid.clone()),
        session.id().to_string(),
        origin.url(""),
        now,
    );
    record.label = label;
    record.scope = scope;
    issue(server, token.expose(), record, &origin, set_cookie, now).await
}

use crate::security::MAX_TOKENS_PER_SESSION;

/// The per-session token cap of a mint for an existing session.
async fn session_token_cap<A: App>(
    server: &ServerState<A>,
    session_id: &str,
    now: u64,
) -> Result<(), ApiError> {
    let live = server
        .tokens()
        .list_by_session(session_id)
        .await?
        .iter()
        .filter(|r| r.status != TokenStatus::Revoked && r.expires_at > now)
        .count();
    if live >= MAX_TOKENS_PER_SESSION {
        return Err(
            ApiError::new(ErrorCode::SessionCapacity).with_detail(format!(
                "this session has {live} live tokens, the most it may have: revoke one first"
            )),
        );
    }
    Ok(())
}

/// A mint's housekeeping: long-expired token records go. A failure is logged and does not
/// refuse the mint (nothing is granted by a record that was not swept).
async fn sweep<A: App>(server: &ServerState<A>, now: u64) {
    if let Err(e) = lifecycle::sweep_expired(&**server.tokens(), now, SWEEP_RETENTION_MS).await {
        tracing::error!(target: "tea_agent_runtime::store", "token sweep failed: {e}");
    }
}

/// The mint's optional `scope` (`docs/lap.md` §4.1, `docs/authorization.md` §Scopes): the
/// scopes the token is limited to, space-separated (`app:read`, `app:act`); absent or `null`
/// is every scope, as before scopes existed.
fn mint_scope(value: Option<&Value>) -> Result<Option<String>, ApiError> {
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text,
        Some(_) => return Err(ApiError::invalid(SCOPE_SHAPE)),
    };
    match scopes::parse_list(text) {
        Ok(Some(list)) => Ok(Some(scopes::to_text(&list))),
        Ok(None) => Err(ApiError::invalid(SCOPE_SHAPE)),
        Err(word) => Err(ApiError::invalid(format!(
            "{SCOPE_SHAPE}: {word:?} is not a scope"
        ))),
    }
}

/// What a mint's `scope` must be.
const SCOPE_SHAPE: &str =
    "scope must be a space-separated list of app:read, app:act (app:act implies app:read)";

/// The longest mint `label`, in characters.
const MAX_LABEL_CHARS: usize = 64;

/// The mint's optional `label` (`docs/lap.md` §4.1): a string of at most 64 characters with no
/// control characters; shown as the token's label in the console, `/agent/sessions` and the
/// owner's session list (activation keeps it).
fn mint_label(value: Option<&Value>) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s))
            if !s.trim().is_empty()
                && s.chars().count() <= MAX_LABEL_CHARS
                && !s.chars().any(char::is_control) =>
        {
            Ok(Some(s.trim().to_owned()))
        }
        Some(_) => Err(ApiError::invalid(format!(
            "label must be a non-empty string of at most {MAX_LABEL_CHARS} characters without \
             control characters"
        ))),
    }
}

/// Stores a minted `record`, audits the mint and answers it with the bearer `token` (and the
/// identity cookie when this request was given one). A record the store did not keep is an
/// error (audited `store-failed`): the token is never handed out.
async fn issue<A: App>(
    server: &ServerState<A>,
    token: &str,
    record: TokenRecord,
    origin: &crate::security::RequestOrigin,
    set_cookie: Option<String>,
    now: u64,
) -> Result<Response, ApiError> {
    // The hard expiry is the server's option (`ServerOptions::hard_expiry`), from the mint.
    let mut record = record;
    record.expires_at = now.saturating_add(server.options().hard_expiry_ms());
    let mut body = json!({
        "token": token,
        "tid": record.tid,
        "sessionId": record.session_id,
        "wsUrl": origin.websocket_url("/agent/ws"),
        "lapUrl": origin.url(&server.options().lap_base_path),
        "expiresAt": record.expires_at,
        "lapVersion": 2,
    });
    if let Some(scope) = &record.scope {
        // Only a limited token says so: an unlimited one answers as LLui's does.
        body["scope"] = json!(scope);
    }
    let entry = AuditEntry::mint(
        now,
        &record.tid,
        record.uid.as_deref(),
        &record.origin,
        &record.session_id,
    );
    let (tid, uid) = (record.tid.clone(), record.uid.clone());
    if let Err(e) = lifecycle::store_minted(&**server.tokens(), record).await {
        let failed = AuditEntry::store_failed(now, "mint", &tid, uid.as_deref());
        server.audit(failed).await;
        return Err(e.into());
    }
    server.audit(entry).await;
    let mut response = json_ok(&body);
    if let Some(c) = set_cookie {
        if let Ok(v) = HeaderValue::try_from(c) {
            response.headers_mut().insert(header::SET_COOKIE, v);
        }
    }
    Ok(response)
}

/// The refusal of a hosted mint on a server that relays paired sessions only.
#[cfg(feature = "pairing")]
const RELAY_ONLY: &str =
    "this server relays paired sessions only: mint without a body or with {\"paired\": true}";

/// Whether a bare mint makes a paired session.
fn paired_by_default<A: App>(_server: &ServerState<A>) -> bool {
    #[cfg(feature = "pairing")]
    return _server.options().pairing.mint_paired;
    #[cfg(not(feature = "pairing"))]
    false
}

/// Mints a token for a paired session (`docs/pairing.md`): no session is started here; the record
/// waits in `awaiting-ws` for the app to open `/agent/ws`.
async fn mint_paired<A: App>(
    server: &ServerState<A>,
    uid: String,
    (label, scope): (Option<String>, Option<String>),
    origin: &crate::security::RequestOrigin,
    set_cookie: Option<String>,
    now: u64,
) -> Result<Response, ApiError> {
    #[cfg(not(feature = "pairing"))]
    {
        let _ = (server, uid, label, scope, origin, set_cookie, now);
        Err(ApiError::invalid(
            "this server does not pair (feature `pairing` is off)",
        ))
    }
    #[cfg(feature = "pairing")]
    {
        sweep(server, now).await;
        paired_caps(server, &uid, now).await?;
        let (token, hash) = mint_token();
        let session_id = crate::engine::paired::records::new_paired_session_id();
        let mut record = TokenRecord::minted(
            hash,
            Some(uid.clone()),
            session_id.clone(),
            origin.url(""),
            now,
        );
        record.kind = crate::security::SessionKind::Paired;
        record.status = TokenStatus::AwaitingWs;
        record.label = label;
        record.scope = scope;
        issue(server, token.expose(), record, origin, set_cookie, now).await
    }
}

/// The caps on paired mints (`docs/pairing.md` §Bounds): live paired sessions per identity,
/// and anonymous paired mints per minute; 429 with `Retry-After` past either.
#[cfg(feature = "pairing")]
async fn paired_caps<A: App>(server: &ServerState<A>, uid: &str, now: u64) -> Result<(), ApiError> {
    use crate::engine::paired::records::{drives_paired_session, within_grace};
    let options = &server.pairing().options;
    let live = server
        .tokens()
        .list_by_identity(uid)
        .await?
        .iter()
        .filter(|r| drives_paired_session(r) && r.expires_at > now)
        .filter(|r| match r.status {
            TokenStatus::Revoked => false,
            TokenStatus::PendingResume => within_grace(r, now),
            _ => true,
        })
        .count();
    if live >= options.max_sessions_per_identity {
        return Err(ApiError::new(ErrorCode::RateLimited)
            .with_detail(format!(
                "this identity holds {live} live paired sessions; the limit is {}",
                options.max_sessions_per_identity
            ))
            .with_retry_after_ms(Some(crate::clock::millis(options.grace).max(1000))));
    }
    if crate::security::is_anonymous(uid) {
        if let Err(retry) = server.pairing().take_anonymous_mint(now) {
            return Err(ApiError::new(ErrorCode::RateLimited)
                .with_detail(format!(
                    "anonymous paired mints are limited to {} per minute",
                    options.anonymous_mints_per_minute
                ))
                .with_retry_after_ms(Some(retry)));
        }
    }
    Ok(())
}

async fn revoke<A: App>(server: ServerState<A>, req: Request) -> Response {
    match revoke_inner(&server, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn revoke_inner<A: App>(server: &ServerState<A>, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    check_content_length(&parts.headers)?;
    server.origin().check(&parts)?;
    let mut fields = Fields::from_body(read_json(body).await?);
    let tid = fields
        .string_or_none("tid")
        .ok_or_else(|| ApiError::invalid("tid must be a string"))?;
    let uid = server
        .identity()
        .resolve(&parts)
        .await
        .ok_or_else(ApiError::auth_required)?;
    let record = server
        .tokens()
        .find_by_tid(&tid)
        .await?
        .filter(|r| r.uid.as_deref() == Some(uid.as_str()))
        .ok_or_else(ApiError::revoked)?;
    revoke_record(server, &record, &uid).await?;
    Ok(json_ok(&json!({"status": "revoked"})))
}

/// Revokes `record` for its owner `uid`: stored as revoked (the one unconditional status
/// write: it wins over any step of the life cycle racing it), its idempotency records
/// dropped, its calls in flight, MCP sessions and a paired app's socket ended, and audited.
/// What this process holds for the token ends even when the store write failed (closing
/// never fails open); the failure is then audited `store-failed` and answered as an error,
/// so the owner knows the token may still work elsewhere.
pub(super) async fn revoke_record<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
    uid: &str,
) -> Result<(), ApiError> {
    let stored = lifecycle::revoke(&**server.tokens(), &record.tid).await;
    server.idempotency().forget_token(&record.tid);
    // A paired app's socket is closed and what the hub kept for it freed at once.
    #[cfg(feature = "pairing")]
    server.pairing().hub.revoke(&record.tid);
    let _ = server.revocations().send(record.tid.clone());
    if let Err(e) = stored {
        let failed = AuditEntry::store_failed(server.now(), "revoke", &record.tid, Some(uid));
        server.audit(failed).await;
        return Err(LifecycleError::Store(e).into());
    }
    server
        .audit(AuditEntry::revoke(server.now(), &record.tid, Some(uid)))
        .await;
    Ok(())
}

async fn sessions<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if parts.method != Method::GET {
        return ApiError::method_not_allowed().into_response();
    }
    let sessions: Vec<AgentSession> = match server.identity().resolve(&parts).await {
        None => Vec::new(),
        Some(uid) => match server.tokens().list_by_identity(&uid).await {
            Ok(records) => records,
            Err(e) => return ApiError::from(e).into_response(),
        }
        .iter()
        .filter(|r| matches!(r.status, TokenStatus::Active | TokenStatus::PendingResume))
        .map(TokenRecord::to_agent_session)
        .collect(),
    };
    json_ok(&json!({ "sessions": sessions }))
}
