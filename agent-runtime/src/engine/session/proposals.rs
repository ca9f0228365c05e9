//! An agent's own proposals: listing the undecided ones, waiting on the outcome of one, and
//! withdrawing one before the human decides (`docs/semantics.md` §7, `docs/lap.md` §5.6, §5.8).

use std::time::Duration;

use serde_json::{Map, Value};
use tea_agent_schema::protocol::{ConfirmEntry, ConfirmResultResponse, PendingProposal};

use super::confirm::{Decision, WithdrawError};
use super::decisions::DecideError;
use super::events::EventBody;
use super::{Session, SessionError};
use crate::app::App;

/// Why [`Session::withdraw`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Withdrawal {
    /// The entry cannot be withdrawn (unknown, another token's, decided: the decision).
    Refused(WithdrawError),
    /// The session is closed.
    Closed(SessionError),
    /// The store failed to record the withdrawal: nothing was decided.
    NotStored(String),
}

impl From<DecideError> for Withdrawal {
    fn from(e: DecideError) -> Self {
        match e {
            DecideError::Refused(e) => Withdrawal::Refused(e),
            DecideError::Gone => Withdrawal::Closed(SessionError::Closed),
            DecideError::Store(e) => Withdrawal::NotStored(e),
        }
    }
}

/// The message of a proposal, `{"type": variant, ...payload}`.
fn message_of(entry: &ConfirmEntry) -> Value {
    let mut msg = Map::new();
    msg.insert("type".into(), Value::String(entry.variant.clone()));
    if let Value::Object(payload) = &entry.payload {
        for (k, v) in payload {
            msg.insert(k.clone(), v.clone());
        }
    }
    Value::Object(msg)
}

impl<A: App> Session<A> {
    /// The undecided proposals of token `tid`, oldest first (expired ones are swept first).
    pub(crate) fn pending_of(&self, tid: &str) -> Vec<PendingProposal> {
        self.core.sweep_confirms();
        self.core
            .confirms
            .lock()
            .pending_of(tid)
            .iter()
            .map(|e| PendingProposal {
                confirm_id: e.id.clone(),
                variant: e.variant.clone(),
                msg: message_of(e),
                reason: e.reason.clone(),
                proposed_at: e.proposed_at,
            })
            .collect()
    }

    /// Waits (level-triggered) up to `timeout_ms` for the outcome of proposal `id` of token
    /// `tid`. `None` for an unknown id and for another token's proposal alike (`/confirm-result`
    /// answers both as unknown, so ids cannot be probed).
    pub(crate) async fn wait_own_confirm(
        &self,
        id: &str,
        tid: &str,
        timeout_ms: u64,
    ) -> Option<ConfirmResultResponse> {
        self.wait_outcome(id, Some(tid), timeout_ms).await
    }

    /// Waits up to `timeout_ms` for the outcome of proposal `id`, whoever proposed it (`None`)
    /// or only when token `tid` did (`Some`). `None` when there is no such proposal.
    pub(super) async fn wait_outcome(
        &self,
        id: &str,
        proposer: Option<&str>,
        timeout_ms: u64,
    ) -> Option<ConfirmResultResponse> {
        let mut changed = self.core.confirm_changed.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
        loop {
            changed.borrow_and_update();
            self.core.sweep_confirms();
            let outcome = {
                let confirms = self.core.confirms.lock();
                match proposer {
                    None => confirms.outcome(id),
                    Some(tid) => confirms.own_outcome(id, tid),
                }
            }?;
            let now = tokio::time::Instant::now();
            if outcome != ConfirmResultResponse::StillPending || self.is_closed() || now >= deadline
            {
                return Some(outcome);
            }
            // Expiry is checked on reads: look again at least once a second.
            let until = deadline.min(now + Duration::from_secs(1));
            let _ = tokio::time::timeout_at(until, changed.changed()).await;
        }
    }

    /// Withdraws proposal `id` for the token `tid` that proposed it: the entry becomes
    /// `withdrawn` (a `confirm` event takes the card off the human's screen, a `rejected` log
    /// entry with detail `withdrawn` is written, waiters answer `withdrawn`). Answers the
    /// entry as it was withdrawn. With a store, the withdrawal is stored first (a
    /// compare-and-set): when the human's decision was stored first, through another
    /// replica, it is refused with that decision.
    pub(crate) async fn withdraw(&self, id: &str, tid: &str) -> Result<ConfirmEntry, Withdrawal> {
        if self.is_closed() {
            return Err(Withdrawal::Closed(SessionError::Closed));
        }
        self.core.sweep_confirms();
        let withdraw = Decision::Withdraw { tid: tid.into() };
        let withdrawn = self.core.decide(id, &withdraw).await?;
        self.core
            .events
            .lock()
            .publish(EventBody::Confirm(Box::new(withdrawn.clone())));
        self.core.log_decision(&withdrawn, "withdrawn");
        self.core.confirm_changed.send_modify(|v| *v += 1);
        Ok(withdrawn)
    }
}
