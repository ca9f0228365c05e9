//! `POST /agent/human/sessions/{id}/close`: the owner ends one of their sessions. The same
//! access rules as the other human POSTs (`docs/lap.md` §6.1: identity, same origin,
//! `content-type: application/json`, no agent bearer); the body is ignored. Its agent tokens
//! are revoked first (their calls in flight, MCP sessions and sockets end; they answer 403
//! `revoked` from then on, on every replica, so no agent call can load the session again),
//! then the session stops, its event streams end, its waits answer "session closed", and its
//! slot is free at once. Closing a paired session revokes its token. A token store that fails
//! is an error answer, and the session is then left open.
//! Answer: 200 `{"closed":true,"sessionId":id}`, once the session is deleted from the store
//! (other replicas drop it too); 500 `internal` when that delete failed.

use axum::extract::{Path, Request};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::json;

use super::human_access::{access, NOT_YOURS};
use crate::app::App;
use crate::ops::error::{json_ok, ApiError};
use crate::ops::ServerState;
use crate::security::{AuditEntry, AuditEvent, TokenStatus};

/// The close route.
pub(crate) fn close_routes<A: App>(server: &ServerState<A>) -> Router {
    let s = server.clone();
    let close = move |Path(id): Path<String>, req: Request| human_close(s.clone(), id, req);
    Router::new().route("/agent/human/sessions/{id}/close", any(close))
}

async fn human_close<A: App>(server: ServerState<A>, id: String, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    #[cfg(feature = "pairing")]
    {
        use super::human_paired::{owner_route, OwnerRoute};
        if let Some(answer) = owner_route(&server, &parts, &id, OwnerRoute::Close).await {
            return answer;
        }
    }
    let (uid, session) = match access(&server, &parts, Method::POST, Some(&id)).await {
        Ok((uid, Some(s))) => (uid, s),
        Ok(_) => return ApiError::forbidden(NOT_YOURS).into_response(),
        Err(e) => return e.into_response(),
    };
    // The agents go first: a token left live could reload the session from the store.
    let records = match server.tokens().list_by_session(session.id()).await {
        Ok(records) => records,
        Err(e) => return ApiError::from(e).into_response(),
    };
    for record in records.iter().filter(|r| r.status != TokenStatus::Revoked) {
        if let Err(e) = super::management::revoke_record(&server, record, &uid).await {
            return e.into_response();
        }
    }
    session.close();
    if let Err(e) = server.host().close_session(session.id()).await {
        return ApiError::from(e).into_response();
    }
    let entry = AuditEntry::new(
        server.now(),
        AuditEvent::OwnerClose,
        json!({"sessionId": session.id(), "kind": "hosted"}),
    )
    .with_uid(Some(uid));
    server.audit(entry).await;
    json_ok(&json!({ "closed": true, "sessionId": session.id() }))
}
