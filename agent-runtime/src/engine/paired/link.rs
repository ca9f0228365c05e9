//! What the hub keeps per paired token (`docs/pairing.md` §Bounds): the current socket, the
//! cached `hello`, rpc waiters, confirmation outcomes, armed watches and the log ring, each
//! bounded in bytes. Relayed JSON is kept as the text the app sent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::value::RawValue;
use tokio::sync::{oneshot, watch};

use super::frames::{null, ConfirmDecision, Hello, Raw, ServerFrame};
use super::outbound::{Outbound, Refused};
use crate::engine::session::progress::DispatchWatch;

/// Entries kept per tid for `/recent-actions`.
pub(crate) const LOG_RING: usize = 100;

/// Confirmations the server waits on per tid (older ones are forgotten first).
pub(crate) const MAX_KNOWN_CONFIRMS: usize = 64;

/// The bounds of what the hub keeps per paired token (built from `PairingOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// How long outcomes are kept, and links after their socket closed.
    pub outcome_ms: u64,
    /// How long the log ring outlives a closed socket.
    pub grace_ms: u64,
    /// The largest log entry kept, in bytes of JSON.
    pub entry_bytes: usize,
    /// Bytes of the log ring in all.
    pub log_bytes: usize,
    /// Bytes of one outcome's `stateAfter`.
    pub outcome_bytes: usize,
    /// Bytes of all outcomes' `stateAfter` of a token.
    pub outcomes_bytes: usize,
    /// Bytes of all filled watches of a token.
    pub watch_bytes: usize,
    /// Bytes queued per socket.
    pub outbound_bytes: usize,
}

/// Why an rpc failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RpcFail {
    /// No socket, or it was lost mid-call.
    Paused,
    /// The socket's outbound queue is full: the app is not reading.
    NotReading,
    /// No answer before the deadline.
    Timeout,
    /// The app runtime answered `rpc-error`.
    Error {
        /// Its code.
        code: String,
        /// Its detail.
        detail: Option<String>,
    },
}

impl From<Refused> for RpcFail {
    fn from(r: Refused) -> Self {
        match r {
            Refused::Closed => RpcFail::Paused,
            Refused::Full => RpcFail::NotReading,
        }
    }
}

/// A decided confirmation.
#[derive(Debug, Clone)]
pub(crate) struct Resolution {
    pub decision: ConfirmDecision,
    /// `None` on cancel, or when the state was over the outcome budget.
    pub state_after: Option<Raw>,
    pub at: u64,
    /// Withdrawn by the agent (`/withdraw`, `docs/lap.md` §5.8); `decision` is then
    /// `user-cancelled`.
    pub withdrawn: bool,
}

/// A proposal the server relayed (`/pending`, `docs/lap.md` §5.8): what the agent sent.
#[derive(Debug, Clone)]
pub(crate) struct Proposal {
    pub variant: String,
    /// The proposed message, or `{"type": variant}` when it was over `confirm_bytes`.
    pub msg: serde_json::Value,
    pub reason: Option<String>,
    pub proposed_at: u64,
}

/// Why a paired withdrawal was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WithdrawRefusal {
    /// Not a proposal the server relayed for this token.
    Unknown,
    /// Decided already: `confirmed`, `rejected` or `withdrawn`.
    Decided(&'static str),
}

impl Resolution {
    fn bytes(&self) -> usize {
        self.state_after.as_ref().map_or(0, |r| r.get().len())
    }
}

/// A log entry of the ring: its `kind` (for filtering) and its text.
pub(crate) struct Entry {
    pub kind: Option<String>,
    pub raw: Raw,
}

pub(crate) type Waiter = oneshot::Sender<Result<Raw, RpcFail>>;

/// The per-tid record of the hub.
pub(crate) struct Link {
    pub conn: Option<(u64, Outbound)>,
    pub hello: Option<Arc<Hello>>,
    pub rpcs: HashMap<String, Waiter>,
    /// The rpcs in flight whose caller follows the progress of the work they started.
    pub follows: HashMap<String, Arc<DispatchWatch>>,
    pub known_confirms: VecDeque<String>,
    /// What the agent proposed, for the known confirmations the relay saw proposed.
    proposals: HashMap<String, Proposal>,
    outcomes: HashMap<String, Resolution>,
    outcome_total: usize,
    /// Armed watches: their path and, once filled, the state (`None` while armed).
    pub watches: HashMap<String, (Option<String>, Option<Raw>)>,
    watch_total: usize,
    log: VecDeque<Entry>,
    log_total: usize,
    /// Bumped on every outcome and state update.
    pub changed: watch::Sender<u64>,
    pub closed_at: Option<u64>,
    /// Counts the paired session in `agent_sessions{kind="paired"}` while the hub keeps it.
    _live: crate::telemetry::Live,
}

impl Link {
    pub(crate) fn new() -> Self {
        Link {
            conn: None,
            hello: None,
            rpcs: HashMap::new(),
            follows: HashMap::new(),
            known_confirms: VecDeque::new(),
            proposals: HashMap::new(),
            outcomes: HashMap::new(),
            outcome_total: 0,
            watches: HashMap::new(),
            watch_total: 0,
            log: VecDeque::new(),
            log_total: 0,
            changed: watch::channel(0).0,
            closed_at: None,
            _live: crate::telemetry::Live::paired_session(),
        }
    }

    /// Whether socket `conn` is the current one.
    pub(crate) fn is_current(&self, conn: u64) -> bool {
        self.conn.as_ref().map(|(id, _)| *id) == Some(conn)
    }

    /// Queues `frame` for the current socket.
    pub(crate) fn send(&self, frame: &ServerFrame) -> Result<(), Refused> {
        match &self.conn {
            Some((_, out)) => out.push(frame),
            None => Err(Refused::Closed),
        }
    }

    pub(crate) fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The socket is gone: rpcs in flight fail with `paused` (their waiters are dropped) and
    /// watches are disarmed (their `/wait` answers `paused`).
    pub(crate) fn disconnect(&mut self, now: u64) {
        self.conn = None;
        self.closed_at = Some(now);
        self.rpcs.clear();
        self.watches.clear();
        self.watch_total = 0;
        self.bump();
    }

    /// Notes that the server waits on confirmation `id`.
    pub(crate) fn expect_confirm(&mut self, id: &str) {
        if self.known_confirms.iter().any(|k| k == id) {
            return;
        }
        if self.known_confirms.len() >= MAX_KNOWN_CONFIRMS {
            if let Some(old) = self.known_confirms.pop_front() {
                self.remove_outcome(&old);
                self.proposals.remove(&old);
            }
        }
        self.known_confirms.push_back(id.to_string());
    }

    /// Notes a proposal the relay saw answered `pending-confirmation`, with what was proposed.
    pub(crate) fn expect_proposal(&mut self, id: &str, proposal: Proposal) {
        self.expect_confirm(id);
        self.proposals.insert(id.to_string(), proposal);
    }

    /// The undecided proposals, oldest first.
    pub(crate) fn pending(&self) -> Vec<(String, Proposal)> {
        self.known_confirms
            .iter()
            .filter(|id| !self.outcomes.contains_key(*id))
            .filter_map(|id| Some((id.clone(), self.proposals.get(id)?.clone())))
            .collect()
    }

    /// Withdraws undecided proposal `id` (the caller pushes `confirm-expire`).
    pub(crate) fn withdraw(&mut self, id: &str, now: u64) -> Result<(), WithdrawRefusal> {
        if !self.proposals.contains_key(id) {
            return Err(WithdrawRefusal::Unknown);
        }
        if let Some(r) = self.outcomes.get(id) {
            return Err(WithdrawRefusal::Decided(match (r.withdrawn, r.decision) {
                (true, _) => "withdrawn",
                (false, ConfirmDecision::Confirmed) => "confirmed",
                (false, ConfirmDecision::UserCancelled) => "rejected",
            }));
        }
        self.outcomes.insert(
            id.to_string(),
            Resolution {
                decision: ConfirmDecision::UserCancelled,
                state_after: None,
                at: now,
                withdrawn: true,
            },
        );
        self.bump();
        Ok(())
    }

    pub(crate) fn outcome(&self, id: &str) -> Option<&Resolution> {
        self.outcomes.get(id)
    }

    fn remove_outcome(&mut self, id: &str) {
        if let Some(r) = self.outcomes.remove(id) {
            self.outcome_total -= r.bytes();
        }
    }

    /// Keeps the outcome of a known confirmation within the budgets: a `stateAfter` over
    /// `outcome_bytes` is not kept; the oldest outcomes go first to stay within
    /// `outcomes_bytes`.
    pub(crate) fn resolve(&mut self, id: String, mut r: Resolution, limits: &Limits) {
        if !self.known_confirms.contains(&id) {
            return;
        }
        // A withdrawn proposal stays withdrawn when the app voids it (`confirm-expire`); an
        // approval the app made before it read that frame stands.
        if self.outcomes.get(&id).is_some_and(|o| o.withdrawn)
            && r.decision != ConfirmDecision::Confirmed
        {
            return;
        }
        if r.bytes() > limits.outcome_bytes {
            // Debug only: the app chooses how often this happens.
            tracing::debug!(
                bytes = r.bytes(),
                limit = limits.outcome_bytes,
                "pairing: an outcome's stateAfter over its budget is not kept"
            );
            r.state_after = None;
        }
        self.remove_outcome(&id);
        while self.outcome_total + r.bytes() > limits.outcomes_bytes {
            let Some(oldest) = self
                .outcomes
                .iter()
                .min_by_key(|(_, o)| o.at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.remove_outcome(&oldest);
        }
        self.outcome_total += r.bytes();
        self.outcomes.insert(id, r);
        self.bump();
    }

    /// Drops outcomes decided before `before`.
    pub(crate) fn expire_outcomes(&mut self, before: u64) {
        let old: Vec<String> = self
            .outcomes
            .iter()
            .filter(|(_, r)| r.at < before)
            .map(|(k, _)| k.clone())
            .collect();
        for k in old {
            self.remove_outcome(&k);
            self.proposals.remove(&k);
        }
        // A proposal the app never resolved is listed for as long as an outcome is kept.
        self.proposals.retain(|_, p| p.proposed_at >= before);
    }

    /// Fills the armed watch `id` (an update of another id is ignored). A state that does not
    /// fit `watch_bytes` fills it with `null`.
    pub(crate) fn fill_watch(&mut self, id: &str, state: Raw, limits: &Limits) {
        let total = self.watch_total;
        let Some((_, slot @ None)) = self.watches.get_mut(id) else {
            return;
        };
        let state = if total + state.get().len() > limits.watch_bytes {
            tracing::debug!(
                bytes = state.get().len(),
                limit = limits.watch_bytes,
                "pairing: a state-update over the watch budget is answered as null"
            );
            null()
        } else {
            state
        };
        self.watch_total += state.get().len();
        *slot = Some(state);
        self.bump();
    }

    /// Takes the state of watch `id`: `Err` when the watch is gone (the socket closed),
    /// `Ok(None)` while it is armed.
    pub(crate) fn take_watch(&mut self, id: &str) -> Result<Option<Raw>, ()> {
        let (_, slot) = self.watches.get_mut(id).ok_or(())?;
        let taken = slot.take();
        if let Some(s) = &taken {
            self.watch_total -= s.get().len();
            self.watches.remove(id);
        }
        Ok(taken)
    }

    /// Removes watch `id`.
    pub(crate) fn drop_watch(&mut self, id: &str) {
        if let Some((_, filled)) = self.watches.remove(id) {
            self.watch_total -= filled.map_or(0, |s| s.get().len());
        }
    }

    /// Appends a log entry within the entry budget (without its `stateDiff` when that makes it
    /// fit, else not at all); the oldest entries go to stay within `LOG_RING` and `log_bytes`.
    pub(crate) fn append_log(&mut self, entry: Raw, limits: &Limits) {
        let Some(entry) = bound_entry(entry, limits.entry_bytes) else {
            return;
        };
        let n = entry.raw.get().len();
        while !self.log.is_empty()
            && (self.log.len() >= LOG_RING || self.log_total + n > limits.log_bytes)
        {
            if let Some(old) = self.log.pop_front() {
                self.log_total -= old.raw.get().len();
            }
        }
        if n <= limits.log_bytes {
            self.log_total += n;
            self.log.push_back(entry);
        }
    }

    /// The ring, newest first, at most `n`, of the given kinds.
    pub(crate) fn recent(&self, n: usize, kinds: Option<&[&str]>) -> Vec<Raw> {
        self.log
            .iter()
            .rev()
            .filter(|e| match kinds {
                None => true,
                Some(ks) => e.kind.as_deref().is_some_and(|k| ks.contains(&k)),
            })
            .take(n)
            .map(|e| e.raw.clone())
            .collect()
    }
}

/// An entry within `limit` bytes: as it is, without its `stateDiff`, or not at all (not an
/// object: not at all). Only the top-level keys are read; their values stay text.
fn bound_entry(entry: Raw, limit: usize) -> Option<Entry> {
    let keys: indexmap::IndexMap<String, &RawValue> = serde_json::from_str(entry.get()).ok()?;
    let kind = keys
        .get("kind")
        .and_then(|k| serde_json::from_str::<String>(k.get()).ok());
    if entry.get().len() <= limit {
        return Some(Entry { kind, raw: entry });
    }
    let without: indexmap::IndexMap<&str, &RawValue> = keys
        .iter()
        .filter(|(k, _)| k.as_str() != "stateDiff")
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    let text = serde_json::to_string(&without).ok()?;
    if text.len() > limit {
        return None;
    }
    let raw = RawValue::from_string(text).ok()?;
    Some(Entry { kind, raw })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Raw {
        RawValue::from_string(s.to_string()).unwrap()
    }

    fn limits() -> Limits {
        Limits {
            outcome_ms: 1000,
            grace_ms: 1000,
            entry_bytes: 64,
            log_bytes: 200,
            outcome_bytes: 50,
            outcomes_bytes: 100,
            watch_bytes: 40,
            outbound_bytes: 1000,
        }
    }

    #[test]
    fn log_ring_is_bounded_in_bytes_and_drops_state_diffs() {
        let mut link = Link::new();
        let l = limits();
        link.append_log(raw(r#"{"kind":"read","stateDiff":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#), &l);
        assert_eq!(link.recent(10, None)[0].get(), r#"{"kind":"read"}"#);
        link.append_log(raw("[1]"), &l);
        assert_eq!(link.recent(10, None).len(), 1);
        for i in 0..20 {
            link.append_log(raw(&format!(r#"{{"kind":"k","n":"{i:030}"}}"#)), &l);
        }
        assert!(link.log_total <= l.log_bytes);
        assert_eq!(
            link.log_total,
            link.log.iter().map(|e| e.raw.get().len()).sum::<usize>()
        );
        assert_eq!(link.recent(100, Some(&["read"])).len(), 0);
        assert!(!link.recent(100, Some(&["k"])).is_empty());
    }

    #[test]
    fn a_withdrawal_is_the_outcome_until_an_approval_says_otherwise() {
        let l = limits();
        let mut link = Link::new();
        let p = Proposal {
            variant: "delete".into(),
            msg: serde_json::json!({"type": "delete"}),
            reason: None,
            proposed_at: 10,
        };
        link.expect_proposal("a", p.clone());
        link.expect_proposal("b", p);
        assert_eq!(link.pending().len(), 2);
        assert_eq!(link.withdraw("zz", 11), Err(WithdrawRefusal::Unknown));
        link.withdraw("a", 11).unwrap();
        assert_eq!(
            link.withdraw("a", 12),
            Err(WithdrawRefusal::Decided("withdrawn"))
        );
        assert_eq!(link.pending().len(), 1);
        let cancelled = Resolution {
            decision: ConfirmDecision::UserCancelled,
            state_after: None,
            at: 13,
            withdrawn: false,
        };
        link.resolve("a".into(), cancelled.clone(), &l);
        assert!(link.outcome("a").unwrap().withdrawn);
        // The app approved before it read `confirm-expire`: the approval stands.
        let confirmed = Resolution {
            decision: ConfirmDecision::Confirmed,
            ..cancelled.clone()
        };
        link.resolve("a".into(), confirmed, &l);
        assert!(!link.outcome("a").unwrap().withdrawn);
        link.resolve("b".into(), cancelled, &l);
        assert_eq!(
            link.withdraw("b", 14),
            Err(WithdrawRefusal::Decided("rejected"))
        );
        // Expired outcomes take their proposals with them; so do old undecided proposals.
        link.expect_proposal(
            "c",
            Proposal {
                variant: "delete".into(),
                msg: serde_json::json!({"type": "delete"}),
                reason: None,
                proposed_at: 10,
            },
        );
        link.expire_outcomes(100);
        assert!(link.pending().is_empty());
        assert_eq!(link.withdraw("a", 101), Err(WithdrawRefusal::Unknown));
    }

    #[test]
    fn outcomes_and_watches_are_bounded_in_bytes() {
        let mut link = Link::new();
        let l = limits();
        let r = |s: &str, at| Resolution {
            decision: ConfirmDecision::Confirmed,
            state_after: Some(raw(s)),
            at,
            withdrawn: false,
        };
        // Unknown ids are not kept.
        link.resolve("x".into(), r("1", 0), &l);
        assert!(link.outcome("x").is_none());
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            link.expect_confirm(id);
            link.resolve(
                id.to_string(),
                r(&format!("\"{}\"", "s".repeat(38)), i as u64),
                &l,
            );
        }
        assert!(link.outcome_total <= l.outcomes_bytes);
        assert!(link.outcome("a").is_none() && link.outcome("c").is_some());
        link.expect_confirm("big");
        link.resolve("big".into(), r(&format!("\"{}\"", "s".repeat(60)), 9), &l);
        assert!(link.outcome("big").unwrap().state_after.is_none());

        link.watches.insert("w".into(), (None, None));
        link.fill_watch("w", raw(&format!("\"{}\"", "s".repeat(60))), &l);
        assert_eq!(link.take_watch("w").unwrap().unwrap().get(), "null");
        assert_eq!(link.watch_total, 0);
        assert!(link.take_watch("w").is_err());
        link.watches.insert("v".into(), (None, None));
        link.disconnect(5);
        assert!(link.watches.is_empty());
    }
}
