//! The `idempotencyKey` of a keyed `/message`, passed with its message to the commit that
//! records it (`docs/stores.md` §Exactly once). The call builds a [`KeyedDispatch`] and hands
//! it to the dispatch as an argument; the message's envelope carries it to the session's
//! writer ([`Origin::Agent`](super::queue::Origin::Agent)), whose commit writes the key in the
//! same transaction and reports what became of it, a [`KeyOutcome`], through a oneshot
//! channel the call reads back with its [`KeyReceipt`].

use tokio::sync::oneshot;

use crate::engine::store::CommitKey;

/// What became of a keyed message's commit, as the call reads it when its work answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyOutcome {
    /// No commit recorded the key by the time the call answered: none ran (a proposal, a
    /// refused message), it failed, the store keeps no keys, or the call answered before its
    /// commit (`waitFor: "none"`).
    NotRecorded,
    /// This message's commit recorded the key: the message applied here.
    Recorded,
    /// Another commit had recorded the key: the message applied there, and this application
    /// was dropped (not stored, no effects).
    UsedElsewhere,
    /// A paired app's relay gives the key back (`docs/pairing.md` §A fleet of replicas): the
    /// message did not reach the app, or reached one that answers a repeated key with its
    /// first answer; the call's answer is not stored as the key's, so a retry runs it again.
    Released,
}

/// A keyed message's key, as its commit records it, and where the commit reports back.
/// Moved, never shared: one call, one message, one commit.
#[derive(Debug)]
pub(crate) struct KeyedDispatch {
    tid: String,
    key: String,
    msg: String,
    created_at: u64,
    outcome: oneshot::Sender<KeyOutcome>,
}

/// The call's end of a [`KeyedDispatch`]: what its commit reported.
#[derive(Debug)]
pub(crate) struct KeyReceipt(oneshot::Receiver<KeyOutcome>);

impl KeyedDispatch {
    /// The `idempotencyKey`.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The key `key` of token `tid` for the message `msg` (JSON text), first seen at
    /// `created_at`; the receipt reads what its commit reports.
    pub(crate) fn new(
        tid: String,
        key: String,
        msg: String,
        created_at: u64,
    ) -> (KeyedDispatch, KeyReceipt) {
        let (outcome, receipt) = oneshot::channel();
        let dispatch = KeyedDispatch {
            tid,
            key,
            msg,
            created_at,
            outcome,
        };
        (dispatch, KeyReceipt(receipt))
    }

    /// The key as a commit writes it.
    pub(crate) fn as_commit_key(&self) -> CommitKey<'_> {
        CommitKey {
            tid: &self.tid,
            key: &self.key,
            msg: &self.msg,
            created_at: self.created_at,
        }
    }

    /// The commit's report: it recorded the key, or found it recorded by another commit.
    /// Dropping the dispatch unreported means no commit recorded it.
    pub(crate) fn report(self, outcome: KeyOutcome) {
        // The call may have answered and gone already (`waitFor: "none"`): nobody to tell.
        let _ = self.outcome.send(outcome);
    }
}

#[cfg(feature = "fleet")]
impl KeyedDispatch {
    /// Gives the key back ([`KeyOutcome::Released`]).
    pub(crate) fn release(self) {
        self.report(KeyOutcome::Released);
    }
}

impl KeyReceipt {
    /// What the commit reported, once the call's work answered:
    /// [`KeyOutcome::NotRecorded`] when it reported nothing (yet).
    pub(crate) fn outcome(mut self) -> KeyOutcome {
        self.0.try_recv().unwrap_or(KeyOutcome::NotRecorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(key: &str) -> (KeyedDispatch, KeyReceipt) {
        KeyedDispatch::new("t".into(), key.into(), "{}".into(), 1)
    }

    #[test]
    fn the_commit_reports_through_the_receipt() {
        let (k, receipt) = keyed("k");
        let written = k.as_commit_key();
        assert_eq!((written.tid, written.key, written.msg), ("t", "k", "{}"));
        assert_eq!(written.created_at, 1);
        k.report(KeyOutcome::UsedElsewhere);
        assert_eq!(receipt.outcome(), KeyOutcome::UsedElsewhere);
        let (k, receipt) = keyed("k2");
        k.report(KeyOutcome::Recorded);
        assert_eq!(receipt.outcome(), KeyOutcome::Recorded);
    }

    #[test]
    fn no_report_is_not_recorded() {
        // Dropped without a commit (a proposal, a failure).
        let (k, receipt) = keyed("k");
        drop(k);
        assert_eq!(receipt.outcome(), KeyOutcome::NotRecorded);
        // Still queued when the call answered (`waitFor: "none"`); its late report is lost.
        let (k, receipt) = keyed("k2");
        assert_eq!(receipt.outcome(), KeyOutcome::NotRecorded);
        k.report(KeyOutcome::Recorded);
    }
}
