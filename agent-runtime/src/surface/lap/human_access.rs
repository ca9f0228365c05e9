//! Who may use a human route (`docs/lap.md` §6.1): the method, the body cap, no agent bearer, the
//! origin and media type of a POST, an identity, and for a session route a session the caller
//! owns. A paired session's dispatch and decisions belong to its app (409).

use axum::http::{header, request::Parts, Method};

use super::body::check_content_length;
use crate::app::App;
use crate::engine::session::Session;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use tea_agent_schema::protocol::ErrorCode;

/// The refusal of a session that is unknown or another identity's.
pub(super) const NOT_YOURS: &str = "unknown session or not yours";

/// Whether `id` names a paired session: a token record of the session is of kind paired (a
/// paired session lives only through its records; a hosted one's are of kind hosted).
#[cfg(feature = "pairing")]
pub(super) async fn is_paired_session<A: App>(
    server: &ServerState<A>,
    id: &str,
) -> Result<bool, ApiError> {
    Ok(server
        .tokens()
        .list_by_session(id)
        .await?
        .iter()
        .any(crate::engine::paired::drives_paired_session))
}

/// 409 for the human routes that act inside the app.
#[cfg(feature = "pairing")]
pub(super) fn acts_in_the_app() -> ApiError {
    ApiError::new(ErrorCode::Conflict).with_detail(
        "this session is paired: the app dispatches and decides confirmations in its own UI",
    )
}

/// Access rules 0–5 of `docs/lap.md` §6.1. Returns the caller's identity and, for a session route,
/// the session.
pub(super) async fn access<A: App>(
    server: &ServerState<A>,
    parts: &Parts,
    method: Method,
    session_id: Option<&str>,
) -> Result<(String, Option<Session<A>>), ApiError> {
    if parts.method != method {
        return Err(ApiError::method_not_allowed());
    }
    check_content_length(&parts.headers)?;
    if parts.headers.contains_key(header::AUTHORIZATION) {
        return Err(ApiError::forbidden("agent tokens cannot use human routes"));
    }
    if method == Method::POST {
        server.origin().check(parts)?;
        let media = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            });
        if media.as_deref() != Some("application/json") {
            return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
        }
    }
    let uid = server
        .identity()
        .resolve(parts)
        .await
        .ok_or_else(ApiError::auth_required)?;
    #[cfg(feature = "pairing")]
    if let Some(id) = session_id {
        if is_paired_session(server, id).await? {
            return Err(acts_in_the_app());
        }
    }
    let session = match session_id {
        None => None,
        Some(id) => Some(
            server
                .host()
                .try_load_session(id)
                .await
                .map_err(|refused| match refused.owner {
                    Some(owner) if owner == uid => ApiError::paused().with_detail(refused.reason),
                    _ => ApiError::forbidden(NOT_YOURS),
                })?
                .filter(|s| s.owner() == Some(uid.as_str()))
                .ok_or_else(|| ApiError::forbidden(NOT_YOURS))?,
        ),
    };
    Ok((uid, session))
}

/// [`access`] for a session route: the caller's own session `id`.
pub(super) async fn session_access<A: App>(
    server: &ServerState<A>,
    parts: &Parts,
    method: Method,
    id: &str,
) -> Result<Session<A>, ApiError> {
    access(server, parts, method, Some(id))
        .await?
        .1
        .ok_or_else(|| ApiError::forbidden(NOT_YOURS))
}
