//! The server-side confirmation store of one session (`docs/semantics.md` §7).
//!
//! Agents propose; only the human decides. Outcomes are level-triggered: a waiter first looks
//! at the stored outcome, so an approval made before the wait is never lost.

use std::sync::Arc;

use agent_schema::protocol::{ConfirmEntry, ConfirmOutcome, ConfirmStatus};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::config::{json_len, OverBudget};

/// How long decided entries are kept after their decision.
pub(crate) const DECIDED_RETENTION_MS: u64 = 5 * 60 * 1000;

#[derive(Debug)]
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
    fn outcome(&self) -> ConfirmOutcome {
        ConfirmOutcome::Confirmed {
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

    /// Expires pending entries older than the maximum age and forgets entries decided more
    /// than five minutes ago. Returns the entries that just expired.
    pub(crate) fn sweep(&mut self, now: u64) -> Vec<ConfirmEntry> {
        let mut expired = Vec::new();
        for slot in &mut self.slots {
            if slot.entry.status == ConfirmStatus::Pending
                && now.saturating_sub(slot.entry.proposed_at) > self.max_age_ms
            {
                slot.entry.status = ConfirmStatus::Expired;
                slot.decided_at = Some(now);
                expired.push(slot.entry.clone());
            }
        }
        self.slots.retain(|s| {
            s.decided_at
                .is_none_or(|d| now.saturating_sub(d) < DECIDED_RETENTION_MS)
        });
        expired
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

    /// Takes another process's entries (`foreign`, written by [`Self::to_json`]) while
    /// keeping the entries proposed here since `stored` was written (not in `stored`, not
    /// in `foreign`): two replicas proposing at once both keep their proposal. Answers
    /// whether anything changed; a `foreign` text that does not parse changes nothing.
    pub(crate) fn merge_foreign(&mut self, foreign: &str, stored: &str) -> bool {
        let Ok(slots) = serde_json::from_str::<Vec<StoredSlot>>(foreign) else {
            return false;
        };
        let ids = |json: &str| -> std::collections::HashSet<String> {
            serde_json::from_str::<Vec<StoredSlot>>(json)
                .map(|v| v.into_iter().map(|s| s.entry.id).collect())
                .unwrap_or_default()
        };
        let known: std::collections::HashSet<String> = ids(stored)
            .into_iter()
            .chain(slots.iter().map(|s| s.entry.id.clone()))
            .collect();
        let before = self.to_json();
        let local: Vec<Slot> = std::mem::take(&mut self.slots)
            .into_iter()
            .filter(|s| !known.contains(&s.entry.id))
            .collect();
        self.slots = slots.into_iter().map(Slot::from).collect();
        self.slots.extend(local);
        self.to_json() != before
    }

    /// True when the store holds no entry, pending or decided.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Drops every entry (the session closed).
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
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
    pub(crate) fn approve(
        &mut self,
        id: &str,
        edited_payload: Option<Value>,
        now: u64,
    ) -> Result<ConfirmEntry, DecisionError> {
        self.check_pending(id)?;
        let slot = self.slot_mut(id).ok_or(DecisionError::NotFound)?;
        slot.entry.status = ConfirmStatus::Approved;
        slot.entry.edited_payload = edited_payload;
        slot.decided_at = Some(now);
        Ok(slot.entry.clone())
    }

    /// Marks a pending entry rejected.
    pub(crate) fn reject(&mut self, id: &str, now: u64) -> Result<ConfirmEntry, DecisionError> {
        self.check_pending(id)?;
        let slot = self.slot_mut(id).ok_or(DecisionError::NotFound)?;
        slot.entry.status = ConfirmStatus::Rejected;
        slot.decided_at = Some(now);
        Ok(slot.entry.clone())
    }

    /// Marks a pending entry proposed by `tid` withdrawn. Another token's entry is refused
    /// before its status is looked at.
    pub(crate) fn withdraw(
        &mut self,
        id: &str,
        tid: &str,
        now: u64,
    ) -> Result<ConfirmEntry, WithdrawError> {
        let slot = self.slot_mut(id).ok_or(WithdrawError::NotFound)?;
        if slot.entry.tid.as_deref() != Some(tid) {
            return Err(WithdrawError::NotYours);
        }
        if slot.entry.status != ConfirmStatus::Pending {
            return Err(WithdrawError::AlreadyDecided(slot.entry.status));
        }
        slot.entry.status = ConfirmStatus::Withdrawn;
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
    pub(crate) fn outcome(&self, id: &str) -> Option<ConfirmOutcome> {
        self.slots
            .iter()
            .find(|s| s.entry.id == id)
            .map(Slot::outcome)
    }

    /// The current outcome of `id` when token `tid` proposed it; `None` for an unknown id and
    /// for another proposer's alike, so a token cannot tell the two apart.
    pub(crate) fn own_outcome(&self, id: &str, tid: &str) -> Option<ConfirmOutcome> {
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
    fn outcome(&self) -> ConfirmOutcome {
        match self.entry.status {
            ConfirmStatus::Pending => ConfirmOutcome::Pending,
            ConfirmStatus::Approved => self
                .committed
                .as_ref()
                .map_or(ConfirmOutcome::Pending, CommittedSlot::outcome),
            ConfirmStatus::Rejected => ConfirmOutcome::UserCancelled,
            ConfirmStatus::Expired => ConfirmOutcome::Expired,
            ConfirmStatus::Withdrawn => ConfirmOutcome::Withdrawn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: Value) -> Arc<RawValue> {
        Arc::from(serde_json::value::to_raw_value(&v).unwrap())
    }

    fn entry(id: &str, at: u64) -> ConfirmEntry {
        ConfirmEntry {
            id: id.into(),
            variant: "deleteAccount".into(),
            payload: json!({"userId":"u1"}),
            intent: "delete account".into(),
            reason: None,
            proposed_at: at,
            status: ConfirmStatus::Pending,
            tid: None,
            edited_payload: None,
        }
    }

    #[test]
    fn proposals_stay_in_order_and_decisions_are_final() {
        let mut store = ConfirmStore::new(600_000);
        store.propose(entry("a", 0), 0).unwrap();
        store.propose(entry("b", 0), 0).unwrap();
        assert_eq!(store.pending().len(), 2);
        store.approve("a", None, 1).unwrap();
        assert_eq!(
            store.approve("a", None, 2),
            Err(DecisionError::AlreadyDecided(ConfirmStatus::Approved))
        );
        assert_eq!(
            store.reject("a", 2),
            Err(DecisionError::AlreadyDecided(ConfirmStatus::Approved))
        );
        store.reject("b", 3).unwrap();
        assert_eq!(
            store.approve("b", None, 4).unwrap_err().to_string(),
            "already rejected"
        );
        assert_eq!(store.reject("zz", 4), Err(DecisionError::NotFound));
        assert_eq!(store.outcome("b"), Some(ConfirmOutcome::UserCancelled));
        // Approved but not yet committed reads as pending.
        assert_eq!(store.outcome("a"), Some(ConfirmOutcome::Pending));
        store.mark_committed("a", text(json!({"n":1})), None, 1);
        assert!(matches!(
            store.outcome("a"),
            Some(ConfirmOutcome::Confirmed { .. })
        ));
    }

    #[test]
    fn only_the_proposing_token_withdraws_a_pending_entry() {
        let mut store = ConfirmStore::new(600_000);
        let mut mine = entry("a", 0);
        mine.tid = Some("t1".into());
        store.propose(mine.clone(), 0).unwrap();
        mine.id = "b".into();
        store.propose(mine, 0).unwrap();
        assert_eq!(store.pending_of("t1").len(), 2);
        assert!(store.pending_of("t2").is_empty());
        assert_eq!(store.withdraw("zz", "t1", 1), Err(WithdrawError::NotFound));
        assert_eq!(store.withdraw("a", "t2", 1), Err(WithdrawError::NotYours));
        let withdrawn = store.withdraw("a", "t1", 1).unwrap();
        assert_eq!(withdrawn.status, ConfirmStatus::Withdrawn);
        assert_eq!(store.outcome("a"), Some(ConfirmOutcome::Withdrawn));
        assert_eq!(
            store.withdraw("a", "t1", 2),
            Err(WithdrawError::AlreadyDecided(ConfirmStatus::Withdrawn))
        );
        assert_eq!(
            store.approve("a", None, 2),
            Err(DecisionError::AlreadyDecided(ConfirmStatus::Withdrawn))
        );
        store.reject("b", 3).unwrap();
        assert_eq!(
            store.withdraw("b", "t1", 4),
            Err(WithdrawError::AlreadyDecided(ConfirmStatus::Rejected))
        );
        assert!(store.pending().is_empty());
        // Stored and read back, the withdrawal stays.
        let mut copy = ConfirmStore::new(600_000);
        assert!(copy.restore_json(&store.to_json()));
        assert_eq!(copy.outcome("a"), Some(ConfirmOutcome::Withdrawn));
    }

    #[test]
    fn expiry_is_strictly_after_max_age() {
        let mut store = ConfirmStore::new(6000);
        store.propose(entry("a", 1000), 1000).unwrap();
        store.propose(entry("b", 1000), 1000).unwrap();
        store.approve("b", None, 1500).unwrap();
        assert!(store.sweep(7000).is_empty());
        assert_eq!(store.pending().len(), 1);
        let expired = store.sweep(7001);
        assert_eq!(expired.len(), 1);
        assert_eq!(store.outcome("a"), Some(ConfirmOutcome::Expired));
        assert_eq!(store.get("b").unwrap().status, ConfirmStatus::Approved);
    }

    #[test]
    fn decided_entries_are_forgotten_after_five_minutes() {
        let mut store = ConfirmStore::new(600_000);
        store.propose(entry("a", 0), 0).unwrap();
        store.reject("a", 10).unwrap();
        store.sweep(10 + DECIDED_RETENTION_MS - 1);
        assert!(store.get("a").is_some());
        store.sweep(10 + DECIDED_RETENTION_MS);
        assert!(store.get("a").is_none());
    }

    #[test]
    fn pending_entries_are_bounded_in_count_and_bytes() {
        let mut store = ConfirmStore::with_budgets(600_000, 3, 1_000_000);
        for i in 0..3 {
            store.propose(entry(&format!("e{i}"), 0), 0).unwrap();
        }
        let err = store.propose(entry("e3", 0), 100).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the number of pending confirmations is 4; the limit is 3"
        );
        assert_eq!(err.retry_after_ms, Some(600_000 + 1 - 100));
        // A decision frees a place.
        store.reject("e0", 200).unwrap();
        store.propose(entry("e3", 0), 200).unwrap();

        let mut store = ConfirmStore::with_budgets(600_000, 100, 1_000);
        let mut big = entry("big", 0);
        big.payload = serde_json::json!({"id": "x".repeat(900)});
        let err = store.propose(big, 0).unwrap_err();
        assert!(err.full);
        assert!(err.to_string().ends_with("; the limit is 1000"), "{err}");
        assert!(store.pending().is_empty());
    }

    #[test]
    fn a_foreign_copy_replaces_what_was_stored_and_keeps_unwritten_proposals() {
        // Both replicas stored [a]; here "b" was proposed and not yet written; the other
        // replica approved "a" and committed it.
        let mut here = ConfirmStore::new(600_000);
        here.propose(entry("a", 0), 0).unwrap();
        let stored = here.to_json();
        here.propose(entry("b", 0), 1).unwrap();
        let mut there = ConfirmStore::new(600_000);
        assert!(there.restore_json(&stored));
        there.approve("a", None, 2).unwrap();
        there.mark_committed("a", text(serde_json::json!({"n": 1})), None, 1);
        let foreign = there.to_json();

        assert!(here.merge_foreign(&foreign, &stored));
        assert!(matches!(
            here.outcome("a"),
            Some(ConfirmOutcome::Confirmed { .. })
        ));
        assert_eq!(here.outcome("b"), Some(ConfirmOutcome::Pending));
        // An entry the other replica forgot (it was in `stored`) goes.
        let none = ConfirmStore::new(600_000).to_json();
        assert!(here.merge_foreign(&none, &foreign));
        assert!(here.get("a").is_none());
        assert!(here.get("b").is_some());
        // Nothing new: nothing changes; unparsable text changes nothing.
        assert!(!here.merge_foreign(&here.to_json(), &here.to_json()));
        assert!(!here.merge_foreign("not json", &none));
    }
}
