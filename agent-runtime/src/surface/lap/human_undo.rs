//! `POST /agent/human/sessions/{id}/undo` (`docs/lap.md` §6.4): the owner undoes an agent's
//! commit, `{"seq": N}`, or every commit from the newest down to it, `{"seq": N, "andLater":
//! true}` (`docs/semantics.md` §12). The access rules of the other human POSTs (§6.1): an agent
//! bearer is refused, so only the human undoes. The answer is `{"seq", "undid"}`: the undo's own
//! commit and the commits it reverted. Each refusal has its code, status and `reason`:
//! 404 `not-found` `unknown-commit`; 409 `conflict` with `not-agents`, `already-undone`,
//! `not-undoable`, `later-commits` (with `commits`, the later commits in the way),
//! `invalid-result`, `no-undo-records` or `paired`; 500 `internal` when the store failed.

use axum::extract::{Path, Request};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use super::body::read_json;
use super::human_access::{access, session_access, NOT_YOURS};
use crate::app::App;
use crate::engine::session::UndoError;
use crate::ops::error::{json_ok, ApiError};
use crate::ops::ServerState;
use tea_agent_schema::protocol::ErrorCode;

/// The undo route.
pub(crate) fn undo_routes<A: App>(server: &ServerState<A>) -> Router {
    let s = server.clone();
    let undo = move |Path(id): Path<String>, req: Request| human_undo(s.clone(), id, req);
    Router::new().route("/agent/human/sessions/{id}/undo", any(undo))
}

/// The body: the commit to undo, and whether every later commit goes too.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UndoRequest {
    seq: u64,
    #[serde(default)]
    and_later: bool,
}

async fn human_undo<A: App>(server: ServerState<A>, id: String, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // The rules without the session first, so an agent bearer is refused as on every human
    // route before anything says what the session is.
    if let Err(e) = access(&server, &parts, Method::POST, None).await {
        return e.into_response();
    }
    #[cfg(feature = "pairing")]
    match super::human_access::is_paired_session(&server, &id).await {
        Ok(true) => return paired().into_response(),
        Ok(false) => {}
        Err(e) => return e.into_response(),
    }
    let session = match session_access(&server, &parts, Method::POST, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let result = async {
        let request: UndoRequest = serde_json::from_value(read_json(body).await?).map_err(|e| {
            ApiError::invalid(format!(
                r#"the body must be {{"seq": N}} or {{"seq": N, "andLater": true}}: {e}"#
            ))
        })?;
        Ok::<_, ApiError>(session.undo(request.seq, request.and_later).await)
    }
    .await;
    match result {
        Ok(Ok(undone)) => json_ok(&json!({ "seq": undone.seq, "undid": undone.undid })),
        Ok(Err(refused)) => {
            let error = refusal(&refused);
            // The error body of every route, with the later commits in the way of a conflict.
            let mut body = error.response();
            if let UndoError::Conflict { later, .. } = refused {
                body.error.commits = later;
            }
            (error.status(), axum::Json(body)).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// The answer to an undo refused by the session.
fn refusal(e: &UndoError) -> ApiError {
    let detail = e.to_string();
    let conflict = |reason| {
        ApiError::new(ErrorCode::Conflict)
            .with_reason(reason)
            .with_detail(detail.clone())
    };
    match e {
        UndoError::Unknown(_) => ApiError::new(ErrorCode::NotFound)
            .with_reason("unknown-commit")
            .with_detail(detail),
        UndoError::NotAgents { .. } => conflict("not-agents"),
        UndoError::AlreadyUndone { .. } => conflict("already-undone"),
        UndoError::NotUndoable { .. } => conflict("not-undoable"),
        UndoError::Conflict { .. } => conflict("later-commits"),
        UndoError::Invalid { .. } => conflict("invalid-result"),
        UndoError::NoStore => conflict("no-undo-records"),
        UndoError::Store(_) => ApiError::internal(detail),
        UndoError::Closed => ApiError::forbidden(NOT_YOURS),
    }
}

/// 409 for a paired session: its state lives in the app, and the relay keeps none of its
/// commits (`docs/pairing.md` §Undo).
#[cfg(feature = "pairing")]
fn paired() -> ApiError {
    ApiError::new(ErrorCode::Conflict)
        .with_reason("paired")
        .with_detail(
            "this session is paired: its state and commits live in the app, so undo is the \
             app's business; the relay keeps no commits of a paired session and cannot undo one",
        )
}
