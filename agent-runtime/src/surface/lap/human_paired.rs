//! The owner's side of their paired sessions (`docs/pairing.md`): the session list and the console
//! show them next to hosted ones, and closing one revokes its token (the app gets `revoked`).
//! The state, the actions and the confirmations live in the app, so a paired session's view
//! is read from the app through an `observe` rpc while it is connected, its log is the ring of
//! `log-append` frames, and dispatching or deciding as the human is the app's own UI's job
//! (409 here).

use std::time::Duration;

use axum::http::{request::Parts, Method};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::human_access::{access, is_paired_session, NOT_YOURS};
use crate::app::App;
use crate::engine::paired::drives_paired_session;
use crate::engine::paired::records::claimable;
use crate::ops::error::{json_ok, ApiError};
use crate::ops::{Operation, ServerState};
use crate::security::{AuditEntry, AuditEvent, TokenRecord, TokenStatus};

/// How long the view waits for the app's `observe` answer before showing no state.
const VIEW_OBSERVE_MS: u64 = 3000;

/// The owner's routes that act on a paired session itself.
#[derive(Debug, Clone, Copy)]
pub(super) enum OwnerRoute {
    /// `GET /agent/human/sessions/{id}`.
    View,
    /// `POST /agent/human/sessions/{id}/close`.
    Close,
}

/// The answer of `route` when `id` names a paired session (after the human access rules);
/// `None` for a hosted session.
pub(super) async fn owner_route<A: App>(
    server: &ServerState<A>,
    parts: &Parts,
    id: &str,
    route: OwnerRoute,
) -> Option<Response> {
    match is_paired_session(server, id).await {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => return Some(e.into_response()),
    }
    let method = match route {
        OwnerRoute::View => Method::GET,
        OwnerRoute::Close => Method::POST,
    };
    let answer = match access(server, parts, method, None).await {
        Ok((uid, _)) => match route {
            OwnerRoute::View => view(server, &uid, id).await,
            OwnerRoute::Close => close(server, &uid, id).await,
        },
        Err(e) => Err(e),
    };
    Some(answer.map_or_else(IntoResponse::into_response, |v| json_ok(&v)))
}

/// The live paired tokens of `uid`: a closed one while it can be claimed (until its hard
/// expiry), so its owner sees it and can close it; a revoked one is gone.
async fn live_records<A: App>(
    server: &ServerState<A>,
    uid: &str,
) -> Result<Vec<TokenRecord>, ApiError> {
    let now = server.now();
    Ok(server
        .tokens()
        .list_by_identity(uid)
        .await?
        .into_iter()
        .filter(drives_paired_session)
        .filter(|r| match r.status {
            TokenStatus::Revoked => false,
            TokenStatus::PendingResume => claimable(r, now),
            _ => true,
        })
        .collect())
}

/// The token of paired session `id` if `uid` owns it (403 otherwise).
async fn owned<A: App>(
    server: &ServerState<A>,
    uid: &str,
    id: &str,
) -> Result<TokenRecord, ApiError> {
    live_records(server, uid)
        .await?
        .into_iter()
        .find(|r| r.session_id == id)
        .ok_or_else(|| ApiError::forbidden(NOT_YOURS))
}

/// The entries of `uid`'s paired sessions in `GET /agent/human/sessions`: `kind: "paired"`,
/// `connected` (an app socket is paired now), and no `pendingConfirms` (the app holds them).
pub(super) async fn list_entries<A: App>(
    server: &ServerState<A>,
    uid: &str,
) -> Result<Vec<Value>, ApiError> {
    let hub = &server.pairing().hub;
    Ok(live_records(server, uid)
        .await?
        .iter()
        .map(|r| {
            json!({
                "sessionId": r.session_id,
                "createdAt": r.created_at,
                "kind": "paired",
                "connected": hub.has_socket(&r.tid),
                "agents": [r.to_agent_session()],
            })
        })
        .collect())
}

/// `GET /agent/human/sessions/{id}` of a paired session: the app's state and actions (`null`
/// and `[]` while it is not connected or does not answer), no pending entries, the log ring.
async fn view<A: App>(server: &ServerState<A>, uid: &str, id: &str) -> Result<Value, ApiError> {
    let record = owned(server, uid, id).await?;
    let hub = &server.pairing().hub;
    let connected = hub.has_socket(&record.tid);
    let observed = if connected {
        hub.rpc(
            &record.tid,
            Operation::Observe.tool(),
            json!({}),
            Duration::from_millis(VIEW_OBSERVE_MS),
        )
        .await
        .ok()
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
    } else {
        None
    };
    let field = |k: &str| observed.as_ref().and_then(|o| o.get(k)).cloned();
    Ok(json!({
        "kind": "paired",
        "connected": connected,
        "state": field("state").unwrap_or(Value::Null),
        "actions": field("actions").filter(Value::is_array).unwrap_or_else(|| json!([])),
        "pending": [],
        "log": hub.recent(&record.tid, usize::MAX, None),
        "lastEventId": 0,
        "agents": [record.to_agent_session()],
    }))
}

/// `POST /agent/human/sessions/{id}/close` of a paired session: its token is revoked (the
/// app's socket gets `revoked` and closes; agents get 403).
async fn close<A: App>(server: &ServerState<A>, uid: &str, id: &str) -> Result<Value, ApiError> {
    let record = owned(server, uid, id).await?;
    super::management::revoke_record(server, &record, uid).await?;
    let entry = AuditEntry::new(
        server.now(),
        AuditEvent::OwnerClose,
        json!({"sessionId": id, "kind": "paired"}),
    )
    .with_tid(record.tid.clone())
    .with_uid(Some(uid.to_owned()));
    server.audit(entry).await;
    Ok(json!({ "closed": true, "sessionId": id }))
}
