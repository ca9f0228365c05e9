//! A session hosted in this process as a [`SessionBackend`](super::backend::SessionBackend):
//! one method per operation (`docs/lap.md` §5.3), the typed request in, the typed answer plus
//! what to log and audit out. The trait's impl that calls them is in `super::hosted_backend`;
//! the gate around them is in [`super::gate`].
//!
//! The reads and the dispatch take an [`Asking`] (the operation and the token that asks, if
//! any), not a whole call: the pairing client answers a server's `rpc` frames through them on
//! its own session (`surface/pairing/client`), for an agent that is the server's, not a token
//! of this process.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use tea_agent_schema::protocol::{
    ActionList, ActionsResponse, ConfirmResultRequest, ConfirmResultResponse, ContextResponse,
    DescribeVisibleResponse, Description, DispatchRequest, LogKind, MessageRequest, NarrateRequest,
    NarrateResponse, ObserveResponse, PendingResponse, QueryDomRequest, QueryDomResponse,
    QueryStateRequest, QueryStateResponse, RecentActionsRequest, RecentActionsResponse, SendResult,
    StateRequest, StateResponse, WaitRequest, WaitResponse, WithdrawRequest, WithdrawResponse,
    WouldDispatchRequest, WouldDispatchResult,
};
use tea_agent_schema::AgentContext;

use super::context::{log_entry, AnswerResult, Answered, Call};
use super::error::ApiError;
use super::spec::OperationSpec;
use crate::algo::state_path::Page;
use crate::app::App;
use crate::config::OverBudget;
use crate::engine::host::Host;
use crate::engine::session::confirm::WithdrawError;
use crate::engine::session::keyed::KeyedDispatch;
use crate::engine::session::progress::DispatchWatch;
use crate::engine::session::{DispatchOptions, SendError, Session, SessionError, Withdrawal};
use crate::security::AuditEvent;

/// A session of `host`, answering the operations of the tokens that drive it.
pub(crate) struct HostedSession<A: App> {
    pub(super) session: Session<A>,
    pub(super) host: Host<A>,
    /// The clamp of every `timeoutMs` (`ServerOptions::max_wait_ms`).
    max_wait_ms: u64,
}

/// Who asks a hosted session, and for which operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asking<'a> {
    /// The operation's spec (its label, tool and default timeout).
    pub(crate) spec: &'static OperationSpec,
    /// The agent token that asks; none for the pairing client's session, whose agent is the
    /// server's.
    pub(crate) tid: Option<&'a str>,
}

impl<'a> Asking<'a> {
    /// The asking of `call`.
    pub(super) fn of(call: &'a Call<'a>) -> Self {
        Asking {
            spec: call.spec,
            tid: Some(call.tid()),
        }
    }
}

/// The dynamic half of `/observe` (all but the description), read from one snapshot: what a
/// paired app answers to `observe`, and what a hosted session completes with its description.
#[derive(Debug, Serialize)]
pub(crate) struct Observed {
    state: Arc<RawValue>,
    actions: ActionList,
    context: Option<AgentContext>,
    seq: u64,
}

fn closed_or_internal(e: SessionError) -> ApiError {
    match e {
        SessionError::Closed => ApiError::paused(),
        SessionError::Internal(d) => ApiError::internal(d),
        SessionError::NotMigrated(d) => ApiError::paused().with_detail(d),
    }
}

/// A read: logs a `read` entry under the operation's label.
fn read<R: Serialize>(spec: &OperationSpec, body: R) -> Answered<R> {
    Answered::read(body, spec.label, spec.tool)
}

/// The default `drainQuietMs` of a dispatch (`docs/lap.md` §5.5).
const DEFAULT_DRAIN_QUIET_MS: u64 = 100;

/// The options of a dispatch (`docs/lap.md` §5.5): defaults 100 ms quiet and the timeout of
/// `spec` (`/message`'s), clamped to `max_wait_ms`.
pub(crate) fn dispatch_options(
    request: &DispatchRequest,
    spec: &OperationSpec,
    max_wait_ms: u64,
) -> DispatchOptions {
    DispatchOptions {
        wait_for: request.wait_for.unwrap_or_default(),
        drain_quiet: Duration::from_millis(
            request.drain_quiet_ms.unwrap_or(DEFAULT_DRAIN_QUIET_MS),
        ),
        timeout: Duration::from_millis(spec.wait_ms(request.timeout_ms, max_wait_ms)),
        include_state: request.include_state,
    }
}

impl<A: App> HostedSession<A> {
    /// `session` of `host`, its waits clamped to `max_wait_ms`.
    pub(crate) fn new(session: Session<A>, host: Host<A>, max_wait_ms: u64) -> Self {
        HostedSession {
            session,
            host,
            max_wait_ms,
        }
    }

    /// `timeoutMs` with the operation's default, clamped to `maxWaitMs`.
    fn wait_ms(&self, spec: &OperationSpec, requested: Option<u64>) -> u64 {
        spec.wait_ms(requested, self.max_wait_ms)
    }

    /// The dynamic half of `/observe`: the state and its version from one snapshot (the hooks
    /// may read a newer one).
    pub(crate) fn observed(&self) -> Result<Observed, ApiError> {
        let published = self.session.published();
        Ok(Observed {
            state: published.json(),
            actions: self.session.action_list().map_err(closed_or_internal)?,
            context: self.session.context().map_err(closed_or_internal)?,
            seq: published.seq,
        })
    }

    pub(super) async fn observe(&self, ask: Asking<'_>) -> AnswerResult<ObserveResponse> {
        let Observed {
            state,
            actions,
            context,
            seq,
        } = self.observed()?;
        let body = ObserveResponse {
            state,
            actions,
            description: self.host.observe_description(),
            context,
            seq: Some(seq),
            work: self.session.running_work(),
        };
        Ok(read(ask.spec, body))
    }

    pub(super) async fn describe(&self, ask: Asking<'_>) -> AnswerResult<Description> {
        Ok(Answered::audited(
            self.host.description(),
            json!({"path": ask.spec.audit_path()}),
        ))
    }

    /// `/state`.
    pub(crate) fn state(&self, ask: Asking<'_>, req: StateRequest) -> Answered<StateResponse> {
        let body = match req.since_seq {
            Some(since) => self.session.get_state_since(since),
            None => self.session.get_state(req.path.as_deref()),
        };
        read(ask.spec, body)
    }

    /// `/state` as the gate serves it: a `sinceSeq` this process cannot answer from its
    /// recent patches is answered from a fleet's store when it still holds those commits
    /// (`Session::get_state_since_anywhere`).
    pub(crate) async fn state_anywhere(
        &self,
        ask: Asking<'_>,
        req: StateRequest,
    ) -> Answered<StateResponse> {
        match req.since_seq {
            Some(since) => read(ask.spec, self.session.get_state_since_anywhere(since).await),
            None => self.state(ask, req),
        }
    }

    /// `/query-state`.
    pub(crate) fn query_state(
        &self,
        ask: Asking<'_>,
        req: QueryStateRequest,
    ) -> Answered<QueryStateResponse> {
        let answer = if req.is_page() {
            let page = Page {
                offset: req.offset.unwrap_or(0),
                limit: req.limit,
            };
            self.session.query_state_page(&req.path, page)
        } else {
            self.session.query_state(&req.path)
        };
        read(ask.spec, answer)
    }

    /// `/actions`.
    pub(crate) fn actions(&self, ask: Asking<'_>) -> AnswerResult<ActionsResponse> {
        let actions = self.session.action_list().map_err(closed_or_internal)?;
        Ok(read(ask.spec, ActionsResponse { actions }))
    }

    /// `/query-dom`.
    pub(crate) fn query_dom(
        &self,
        ask: Asking<'_>,
        req: QueryDomRequest,
    ) -> AnswerResult<QueryDomResponse> {
        let body = self
            .session
            .query_dom(&req.name, req.multiple)
            .map_err(closed_or_internal)?;
        let spec = ask.spec;
        Ok(Answered::read(
            body,
            format!("{}: {}", spec.label, req.name),
            spec.tool,
        ))
    }

    /// `/describe-visible`.
    pub(crate) fn describe_visible(
        &self,
        ask: Asking<'_>,
    ) -> AnswerResult<DescribeVisibleResponse> {
        let body = self
            .session
            .describe_visible()
            .map_err(closed_or_internal)?;
        Ok(read(ask.spec, body))
    }

    /// `/context`, with the hints meant for the asking token.
    pub(crate) fn context(&self, ask: Asking<'_>) -> AnswerResult<ContextResponse> {
        let body = self
            .session
            .describe_context(ask.tid)
            .map_err(closed_or_internal)?;
        Ok(read(ask.spec, body))
    }

    /// `/would-dispatch`.
    pub(crate) fn would_dispatch(
        &self,
        ask: Asking<'_>,
        req: WouldDispatchRequest,
    ) -> AnswerResult<WouldDispatchResult> {
        let body = self
            .session
            .would_dispatch(&req.msg.0)
            .map_err(closed_or_internal)?;
        Ok(read(ask.spec, body))
    }

    pub(super) async fn recent_actions(
        &self,
        ask: Asking<'_>,
        req: RecentActionsRequest,
    ) -> AnswerResult<RecentActionsResponse> {
        let entries = self.session.recent_log(req.count(), req.kind.as_deref());
        let detail = json!({
            "tool": ask.spec.tool,
            "count": entries.len(),
            "kindFilter": req.kind,
        });
        Ok(Answered::audited(RecentActionsResponse { entries }, detail))
    }

    /// `/message`'s dispatch through the session's gates, validation and confirmation, for the
    /// asking token: a proposal is answered `pending-confirmation` at once, not waited on (a
    /// server's `/message` waits on it; a paired app's server follows it with
    /// `confirm-resolved`). `key` as in
    /// [`SessionBackend::message`](super::backend::SessionBackend::message).
    pub(crate) async fn send(
        &self,
        ask: Asking<'_>,
        dispatch: &DispatchRequest,
        key: Option<KeyedDispatch>,
        follow: Arc<DispatchWatch>,
    ) -> Result<SendResult, SendError> {
        let opts = dispatch_options(dispatch, ask.spec, self.max_wait_ms);
        let reason = dispatch.reason.clone();
        let follow = Some(follow);
        self.session
            .send_message_within_budgets(&dispatch.msg.0, reason, opts, ask.tid, key, follow)
            .await
    }

    /// `/message`: [`Self::send`], then a proposal waited on for the dispatch's timeout.
    pub(super) async fn message(
        &self,
        call: &Call<'_>,
        req: MessageRequest,
        key: Option<KeyedDispatch>,
    ) -> AnswerResult<SendResult> {
        let session = &self.session;
        let timeout_ms = crate::clock::millis(
            dispatch_options(&req.dispatch, call.spec, self.max_wait_ms).timeout,
        );
        let variant = req.dispatch.msg.variant().to_string();
        let follow = call.follow.clone().unwrap_or_else(DispatchWatch::new);
        if let Some(key) = &req.idempotency_key {
            follow.set_key(key);
        }
        let result = match self
            .send(Asking::of(call), &req.dispatch, key, follow)
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
                if let Some(slot) = &call.proposed {
                    let _ = slot.set(confirm_id.clone());
                }
                let audit = (
                    AuditEvent::ConfirmProposed,
                    json!({"variant": variant, "confirmId": confirm_id}),
                );
                let outcome = session
                    .wait_confirm(&confirm_id, timeout_ms)
                    .await
                    .unwrap_or(ConfirmResultResponse::StillPending);
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
        let (event, detail) = audit;
        Ok(Answered {
            body,
            read: None,
            audit: (event, detail.into()),
        })
    }

    pub(super) async fn confirm_result(
        &self,
        call: &Call<'_>,
        req: ConfirmResultRequest,
    ) -> AnswerResult<ConfirmResultResponse> {
        let id = req.confirm_id;
        let timeout = self.wait_ms(call.spec, req.timeout_ms);
        let outcome = self
            .session
            .wait_own_confirm(&id, call.tid(), timeout)
            .await
            .ok_or_else(|| ApiError::invalid(format!("unknown confirmId: {id}")))?;
        let name = match &outcome {
            ConfirmResultResponse::Confirmed { .. } => "confirmed",
            ConfirmResultResponse::Rejected { reason } => reason.as_str(),
            ConfirmResultResponse::Withdrawn => "withdrawn",
            ConfirmResultResponse::StillPending => "still-pending",
        };
        let body = outcome;
        Ok(Answered::audited(
            body,
            json!({"path": call.spec.audit_path(), "outcome": name}),
        ))
    }

    pub(super) async fn wait(
        &self,
        call: &Call<'_>,
        req: WaitRequest,
    ) -> AnswerResult<WaitResponse> {
        let timeout = self.wait_ms(call.spec, req.timeout_ms);
        let body = self
            .session
            .wait_for_change_or_work(req.path.as_deref(), req.since_seq, timeout, req.progress)
            .await
            .map_err(closed_or_internal)?;
        let detail = json!({"path": call.spec.audit_path(), "outcome": body.status.as_str()});
        Ok(Answered::audited(body, detail))
    }

    pub(super) async fn narrate(
        &self,
        call: &Call<'_>,
        req: NarrateRequest,
    ) -> AnswerResult<NarrateResponse> {
        let session = &self.session;
        let limit = self.host.config().budgets.log_entry_bytes;
        OverBudget::check("text", req.text.len(), limit)?;
        let intent = req.intent.unwrap_or_else(|| call.spec.label.to_string());
        let mut entry = log_entry(LogKind::Narrate, intent, call.tid(), session.now_ms());
        entry.detail = Some(req.text);
        OverBudget::check("the log entry", crate::config::json_len(&entry), limit)?;
        session.append_log(entry);
        Ok(Answered::audited(
            NarrateResponse { ok: true },
            json!({"path": call.spec.audit_path(), "outcome": "ok"}),
        ))
    }

    pub(super) async fn pending(&self, call: &Call<'_>) -> AnswerResult<PendingResponse> {
        if self.session.is_closed() {
            return Err(ApiError::paused());
        }
        let pending = self.session.pending_of(call.tid());
        let detail = json!({"tool": call.spec.tool, "count": pending.len()});
        Ok(Answered::audited(PendingResponse { pending }, detail))
    }

    /// `/withdraw` (`docs/lap.md` §5.8): only the proposing token, only while undecided.
    pub(super) async fn withdraw(
        &self,
        call: &Call<'_>,
        req: WithdrawRequest,
    ) -> AnswerResult<WithdrawResponse> {
        let id = req.confirm_id;
        let withdrawn = self
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
        Ok(Answered::withdrawn(
            json!({"variant": withdrawn.variant, "confirmId": withdrawn.id}),
        ))
    }
}

/// The `/message` answer for the outcome of a proposal it waited on.
pub(crate) fn message_answer(outcome: ConfirmResultResponse, confirm_id: String) -> SendResult {
    match outcome {
        ConfirmResultResponse::Confirmed {
            state_after,
            msg,
            seq,
        } => SendResult::Confirmed {
            state_after,
            msg,
            seq,
        },
        ConfirmResultResponse::Rejected { reason } => SendResult::Rejected {
            reason,
            detail: None,
        },
        ConfirmResultResponse::Withdrawn => SendResult::Withdrawn,
        ConfirmResultResponse::StillPending => SendResult::PendingConfirmation { confirm_id },
    }
}
