//! `/agent/resume/list` and `/agent/resume/claim` (`docs/pairing.md` §Token / session lifecycle):
//! the owner of a paired session whose socket closed finds it, within the grace window or past
//! it until the token's hard expiry (a laptop that slept), and claims it, which rotates the
//! bearer (the old token then answers 401).

use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};

use super::body::{check_content_length, read_json};
use crate::app::App;
use crate::engine::paired::records::{claimable, within_grace};
use crate::ops::error::{json_ok, ApiError};
use crate::ops::ServerState;
use crate::security::{lifecycle, mint_token, AuditEntry, AuditEvent, LifecycleError, TokenRecord};

/// The most tids one `/agent/resume/list` looks up.
const MAX_LISTED: usize = 64;

/// `/agent/resume/list`, `/agent/resume/claim`.
pub(crate) fn resume_routes<A: App>(server: &ServerState<A>) -> Router {
    let (s1, s2) = (server.clone(), server.clone());
    Router::new()
        .route(
            "/agent/resume/list",
            any(move |req: Request| answer(list(s1.clone(), req))),
        )
        .route(
            "/agent/resume/claim",
            any(move |req: Request| answer(claim(s2.clone(), req))),
        )
}

async fn answer(work: impl std::future::Future<Output = Result<Value, ApiError>>) -> Response {
    match work.await {
        Ok(body) => json_ok(&body),
        Err(e) => e.into_response(),
    }
}

/// Method, body cap, `Origin`, identity; then the JSON body.
async fn admit<A: App>(
    server: &ServerState<A>,
    req: Request,
) -> Result<(String, Value, axum::http::request::Parts), ApiError> {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    check_content_length(&parts.headers)?;
    server.origin().check(&parts)?;
    let uid = server
        .identity()
        .resolve(&parts)
        .await
        .ok_or_else(ApiError::auth_required)?;
    let body = read_json(body).await?;
    Ok((uid, body, parts))
}

/// A paired record of `uid` its owner can claim: closed, inside its grace window or past it,
/// before its hard expiry (a store failure is an error).
async fn resumable<A: App>(
    server: &ServerState<A>,
    uid: &str,
    tid: &str,
) -> Result<Option<TokenRecord>, ApiError> {
    let found = server.tokens().find_by_tid(tid).await?;
    Ok(found.filter(|r| r.uid.as_deref() == Some(uid) && claimable(r, server.now())))
}

async fn list<A: App>(server: ServerState<A>, req: Request) -> Result<Value, ApiError> {
    let (uid, body, _) = admit(&server, req).await?;
    let tids = body
        .get("tids")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::invalid("tids must be an array of strings"))?;
    let mut sessions = Vec::new();
    for tid in tids.iter().filter_map(Value::as_str).take(MAX_LISTED) {
        if let Some(r) = resumable(&server, &uid, tid).await? {
            let session = r.to_agent_session();
            // LLui's five keys, then ours: whether the grace window is over (only a claim
            // resumes it then, not the same bearer) and the hard expiry that ends the offer.
            sessions.push(json!({
                "tid": session.tid,
                "label": session.label,
                "status": session.status,
                "createdAt": session.created_at,
                "lastSeenAt": session.last_seen_at,
                "pastGrace": !within_grace(&r, server.now()),
                "expiresAt": r.expires_at,
            }));
        }
    }
    Ok(json!({ "sessions": sessions }))
}

async fn claim<A: App>(server: ServerState<A>, req: Request) -> Result<Value, ApiError> {
    let (uid, body, parts) = admit(&server, req).await?;
    let tid = body
        .get("tid")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("tid must be a string"))?;
    let origin = server.origin().request_origin(&parts);
    let record = resumable(&server, &uid, tid)
        .await?
        .filter(|r| r.origin == origin.url(""))
        .ok_or_else(ApiError::revoked)?;
    let (token, hash) = mint_token();
    let now = server.now();
    // Audited: a claim past the grace window resumed a session its app had left for longer.
    let past_grace = !within_grace(&record, now);
    // The rotation is one conditional write: a revoke (or the app's return) that landed
    // first wins, and a failed write hands out no token (the old one stays the bearer).
    match lifecycle::claim(&**server.tokens(), &record.tid, hash, now).await {
        Ok(()) => {}
        Err(LifecycleError::Store(e)) => {
            let failed = AuditEntry::store_failed(now, "claim", &record.tid, Some(&uid));
            server.audit(failed).await;
            return Err(LifecycleError::Store(e).into());
        }
        Err(_) => return Err(ApiError::revoked()),
    }
    server.idempotency().forget_token(&record.tid);
    server
        .audit(
            AuditEntry::new(
                now,
                AuditEvent::Claim,
                json!({"path": "/agent/resume/claim", "pastGrace": past_grace}),
            )
            .with_tid(record.tid.clone())
            .with_uid(Some(uid)),
        )
        .await;
    Ok(json!({
        "token": token.expose(),
        "tid": record.tid,
        "wsUrl": origin.websocket_url(crate::engine::paired::SOCKET_PATH),
        "lapUrl": origin.url(&server.options().lap_base_path),
        "expiresAt": record.expires_at,
    }))
}
