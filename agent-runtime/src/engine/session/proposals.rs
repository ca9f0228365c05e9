//! An agent's own proposals: listing the undecided ones and withdrawing one before the human
//! decides (`docs/semantics.md` §7, `docs/lap.md` §5.8).

use agent_schema::protocol::{ConfirmEntry, PendingProposal};
use serde_json::{Map, Value};

use super::confirm::{Decision, WithdrawError};
use super::decisions::DecideError;
use super::events::EventBody;
use super::{lock, Session, SessionError};
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
        lock(&self.core.confirms)
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
        lock(&self.core.events).publish(EventBody::Confirm(withdrawn.clone()));
        self.core.log_decision(&withdrawn, "withdrawn");
        self.core.confirm_changed.send_modify(|v| *v += 1);
        Ok(withdrawn)
    }
}
