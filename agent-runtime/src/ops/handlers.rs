//! One async handler per operation (`docs/lap.md` §5.3): the typed request in, the typed answer
//! plus what to log and audit out. The gate around them is in [`super::gate`].

use std::time::Duration;

use agent_schema::protocol::{
    ActionsResponse, ConfirmOutcome, ConfirmResultRequest, ConfirmResultResponse, ContextResponse,
    DescribeVisibleResponse, Description, DispatchRequest, EmptyRequest, LogKind, MessageRequest,
    NarrateRequest, NarrateResponse, ObserveResponse, PendingResponse, QueryDomRequest,
    QueryDomResponse, QueryStateRequest, QueryStateResponse, RecentActionsRequest,
    RecentActionsResponse, RejectReason, SendResult, StateRequest, StateResponse, WaitRequest,
    WaitResponse, WithdrawRequest, WithdrawResponse, WouldDispatchRequest, WouldDispatchResult,
};
use serde::Serialize;
use serde_json::json;

use super::call::{log_entry, Answer, Call};
use super::error::ApiError;
use super::spec::OperationSpec;
use crate::app::App;
use crate::config::OverBudget;
use crate::engine::session::confirm::WithdrawError;
use crate::engine::session::keyed::KeyedDispatch;
use crate::engine::session::{DispatchOptions, SendError, SessionError, Withdrawal};
use crate::security::AuditEvent;

type Handled<R> = Result<Answer<R>, ApiError>;

fn closed_or_internal(e: SessionError) -> ApiError {
    match e {
        SessionError::Closed => ApiError::paused(),
        SessionError::Internal(d) => ApiError::internal(d),
        SessionError::NotMigrated(d) => ApiError::paused().with_detail(d),
    }
}

/// A read: logs a `read` entry under the operation's label.
fn read<A: App, R: Serialize>(call: &Call<'_, A>, body: R) -> Answer<R> {
    Answer::read(body, call.spec.label, call.spec.tool)
}

/// The default `drainQuietMs` of a dispatch (`docs/lap.md` §5.5).
const DEFAULT_DRAIN_QUIET_MS: u64 = 100;

/// The options of a dispatch (`docs/lap.md` §5.5): defaults 100 ms quiet and the timeout of
/// `spec` (`/message`'s), clamped to `max_wait`.
pub(crate) fn dispatch_options(
    request: &DispatchRequest,
    spec: &OperationSpec,
    max_wait: u64,
) -> DispatchOptions {
    DispatchOptions {
        wait_for: request.wait_for.unwrap_or_default(),
        drain_quiet: Duration::from_millis(
            request.drain_quiet_ms.unwrap_or(DEFAULT_DRAIN_QUIET_MS),
        ),
        timeout: Duration::from_millis(spec.wait_ms(request.timeout_ms, max_wait)),
        include_state: request.include_state,
    }
}

pub(super) async fn observe<A: App>(
    call: &Call<'_, A>,
    _: EmptyRequest,
) -> Handled<ObserveResponse> {
    let session = call.session;
    // The state and its version from one snapshot; the hooks may read a newer one.
    let published = session.published();
    let actions = session.list_actions().map_err(closed_or_internal)?;
    let context = session.context().map_err(closed_or_internal)?;
    let body = ObserveResponse {
        state: published.json(),
        actions,
        description: call.server.host().observe_description(),
        context,
        seq: Some(published.seq),
    };
    Ok(read(call, body))
}

pub(super) async fn describe<A: App>(call: &Call<'_, A>, _: EmptyRequest) -> Handled<Description> {
    Ok(Answer::audited(
        call.server.host().description(),
        json!({"path": call.spec.audit_path()}),
    ))
}

pub(super) async fn state<A: App>(call: &Call<'_, A>, req: StateRequest) -> Handled<StateResponse> {
    let body = match req.since_seq {
        Some(since) => call.session.get_state_since(since),
        None => call.session.get_state(req.path.as_deref()),
    };
    Ok(read(call, body))
}

pub(super) async fn query_state<A: App>(
    call: &Call<'_, A>,
    req: QueryStateRequest,
) -> Handled<QueryStateResponse> {
    Ok(read(call, call.session.query_state(&req.path)))
}

pub(super) async fn actions<A: App>(
    call: &Call<'_, A>,
    _: EmptyRequest,
) -> Handled<ActionsResponse> {
    let actions = call.session.list_actions().map_err(closed_or_internal)?;
    Ok(read(call, ActionsResponse { actions }))
}

pub(super) async fn query_dom<A: App>(
    call: &Call<'_, A>,
    req: QueryDomRequest,
) -> Handled<QueryDomResponse> {
    let body = call
        .session
        .query_dom(&req.name, req.multiple)
        .map_err(closed_or_internal)?;
    let spec = call.spec;
    Ok(Answer::read(
        body,
        format!("{}: {}", spec.label, req.name),
        spec.tool,
    ))
}

pub(super) async fn describe_visible<A: App>(
    call: &Call<'_, A>,
    _: EmptyRequest,
) -> Handled<DescribeVisibleResponse> {
    let body = call
        .session
        .describe_visible()
        .map_err(closed_or_internal)?;
    Ok(read(call, body))
}

pub(super) async fn context<A: App>(
    call: &Call<'_, A>,
    _: EmptyRequest,
) -> Handled<ContextResponse> {
    let body = call
        .session
        .describe_context(Some(call.tid()))
        .map_err(closed_or_internal)?;
    Ok(read(call, body))
}

pub(super) async fn would_dispatch<A: App>(
    call: &Call<'_, A>,
    req: WouldDispatchRequest,
) -> Handled<WouldDispatchResult> {
    let body = call
        .session
        .would_dispatch(&req.msg.0)
        .map_err(closed_or_internal)?;
    Ok(read(call, body))
}

pub(super) async fn recent_actions<A: App>(
    call: &Call<'_, A>,
    req: RecentActionsRequest,
) -> Handled<RecentActionsResponse> {
    let entries = call.session.recent_log(req.count(), req.kind.as_deref());
    let detail = json!({
        "tool": call.spec.tool,
        "count": entries.len(),
        "kindFilter": req.kind,
    });
    Ok(Answer::audited(RecentActionsResponse { entries }, detail))
}

/// The `/message` answer for the outcome of a proposal it waited on.
fn message_answer(outcome: ConfirmOutcome, confirm_id: String) -> SendResult {
    match outcome {
        ConfirmOutcome::Confirmed {
            state_after,
            msg,
            seq,
        } => SendResult::Confirmed {
            state_after,
            msg,
            seq,
        },
        ConfirmOutcome::UserCancelled => SendResult::Rejected {
            reason: RejectReason::UserCancelled,
            detail: None,
        },
        ConfirmOutcome::Expired => SendResult::Rejected {
            reason: RejectReason::Timeout,
            detail: None,
        },
        ConfirmOutcome::Withdrawn => SendResult::Withdrawn,
        ConfirmOutcome::Pending => SendResult::PendingConfirmation { confirm_id },
    }
}

/// `/message`; `key` is the `idempotencyKey` claimed in a durable store, handed to the dispatch
/// for the message's commit to record (`super::keyed`).
pub(super) async fn message<A: App>(
    call: &Call<'_, A>,
    req: MessageRequest,
    key: Option<KeyedDispatch>,
) -> Handled<SendResult> {
    let session = call.session;
    let opts = dispatch_options(
        &req.dispatch,
        call.spec,
        call.server.options().max_wait_ms(),
    );
    let DispatchRequest { msg, reason, .. } = req.dispatch;
    let variant = msg.variant().to_string();
    let result = match session
        .send_message_within_budgets(&msg.0, reason, opts, Some(call.tid()), key)
        .await
    {
        Ok(r) => r,
        Err(SendError::OverBudget(e)) => return Err(e.into()),
        Err(SendError::Session(SessionError::Closed)) => return Err(ApiError::paused()),
        Err(SendError::Session(SessionError::NotMigrated(d))) => {
            return Err(ApiError::paused().with_detail(d))
        }
        Err(SendError::Session(SessionError::Internal(d))) => {
            session.record_errored(call.tid(), &variant, d.clone());
            return Err(ApiError::internal(d));
        }
    };
    let (body, audit) = match result {
        SendResult::PendingConfirmation { confirm_id } => {
            let audit = (
                AuditEvent::ConfirmProposed,
                json!({"variant": variant, "confirmId": confirm_id}),
            );
            let outcome = session
                .wait_confirm(&confirm_id, crate::clock::millis(opts.timeout))
                .await
                .unwrap_or(ConfirmOutcome::Pending);
            (message_answer(outcome, confirm_id), audit)
        }
        rejected @ SendResult::Rejected { .. } => (
            rejected,
            (
                AuditEvent::MsgBlocked,
                json!({"variant": variant, "status": "rejected"}),
            ),
        ),
        other => (
            other,
            (
                AuditEvent::MsgDispatched,
                json!({"variant": variant, "status": "dispatched"}),
            ),
        ),
    };
    Ok(Answer {
        body,
        read: None,
        audit,
    })
}

pub(super) async fn confirm_result<A: App>(
    call: &Call<'_, A>,
    req: ConfirmResultRequest,
) -> Handled<ConfirmResultResponse> {
    let id = req.confirm_id;
    let timeout = call.wait_ms(req.timeout_ms);
    let outcome = call
        .session
        .wait_own_confirm(&id, call.tid(), timeout)
        .await
        .ok_or_else(|| ApiError::invalid(format!("unknown confirmId: {id}")))?;
    let (body, name) = match outcome {
        ConfirmOutcome::Confirmed {
            state_after,
            msg,
            seq,
        } => (
            ConfirmResultResponse::Confirmed {
                state_after,
                msg,
                seq,
            },
            "confirmed",
        ),
        ConfirmOutcome::UserCancelled => (
            ConfirmResultResponse::Rejected {
                reason: RejectReason::UserCancelled,
            },
            "user-cancelled",
        ),
        ConfirmOutcome::Expired => (
            ConfirmResultResponse::Rejected {
                reason: RejectReason::Timeout,
            },
            "timeout",
        ),
        ConfirmOutcome::Withdrawn => (ConfirmResultResponse::Withdrawn, "withdrawn"),
        ConfirmOutcome::Pending => (ConfirmResultResponse::StillPending, "still-pending"),
    };
    Ok(Answer::audited(
        body,
        json!({"path": call.spec.audit_path(), "outcome": name}),
    ))
}

pub(super) async fn wait<A: App>(call: &Call<'_, A>, req: WaitRequest) -> Handled<WaitResponse> {
    let timeout = call.wait_ms(req.timeout_ms);
    let body = call
        .session
        .wait_for_change_since(req.path.as_deref(), req.since_seq, timeout)
        .await
        .map_err(closed_or_internal)?;
    let detail = json!({"path": call.spec.audit_path(), "outcome": body.status.as_str()});
    Ok(Answer::audited(body, detail))
}

pub(super) async fn narrate<A: App>(
    call: &Call<'_, A>,
    req: NarrateRequest,
) -> Handled<NarrateResponse> {
    let session = call.session;
    let limit = call.server.host().config().budgets.log_entry_bytes;
    OverBudget::check("text", req.text.len(), limit)?;
    let intent = req.intent.unwrap_or_else(|| call.spec.label.to_string());
    let mut entry = log_entry(LogKind::Narrate, intent, call.tid(), session.now_ms());
    entry.detail = Some(req.text);
    OverBudget::check("the log entry", crate::config::json_len(&entry), limit)?;
    session.append_log(entry);
    Ok(Answer::audited(
        NarrateResponse { ok: true },
        json!({"path": call.spec.audit_path(), "outcome": "ok"}),
    ))
}

pub(super) async fn pending<A: App>(
    call: &Call<'_, A>,
    _: EmptyRequest,
) -> Handled<PendingResponse> {
    if call.session.is_closed() {
        return Err(ApiError::paused());
    }
    let pending = call.session.pending_of(call.tid());
    let detail = json!({"tool": call.spec.tool, "count": pending.len()});
    Ok(Answer::audited(PendingResponse { pending }, detail))
}

/// `/withdraw` (`docs/lap.md` §5.8): only the proposing token, only while undecided.
pub(super) async fn withdraw<A: App>(
    call: &Call<'_, A>,
    req: WithdrawRequest,
) -> Handled<WithdrawResponse> {
    let id = req.confirm_id;
    let withdrawn = call
        .session
        .withdraw(&id, call.tid())
        .await
        .map_err(|e| match e {
            Withdrawal::Closed(e) => closed_or_internal(e),
            Withdrawal::Refused(WithdrawError::NotFound) => {
                ApiError::invalid(format!("unknown confirmId: {id}"))
            }
            Withdrawal::Refused(WithdrawError::NotYours) => ApiError::forbidden(format!(
                "confirmation {id} was proposed by another agent token"
            )),
            Withdrawal::Refused(WithdrawError::AlreadyDecided(status)) => {
                ApiError::already_decided(&id, status.as_str())
            }
            Withdrawal::NotStored(e) => {
                ApiError::internal(format!("the withdrawal of {id} was not stored: {e}"))
            }
        })?;
    Ok(Answer::withdrawn(
        json!({"variant": withdrawn.variant, "confirmId": withdrawn.id}),
    ))
}
