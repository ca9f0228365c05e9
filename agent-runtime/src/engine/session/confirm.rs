//! The server-side confirmation store of one session (`docs/semantics.md` §7).
//!
//! Agents propose; only the human decides. Outcomes are level-triggered: a waiter first looks
//! at the stored outcome, so an approval made before the wait is never lost.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;
use tea_agent_schema::protocol::{
    ConfirmEntry, ConfirmResultResponse, ConfirmStatus, RejectReason,
};

use crate::config::{json_len, OverBudget};

/// How long decided entries are kept after their decision.
pub(crate) const DECIDED_RETENTION_MS: u64 = 5 * 60 * 1000;

#[derive(Debug, Clone)]
struct Slot {
    entry: ConfirmEntry,
    decided_at: Option<u64>,
    /// Set once an approved message has committed.
    committed: Option<CommittedSlot>,
}

/// What an approved message's commit left for its waiters. The state is kept as the
/// snapshot's JSON text (its size, not eight times it as a `Value`), parsed for each reader.
#[derive(Debug, Clone)]
struct CommittedSlot {
    state_after: Arc<RawValue>,
    msg: Option<Value>,
    seq: Option<u64>,
}

impl CommittedSlot {
    fn outcome(&self) -> ConfirmResultResponse {
        ConfirmResultResponse::Confirmed {
            state_after: serde_json::from_str(self.state_after.get()).unwrap_or(Value::Null),
            msg: self.msg.clone(),
            seq: self.seq,
        }
    }
}

/// A slot as a durable store keeps it (JSON).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredSlot {
    entry: ConfirmEntry,
    decided_at: Option<u64>,
    /// `(stateAfter, msg)` once an approved message committed.
    committed: Option<(Arc<RawValue>, Option<Value>)>,
    /// The seq of that commit (absent from entries stored before versions existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    committed_seq: Option<u64>,
}

impl From<StoredSlot> for Slot {
    fn from(s: StoredSlot) -> Self {
        Slot {
            entry: s.entry,
            decided_at: s.decided_at,
            committed: s.committed.map(|(state_after, msg)| CommittedSlot {
                state_after,
                msg,
                seq: s.committed_seq,
            }),
        }
    }
}

/// Why a decision was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionError {
    /// No entry with that id.
    NotFound,
    /// The entry was decided already (its status).
    AlreadyDecided(ConfirmStatus),
}

/// Why a withdrawal was refused (`docs/lap.md` §5.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WithdrawError {
    /// No entry with that id.
    NotFound,
    /// Another token proposed it.
    NotYours,
    /// The entry was decided already (its status).
    AlreadyDecided(ConfirmStatus),
}

/// A decision on a pending proposal: the human's, its agent's, or its age's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// The human approved it, with an edited payload or not.
    Approve { edited_payload: Option<Value> },
    /// The human rejected it.
    Reject,
    /// The token that proposed it took it back.
    Withdraw { tid: String },
    /// It waited longer than the maximum age.
    Expire,
}

impl From<WithdrawError> for DecisionError {
    fn from(e: WithdrawError) -> Self {
        match e {
            WithdrawError::NotFound | WithdrawError::NotYours => DecisionError::NotFound,
            WithdrawError::AlreadyDecided(s) => DecisionError::AlreadyDecided(s),
        }
    }
}

impl std::fmt::Display for DecisionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecisionError::NotFound => write!(f, "not found"),
            DecisionError::AlreadyDecided(s) => write!(f, "already {}", s.as_str()),
        }
    }
}

/// The store: entries in proposal order.
#[derive(Debug)]
pub(crate) struct ConfirmStore {
    slots: Vec<Slot>,
    max_age_ms: u64,
    max_pending: usize,
    pending_bytes: usize,
}

impl ConfirmStore {
    /// An empty store whose pending entries expire after `max_age_ms`, with the default
    /// budgets.
    #[cfg(test)]
    pub(crate) fn new(max_age_ms: u64) -> Self {
        let b = crate::config::Budgets::default();
        Self::with_budgets(max_age_ms, b.max_pending_confirms, b.pending_confirm_bytes)
    }

    /// An empty store holding at most `max_pending` pending entries of `pending_bytes` in all.
    pub(crate) fn with_budgets(max_age_ms: u64, max_pending: usize, pending_bytes: usize) -> Self {
        ConfirmStore {
            slots: Vec::new(),
            max_age_ms,
            max_pending,
            pending_bytes,
        }
    }

    /// Appends a pending entry at `now`, unless the pending entries are at their count or
    /// bytes budget (429, retry once the oldest expires).
    pub(crate) fn propose(&mut self, entry: ConfirmEntry, now: u64) -> Result<(), OverBudget> {
        let pending = || {
            self.slots
                .iter()
                .filter(|s| s.entry.status == ConfirmStatus::Pending)
        };
        let retry = pending()
            .map(|s| s.entry.proposed_at)
            .min()
            .map(|oldest| (oldest + self.max_age_ms + 1).saturating_sub(now));
        let count = pending().count();
        if count >= self.max_pending {
            return Err(OverBudget::full_count(
                "the number of pending confirmations",
                count + 1,
                self.max_pending,
                retry,
            ));
        }
        let bytes = pending().map(|s| json_len(&s.entry)).sum::<usize>() + json_len(&entry);
        if bytes > self.pending_bytes {
            return Err(OverBudget::full(
                "pending confirmations",
                bytes,
                self.pending_bytes,
                retry,
            ));
        }
        self.slots.push(Slot {
            entry,
            decided_at: None,
            committed: None,
        });
        Ok(())
    }

    /// Forgets entries decided more than five minutes ago and, with `expire`, expires
    /// pending entries older than the maximum age. Returns the entries that just expired. A
    /// durable session does not expire here: its expiries are decisions written to the
    /// store first (`decisions::spawn_confirm_saver`).
    pub(crate) fn sweep(&mut self, now: u64, expire: bool) -> Vec<ConfirmEntry> {
        let mut expired = Vec::new();
        if expire {
            for id in self.due(now) {
                if let Ok(entry) = self.decide(&id, &Decision::Expire, now) {
                    expired.push(entry);
                }
            }
        }
        self.slots.retain(|s| !forgotten(s, now));
        expired
    }

    /// The ids of the pending entries older than the maximum age at `now`.
    pub(crate) fn due(&self, now: u64) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.entry.status == ConfirmStatus::Pending && self.past_due(s, now))
            .map(|s| s.entry.id.clone())
            .collect()
    }

    /// When the oldest pending entry becomes due (ms since the epoch).
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| s.entry.status == ConfirmStatus::Pending)
            .map(|s| s.entry.proposed_at.saturating_add(self.max_age_ms + 1))
            .min()
    }

    fn past_due(&self, slot: &Slot, now: u64) -> bool {
        now.saturating_sub(slot.entry.proposed_at) > self.max_age_ms
    }

    /// The entries as JSON text, for a durable store.
    pub(crate) fn to_json(&self) -> String {
        let slots: Vec<StoredSlot> = self
            .slots
            .iter()
            .map(|s| {
                let (committed, committed_seq) = match &s.committed {
                    Some(c) => (Some((c.state_after.clone(), c.msg.clone())), c.seq),
                    None => (None, None),
                };
                StoredSlot {
                    entry: s.entry.clone(),
                    decided_at: s.decided_at,
                    committed,
                    committed_seq,
                }
            })
            .collect();
        serde_json::to_string(&slots).unwrap_or_else(|_| "[]".into())
    }

    /// Replaces the entries with those of `json` (written by [`Self::to_json`]); answers
    /// whether it parsed.
    pub(crate) fn restore_json(&mut self, json: &str) -> bool {
        let Ok(slots) = serde_json::from_str::<Vec<StoredSlot>>(json) else {
            return false;
        };
        self.slots = slots.into_iter().map(Slot::from).collect();
        true
    }

    /// Takes another process's entries (`foreign`, written by [`Self::to_json`], what the
    /// store holds now) while keeping the entries proposed here since `stored` (what this
    /// process knew the store held) was written: two replicas proposing at once both keep
    /// their proposal. A decision wins over pending, whichever side holds it, and of two
    /// different decisions the stored one wins: a merge never turns a decided entry back to
    /// pending nor replaces a stored decision. Answers whether anything changed; a `foreign`
    /// text that does not parse changes nothing.
    pub(crate) fn merge_foreign(&mut self, foreign: &str, stored: &str, now: u64) -> bool {
        let Ok(slots) = serde_json::from_str::<Vec<StoredSlot>>(foreign) else {
            return false;
        };
        let known: std::collections::HashSet<String> =
            serde_json::from_str::<Vec<StoredSlot>>(stored)
                .map(|v| v.into_iter().map(|s| s.entry.id).collect())
                .unwrap_or_default();
        let before = self.to_json();
        let local = std::mem::take(&mut self.slots);
        self.slots = merged(slots.into_iter().map(Slot::from), local, &known, now);
        self.to_json() != before
    }

    /// What the store should hold next when it holds `stored` (JSON text, as this process
    /// last read or wrote it): its entries merged with these as [`Self::merge_foreign`]
    /// does, the entries proposed here and not yet written added. Text that does not parse
    /// counts as no entry.
    pub(crate) fn merged_with(&self, stored: &str, now: u64) -> ConfirmStore {
        let slots = serde_json::from_str::<Vec<StoredSlot>>(stored).unwrap_or_default();
        let known = slots.iter().map(|s| s.entry.id.clone()).collect();
        ConfirmStore {
            slots: merged(
                slots.into_iter().map(Slot::from),
                self.slots.clone(),
                &known,
                now,
            ),
            max_age_ms: self.max_age_ms,
            max_pending: self.max_pending,
            pending_bytes: self.pending_bytes,
        }
    }

    /// True when the store holds no entry, pending or decided.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Drops every entry (the session closed).
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
    }

    /// What the entries, pending and decided, take on the heap (an estimate of their
    /// allocations: strings, payload trees, an approved entry's state text), charged to the
    /// host's budget of what sessions retain and never shed for it (`docs/stores.md` §Memory).
    pub(crate) fn heap_cost(&self) -> usize {
        use super::retained::{block, value_cost, with_slack};
        let text = |s: &str| block(s.len());
        let slots = block(self.slots.capacity() * std::mem::size_of::<Slot>());
        with_slack(
            slots
                + self
                    .slots
                    .iter()
                    .map(|s| {
                        let e = &s.entry;
                        text(&e.id)
                            + text(&e.variant)
                            + text(&e.intent)
                            + e.reason.as_deref().map_or(0, text)
                            + e.tid.as_deref().map_or(0, text)
                            + value_cost(&e.payload)
                            + e.edited_payload.as_ref().map_or(0, value_cost)
                            + s.committed.as_ref().map_or(0, |c| {
                                block(c.state_after.get().len() + 16)
                                    + c.msg.as_ref().map_or(0, value_cost)
                            })
                    })
                    .sum::<usize>(),
        )
    }

    /// How many entries are pending.
    pub(crate) fn pending_count(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.entry.status == ConfirmStatus::Pending)
            .count()
    }

    /// Pending entries in proposal order.
    pub(crate) fn pending(&self) -> Vec<ConfirmEntry> {
        self.slots
            .iter()
            .filter(|s| s.entry.status == ConfirmStatus::Pending)
            .map(|s| s.entry.clone())
            .collect()
    }

    /// The entry with this id.
    pub(crate) fn get(&self, id: &str) -> Option<&ConfirmEntry> {
        self.slots
            .iter()
            .find(|s| s.entry.id == id)
            .map(|s| &s.entry)
    }

    /// Checks that `id` can be decided (exists and is pending).
    pub(crate) fn check_pending(&self, id: &str) -> Result<&ConfirmEntry, DecisionError> {
        let entry = self.get(id).ok_or(DecisionError::NotFound)?;
        if entry.status != ConfirmStatus::Pending {
            return Err(DecisionError::AlreadyDecided(entry.status));
        }
        Ok(entry)
    }

    /// Marks a pending entry approved (with the edited payload, if any).
    #[cfg(test)]
    pub(crate) fn approve(
        &mut self,
        id: &str,
        edited_payload: Option<Value>,
        now: u64,
    ) -> Result<ConfirmEntry, DecisionError> {
        self.decide(id, &Decision::Approve { edited_payload }, now)
            .map_err(DecisionError::from)
    }

    /// Marks a pending entry rejected.
    #[cfg(test)]
    pub(crate) fn reject(&mut self, id: &str, now: u64) -> Result<ConfirmEntry, DecisionError> {
        self.decide(id, &Decision::Reject, now)
            .map_err(DecisionError::from)
    }

    /// Marks a pending entry proposed by `tid` withdrawn. Another token's entry is refused
    /// before its status is looked at.
    #[cfg(test)]
    pub(crate) fn withdraw(
        &mut self,
        id: &str,
        tid: &str,
        now: u64,
    ) -> Result<ConfirmEntry, WithdrawError> {
        let withdraw = Decision::Withdraw { tid: tid.into() };
        self.decide(id, &withdraw, now)
    }

    /// Applies `decision` to pending entry `id` at `now`; answers the entry as decided. A
    /// withdrawal of another token's entry is refused before its status is looked at; a
    /// human's decision on an entry past its maximum age is refused as expired (its expiry
    /// is due).
    pub(crate) fn decide(
        &mut self,
        id: &str,
        decision: &Decision,
        now: u64,
    ) -> Result<ConfirmEntry, WithdrawError> {
        let max_age_ms = self.max_age_ms;
        let slot = self.slot_mut(id).ok_or(WithdrawError::NotFound)?;
        if let Decision::Withdraw { tid } = decision {
            if slot.entry.tid.as_deref() != Some(tid.as_str()) {
                return Err(WithdrawError::NotYours);
            }
        }
        if slot.entry.status != ConfirmStatus::Pending {
            return Err(WithdrawError::AlreadyDecided(slot.entry.status));
        }
        let due = now.saturating_sub(slot.entry.proposed_at) > max_age_ms;
        slot.entry.status = match decision {
            Decision::Expire => ConfirmStatus::Expired,
            _ if due => return Err(WithdrawError::AlreadyDecided(ConfirmStatus::Expired)),
            Decision::Approve { edited_payload } => {
                slot.entry.edited_payload = edited_payload.clone();
                ConfirmStatus::Approved
            }
            Decision::Reject => ConfirmStatus::Rejected,
            Decision::Withdraw { .. } => ConfirmStatus::Withdrawn,
        };
        slot.decided_at = Some(now);
        Ok(slot.entry.clone())
    }

    /// The pending entries proposed by `tid`, in proposal order.
    pub(crate) fn pending_of(&self, tid: &str) -> Vec<ConfirmEntry> {
        self.slots
            .iter()
            .filter(|s| {
                s.entry.status == ConfirmStatus::Pending && s.entry.tid.as_deref() == Some(tid)
            })
            .map(|s| s.entry.clone())
            .collect()
    }

    /// Records that an approved entry's message committed as version `seq`, leaving the
    /// state `state_after` (JSON text).
    pub(crate) fn mark_committed(
        &mut self,
        id: &str,
        state_after: Arc<RawValue>,
        msg: Option<Value>,
        seq: u64,
    ) {
        if let Some(slot) = self.slot_mut(id) {
            slot.committed = Some(CommittedSlot {
                state_after,
                msg,
                seq: Some(seq),
            });
        }
    }

    /// The current outcome of `id`, or `None` for an unknown id.
    pub(crate) fn outcome(&self, id: &str) -> Option<ConfirmResultResponse> {
        self.slots
            .iter()
            .find(|s| s.entry.id == id)
            .map(Slot::outcome)
    }

    /// The current outcome of `id` when token `tid` proposed it; `None` for an unknown id and
    /// for another proposer's alike, so a token cannot tell the two apart.
    pub(crate) fn own_outcome(&self, id: &str, tid: &str) -> Option<ConfirmResultResponse> {
        self.slots
            .iter()
            .find(|s| s.entry.id == id && s.entry.tid.as_deref() == Some(tid))
            .map(Slot::outcome)
    }

    fn slot_mut(&mut self, id: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.entry.id == id)
    }
}

impl Slot {
    /// The entry's outcome. An approved entry whose message has not committed yet still reads
    /// as pending.
    fn outcome(&self) -> ConfirmResultResponse {
        match self.entry.status {
            ConfirmStatus::Pending => ConfirmResultResponse::StillPending,
            ConfirmStatus::Approved => self
                .committed
                .as_ref()
                .map_or(ConfirmResultResponse::StillPending, CommittedSlot::outcome),
            ConfirmStatus::Rejected => ConfirmResultResponse::Rejected {
                reason: RejectReason::UserCancelled,
            },
            ConfirmStatus::Expired => ConfirmResultResponse::Rejected {
                reason: RejectReason::Timeout,
            },
            ConfirmStatus::Withdrawn => ConfirmResultResponse::Withdrawn,
        }
    }
}

/// Whether a decided entry's retention is over at `now`.
fn forgotten(slot: &Slot, now: u64) -> bool {
    slot.decided_at
        .is_some_and(|d| now.saturating_sub(d) >= DECIDED_RETENTION_MS)
}

/// The entries of `stored` (in its order) merged with those held here (`local`), then the
/// local entries the store never had (not in `known`: proposed here, not yet written); a
/// local entry the store had and no longer has was forgotten there, and goes. Per entry: a
/// decision wins over pending, the stored decision over a different local one, and an
/// approval keeps its commit from whichever side recorded it. Entries past their retention
/// go.
fn merged(
    stored: impl Iterator<Item = Slot>,
    mut local: Vec<Slot>,
    known: &std::collections::HashSet<String>,
    now: u64,
) -> Vec<Slot> {
    let mut out: Vec<Slot> = Vec::new();
    for mut slot in stored {
        if let Some(at) = local.iter().position(|l| l.entry.id == slot.entry.id) {
            let mine = local.remove(at);
            if slot.entry.status == ConfirmStatus::Pending
                && mine.entry.status != ConfirmStatus::Pending
            {
                slot = mine;
            } else if slot.committed.is_none() && mine.entry.status == slot.entry.status {
                slot.committed = mine.committed;
            }
        }
        out.push(slot);
    }
    out.extend(local.into_iter().filter(|l| !known.contains(&l.entry.id)));
    out.retain(|s| !forgotten(s, now));
    out
}
