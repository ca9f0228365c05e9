//! `/cancel` (MCP `cancel_work`, `docs/lap.md` §5.9): an agent stops the running effects its
//! own messages started, on a hosted session. A paired session relays it to the app.

use serde_json::json;
use tea_agent_schema::protocol::{CancelRequest, CancelResponse, CancelStatus};

use super::context::{AnswerResult, Answered, Call};
use super::error::ApiError;
use crate::app::App;
use crate::engine::session::{CancelRefused, Canceller, Session, WorkSelector};
use crate::security::AuditEvent;

/// The `reason` an MCP client's `notifications/cancelled` sends along (the log then says the
/// client cancelled, not the agent).
pub(crate) const MCP_CLIENT_REASON: &str = "notifications/cancelled";

/// What `request` names.
fn selector(request: &CancelRequest) -> WorkSelector {
    match (&request.seq, &request.idempotency_key, &request.work) {
        (Some(seq), _, _) => WorkSelector::Seq(*seq),
        (_, Some(key), _) => WorkSelector::Key(key.clone()),
        (_, _, Some(work)) => WorkSelector::Work(*work),
        _ => WorkSelector::All,
    }
}

/// `/cancel` on a hosted session: 403 when the named work was started by another token (or
/// by the human, or the app); `not-running` when nothing named runs.
pub(crate) async fn hosted<A: App>(
    session: &Session<A>,
    call: &Call<'_>,
    request: CancelRequest,
) -> AnswerResult<CancelResponse> {
    if session.is_closed() {
        return Err(ApiError::paused());
    }
    let body = cancel_own(session, Some(call.tid()), &request)?;
    let detail = json!({
        "path": call.spec.audit_path(),
        "outcome": match body.status {
            CancelStatus::Cancelled => "cancelled",
            CancelStatus::NotRunning => "not-running",
        },
        "work": body.cancelled,
    });
    Ok(Answered {
        body,
        read: None,
        audit: (AuditEvent::LapCall, detail.into()),
    })
}

/// Cancels the work `request` names for the agent `tid` (`None`: the pairing client's
/// session, whose agent is the server's), which must be work its own messages started.
pub(crate) fn cancel_own<A: App>(
    session: &Session<A>,
    tid: Option<&str>,
    request: &CancelRequest,
) -> Result<CancelResponse, ApiError> {
    let by = match request.reason.as_deref() {
        Some(MCP_CLIENT_REASON) => Canceller::McpClient,
        _ => Canceller::Agent,
    };
    let cancelled = session
        .cancel_agent_work(tid, &selector(request), by)
        .map_err(|CancelRefused::NotYours| {
            ApiError::forbidden(
                "that work was not started by your messages: an agent cancels only its own work",
            )
        })?;
    let status = if cancelled.is_empty() {
        CancelStatus::NotRunning
    } else {
        CancelStatus::Cancelled
    };
    Ok(CancelResponse { status, cancelled })
}
