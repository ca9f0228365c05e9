//! Dispatch paths: the agent's `send_message`, the human's dispatch, `would_dispatch`, and the
//! confirmation flow (`docs/semantics.md` §5–§7).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use serde::Deserialize as _;
use serde_json::{json, Map, Value};
use tea_agent_schema::protocol::{
    ConfirmEntry, ConfirmResultResponse, ConfirmStatus, LogKind, RejectReason, SendResult,
    ValidationIssue, WaitFor, WouldDispatchResult,
};
use tea_agent_schema::DispatchMode;

use super::confirm::{DecisionError, WithdrawError};
use super::decisions::DecideError;
use super::dispatch_options::DispatchOptions;
use super::drain::Timing;
use super::events::EventBody;
use super::keyed::KeyedDispatch;
use super::progress::DispatchWatch;
use super::queue::{CommitMark, Origin};
use super::{activity, panic_text, redact, LastOutcome, Session, SessionCore, SessionError};
use crate::algo::diff::diff;
use crate::algo::snapshot::serialize_redacted;
use crate::app::App;
use crate::config::{json_len, ActionGates, DispatchPolicy, OverBudget};
use crate::security::AuditEvent;

/// Why a message was refused before dispatch: the `invalid` detail and the validation errors
/// (empty for a serde failure).
type Rejection = (String, Vec<ValidationIssue>);

/// Why an approval was refused; the entry is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditedApprovalError {
    /// No entry with that id.
    #[error("not found")]
    NotFound,
    /// Already decided.
    #[error("already {}", .0.as_str())]
    AlreadyDecided(ConfirmStatus),
    /// The edited message failed its checks.
    #[error("{0}")]
    Invalid(String),
    /// The session is closed.
    #[error("session closed")]
    Closed,
    /// The store failed to record the decision: nothing was decided.
    #[error("the decision was not stored: {0}")]
    NotStored(String),
}

impl From<DecisionError> for EditedApprovalError {
    fn from(e: DecisionError) -> Self {
        match e {
            DecisionError::NotFound => EditedApprovalError::NotFound,
            DecisionError::AlreadyDecided(s) => EditedApprovalError::AlreadyDecided(s),
        }
    }
}

impl From<DecideError> for EditedApprovalError {
    fn from(e: DecideError) -> Self {
        match e {
            DecideError::Refused(WithdrawError::AlreadyDecided(s)) => {
                EditedApprovalError::AlreadyDecided(s)
            }
            DecideError::Refused(_) => EditedApprovalError::NotFound,
            DecideError::Gone => EditedApprovalError::Closed,
            DecideError::Store(e) => EditedApprovalError::NotStored(e),
        }
    }
}

/// Why [`Session::send_message_within_budgets`] refused a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SendError {
    /// The session failed.
    Session(SessionError),
    /// A proposal over its budget, or the pending confirmations full.
    OverBudget(OverBudget),
}

fn rejected(reason: RejectReason, detail: Option<String>) -> SendResult {
    SendResult::Rejected { reason, detail }
}

/// `msg` without its `type` key.
pub(crate) fn payload_of(msg: &Value) -> Value {
    match msg {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| k.as_str() != "type")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
        ),
        _ => Value::Object(Map::new()),
    }
}

/// The `"type"` of a message when the message is an object and the type a string.
pub(crate) fn variant_of(msg: &Value) -> Option<&str> {
    msg.as_object()?.get("type")?.as_str()
}

impl<A: App> Session<A> {
    /// Validates (with `policy`) and deserializes a message. `Err` carries the `invalid` detail
    /// and the validation errors (empty for a serde failure).
    pub(super) fn check_message(
        &self,
        msg: &Value,
        policy: DispatchPolicy,
    ) -> Result<(A::Msg, Vec<ValidationIssue>), Rejection> {
        let (outcome, unevaluable) = self.core.catalog.validate_reporting(msg, policy);
        for src in unevaluable {
            self.validates_unevaluable(&src);
        }
        if !outcome.is_ok() {
            return Err((outcome.detail(), outcome.errors));
        }
        // Read from the borrowed value, not a clone of it: the message's strings are then
        // allocated together, not scattered among a copy of the tree that is freed at once
        // (which left a big message's pages resident: `docs/stores.md` §Memory).
        match A::Msg::deserialize(msg) {
            Ok(m) => Ok((m, outcome.warnings)),
            Err(e) => Err((format!("msg does not deserialize: {e}"), Vec::new())),
        }
    }

    /// Logs at WARN and counts (`agent_validation_evaluation_failures_total`) a `@validates`
    /// that could not be evaluated, once per predicate and session.
    #[cold]
    fn validates_unevaluable(&self, src: &str) {
        if self.core.validates_logged.lock().insert(src.into()) {
            crate::telemetry::validation_evaluation_failed();
            tracing::warn!(
                session = %self.core.id,
                validates = src,
                "a `@validates` could not be evaluated on a message's value (does the value \
                 match the field's schema?): the message is refused, and the sender is told \
                 it could not be evaluated"
            );
        }
    }

    fn record_outcome(&self, tid: Option<&str>, outcome: LastOutcome) {
        if let Some(tid) = tid {
            self.core.outcomes.lock().insert(tid.to_string(), outcome);
        }
    }

    /// The last dispatch outcome of `tid`.
    pub fn last_outcome(&self, tid: &str) -> Option<LastOutcome> {
        self.core.outcomes.lock().get(tid).cloned()
    }

    /// Records that `tid`'s last `send_message` failed inside the server.
    pub fn record_errored(&self, tid: &str, variant: &str, message: String) {
        self.record_outcome(
            Some(tid),
            LastOutcome::Errored {
                variant: variant.to_string(),
                messages: vec![message],
            },
        );
    }

    pub(super) fn message_log_entry(
        &self,
        kind: LogKind,
        msg: &Value,
        tid: Option<&str>,
    ) -> tea_agent_schema::protocol::LogEntry {
        let variant = variant_of(msg);
        let intent = variant
            .and_then(|v| self.core.catalog.annotations(v))
            .and_then(|a| a.intent.as_deref());
        let mut entry = activity::entry(kind, self.core.now());
        entry.variant = variant.map(|v| activity::clip(v, activity::LABEL_CHARS));
        entry.intent = Some(activity::clip(
            &activity::message_intent(intent, variant),
            activity::LABEL_CHARS,
        ));
        entry.detail = activity::payload_detail(msg);
        entry.tid = tid.map(str::to_owned);
        entry
    }

    /// The agent's `send_message` (`docs/semantics.md` §5): gates, validation, confirmation,
    /// dispatch and drain. Logs the outcome and records it as `tid`'s last dispatch outcome.
    /// A proposal over the confirmation budgets is rejected as `invalid` with the limit in its
    /// detail.
    pub async fn send_message(
        &self,
        msg: &Value,
        reason: Option<String>,
        opts: DispatchOptions,
        tid: Option<&str>,
    ) -> Result<SendResult, SessionError> {
        match self
            .send_message_within_budgets(msg, reason, opts, tid, None, None)
            .await
        {
            Ok(r) => Ok(r),
            Err(SendError::Session(e)) => Err(e),
            Err(SendError::OverBudget(e)) => {
                Ok(rejected(RejectReason::Invalid, Some(e.to_string())))
            }
        }
    }

    /// [`Self::send_message`], with a proposal over the confirmation budgets (its message and
    /// reason over [`crate::config::Budgets::confirm_bytes`], or the pending entries full)
    /// refused as [`SendError::OverBudget`], nothing proposed or logged. `key` is the
    /// `idempotencyKey` of a keyed `/message`: the commit of the message, when it is
    /// dispatched, records it and reports back through it (`docs/stores.md` §Exactly once); a
    /// message refused or proposed drops it unrecorded.
    ///
    /// `follow` is what the caller follows of the effects the message starts (their ids and
    /// progress, the `idempotencyKey` they are cancelled by: `docs/semantics.md` §5.6).
    pub(crate) async fn send_message_within_budgets(
        &self,
        msg: &Value,
        reason: Option<String>,
        opts: DispatchOptions,
        tid: Option<&str>,
        key: Option<KeyedDispatch>,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Result<SendResult, SendError> {
        let Some(variant) = variant_of(msg) else {
            return Ok(rejected(RejectReason::Invalid, None));
        };
        let annotations = self.core.catalog.annotations(variant).cloned();
        let block = |detail: String, reason: RejectReason| {
            self.append_log(self.message_log_entry(LogKind::Blocked, msg, tid));
            self.record_outcome(
                tid,
                LastOutcome::Rejected {
                    variant: variant.to_string(),
                    messages: vec![detail.clone()],
                },
            );
            rejected(reason, Some(detail))
        };
        if let Some(a) = &annotations {
            if a.dispatch_mode == DispatchMode::HumanOnly {
                return Ok(block(
                    Self::human_only_detail(a.intent.as_deref()),
                    RejectReason::HumanOnly,
                ));
            }
            if let Some(detail) = self
                .unavailable_detail(variant, a)
                .map_err(SendError::Session)?
            {
                return Ok(block(detail, RejectReason::Unavailable));
            }
        }
        let (typed, warnings) = match self.check_message(msg, self.core.config.policy) {
            Ok(ok) => ok,
            Err((detail, _)) => return Ok(block(detail, RejectReason::Invalid)),
        };
        let annotations = annotations.unwrap_or_default();
        if annotations.requires_confirm {
            let budgets = &self.core.config.budgets;
            let size = json_len(msg) + reason.as_ref().map_or(0, json_len);
            let what = if reason.is_some() {
                "msg with its reason"
            } else {
                "msg"
            };
            OverBudget::check(what, size, budgets.confirm_bytes).map_err(SendError::OverBudget)?;
            let entry = ConfirmEntry {
                id: uuid::Uuid::new_v4().to_string(),
                variant: variant.to_string(),
                payload: payload_of(msg),
                intent: activity::message_intent(annotations.intent.as_deref(), Some(variant)),
                reason,
                proposed_at: self.core.now(),
                status: ConfirmStatus::Pending,
                tid: tid.map(str::to_owned),
                edited_payload: None,
            };
            let id = entry.id.clone();
            self.core.sweep_confirms();
            {
                let now = self.core.now();
                self.core
                    .confirms
                    .lock()
                    .propose(entry.clone(), now)
                    .map_err(SendError::OverBudget)?;
                self.core
                    .events
                    .lock()
                    .publish(EventBody::Confirm(Box::new(entry)));
            }
            self.core.confirm_changed.send_modify(|v| *v += 1);
            let mut proposed = self.message_log_entry(LogKind::Proposed, msg, tid);
            proposed.confirm_id = Some(id.clone());
            self.append_log(proposed);
            return Ok(SendResult::PendingConfirmation { confirm_id: id });
        }
        let gated = self.core.config.action_gates == ActionGates::Enforced;
        let (result, mark) = self
            .dispatch_marked(
                typed,
                warnings,
                opts,
                Origin::agent(key, gated, tid, follow.clone()),
                follow,
            )
            .await
            .map_err(SendError::Session)?;
        if let SendResult::Rejected { detail, .. } = &result {
            // Refused at its turn: the task logged it `blocked`.
            self.record_outcome(
                tid,
                LastOutcome::Rejected {
                    variant: variant.to_string(),
                    messages: detail.iter().cloned().collect(),
                },
            );
        }
        if let SendResult::Dispatched {
            state_diff, drain, ..
        } = &result
        {
            let mut entry = self.message_log_entry(LogKind::Dispatched, msg, tid);
            entry.seq = mark.seq;
            entry.no_undo = mark.no_undo;
            let limit = self.core.config.budgets.log_entry_bytes;
            super::activity::attach_diff(&mut entry, state_diff, limit);
            self.append_log(entry);
            let outcome = if drain.errors.is_empty() && drain.warnings.is_empty() {
                LastOutcome::Clean
            } else {
                LastOutcome::Caveats {
                    variant: variant.to_string(),
                    errors: drain.errors.clone(),
                    warnings: drain.warnings.clone(),
                }
            };
            self.record_outcome(tid, outcome);
        }
        Ok(result)
    }

    /// A dispatch by the human (`@humanOnly` allowed; validated with the host policy; no
    /// confirmation, no route gate; not logged).
    pub async fn dispatch_as_human(
        &self,
        msg: &Value,
        opts: DispatchOptions,
    ) -> Result<SendResult, SessionError> {
        if variant_of(msg).is_none() {
            return Ok(rejected(
                RejectReason::Invalid,
                Some("msg.type must be a string".into()),
            ));
        }
        match self.check_message(msg, self.core.config.policy) {
            Ok((typed, warnings)) => {
                self.dispatch_checked(typed, warnings, opts, Origin::Plain, None)
                    .await
            }
            Err((detail, _)) => Ok(rejected(RejectReason::Invalid, Some(detail))),
        }
    }

    /// Dispatches a typed message as the human, bypassing JSON validation.
    pub async fn dispatch_msg(
        &self,
        msg: A::Msg,
        opts: DispatchOptions,
    ) -> Result<SendResult, SessionError> {
        self.dispatch_checked(msg, Vec::new(), opts, Origin::Plain, None)
            .await
    }

    /// Enqueues a checked message from `origin` (a keyed agent message carries its key to its
    /// commit) and answers as `opts` says.
    async fn dispatch_checked(
        &self,
        msg: A::Msg,
        warnings: Vec<ValidationIssue>,
        opts: DispatchOptions,
        origin: Origin,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Result<SendResult, SessionError> {
        self.dispatch_marked(msg, warnings, opts, origin, follow)
            .await
            .map(|(result, _)| result)
    }

    /// [`dispatch_checked`](Self::dispatch_checked), with the message's own commit as its
    /// log entry names it (when the caller waited for it).
    async fn dispatch_marked(
        &self,
        msg: A::Msg,
        warnings: Vec<ValidationIssue>,
        opts: DispatchOptions,
        origin: Origin,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Result<(SendResult, CommitMark), SessionError> {
        let timing = Timing {
            wait_for: opts.wait_for,
            quiet_ms: crate::clock::millis(opts.drain_quiet),
            cap_ms: crate::clock::millis(opts.timeout),
        };
        let drained = self.enqueue_and_drain(msg, origin, timing, follow).await?;
        if let Some(detail) = drained.refused {
            return Ok((
                rejected(RejectReason::Unavailable, Some(detail)),
                CommitMark::default(),
            ));
        }
        let mut report = drained.report;
        report.warnings = warnings;
        let state_diff = if opts.wait_for == WaitFor::None {
            Vec::new()
        } else {
            drained.after.diff_since(&drained.prev)
        };
        let actions = self.action_list()?;
        let result = SendResult::Dispatched {
            state_diff,
            actions,
            drain: report,
            state_after: opts.include_state.then(|| drained.after.state()),
            seq: Some(drained.after.seq),
        };
        Ok((result, drained.commit))
    }

    /// `would_dispatch` (`docs/semantics.md` §6): predicts a message on a clone of the state.
    pub fn would_dispatch(&self, msg: &Value) -> Result<WouldDispatchResult, SessionError> {
        let Some(variant) = variant_of(msg) else {
            return Ok(WouldDispatchResult::Rejected {
                reason: RejectReason::Invalid,
                detail: Some("msg.type must be a string".into()),
            });
        };
        if let Some(a) = self.core.catalog.annotations(variant) {
            if a.dispatch_mode == DispatchMode::HumanOnly {
                return Ok(WouldDispatchResult::Rejected {
                    reason: RejectReason::HumanOnly,
                    detail: Some(Self::human_only_detail(a.intent.as_deref())),
                });
            }
            if let Some(detail) = self.unavailable_detail(variant, a)? {
                return Ok(WouldDispatchResult::Rejected {
                    reason: RejectReason::Unavailable,
                    detail: Some(detail),
                });
            }
        }
        let typed = match self.check_message(msg, DispatchPolicy::Lenient) {
            Ok((typed, _)) => typed,
            Err((_, errors)) if !errors.is_empty() => {
                return Ok(WouldDispatchResult::SchemaMismatch { errors })
            }
            Err((detail, _)) => {
                return Ok(WouldDispatchResult::Rejected {
                    reason: RejectReason::Invalid,
                    detail: Some(detail),
                })
            }
        };
        let mut clone = self.with_state(Clone::clone);
        let app = &*self.core.app;
        let threw = |message| Ok(WouldDispatchResult::ReducerThrew { message });
        let plan = self.core.catalog.redact_plan();
        let before = match redact(app, plan, &clone) {
            Ok(v) => v,
            Err(message) => return threw(message),
        };
        match catch_unwind(AssertUnwindSafe(|| app.update(&mut clone, typed))) {
            Ok(effects) => match redact(app, plan, &clone) {
                Ok(after) => {
                    let (effects, effects_hidden) = self.shown_effects(&effects);
                    Ok(WouldDispatchResult::Predicted {
                        state_diff: diff(&before, &after),
                        effects,
                        effects_hidden,
                    })
                }
                Err(message) => threw(message),
            },
            Err(p) => Ok(WouldDispatchResult::ReducerThrew {
                message: format!("update panicked: {}", panic_text(&*p)),
            }),
        }
    }

    /// What a prediction shows of `effects` (`docs/semantics.md` §6): each without its
    /// `@redact` fields when the app shows its effects (one that does not serialize is
    /// `null`), and how many are hidden otherwise.
    fn shown_effects(&self, effects: &[A::Effect]) -> (Vec<Value>, usize) {
        match self.core.catalog.effect_plan() {
            Some(plan) => {
                let shown = effects
                    .iter()
                    .map(|e| serialize_redacted(plan, e).unwrap_or(Value::Null))
                    .collect();
                (shown, 0)
            }
            None => (Vec::new(), effects.len()),
        }
    }

    /// Pending confirmations in proposal order.
    pub fn pending(&self) -> Vec<ConfirmEntry> {
        self.core.sweep_confirms();
        self.core.confirms.lock().pending()
    }

    /// The confirmation entry `id` (any status).
    pub fn confirmation(&self, id: &str) -> Option<ConfirmEntry> {
        self.core.sweep_confirms();
        self.core.confirms.lock().get(id).cloned()
    }

    /// Waits (level-triggered) up to `timeout_ms` for the outcome of proposal `id`.
    /// `None` for an unknown id.
    pub async fn wait_confirm(&self, id: &str, timeout_ms: u64) -> Option<ConfirmResultResponse> {
        self.wait_outcome(id, None, timeout_ms).await
    }
}

impl<A: App> SessionCore<A> {
    /// Expires old proposals (logging, publishing and auditing each) and forgets old decisions.
    pub(crate) fn sweep_confirms(&self) {
        let now = self.now();
        // A durable session's expiries are decisions written to the store first
        // (`decisions::spawn_confirm_saver`).
        let expired = self.confirms.lock().sweep(now, self.persist.is_none());
        self.announce_expired(&expired);
    }

    /// Tells the session's event streams, log, audit and waiters that `expired` expired.
    pub(crate) fn announce_expired(&self, expired: &[ConfirmEntry]) {
        {
            let mut events = self.events.lock();
            for e in expired {
                events.publish(EventBody::Confirm(Box::new(e.clone())));
            }
        }
        for e in expired {
            self.log_decision(e, "expired");
            self.audit(
                AuditEvent::ConfirmRejected,
                e.tid.clone(),
                json!({"variant": e.variant, "confirmId": e.id, "by": "expiry"}),
            );
        }
        if !expired.is_empty() {
            self.confirm_changed.send_modify(|v| *v += 1);
        }
    }

    pub(crate) fn log_decision(&self, e: &ConfirmEntry, detail: &str) {
        let mut entry = activity::entry(LogKind::Rejected, self.now());
        entry.variant = Some(e.variant.clone());
        entry.intent = Some(e.intent.clone());
        entry.detail = Some(detail.to_string());
        entry.tid = e.tid.clone();
        entry.confirm_id = Some(e.id.clone());
        self.append_log(entry);
    }
}
