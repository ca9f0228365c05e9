//! The `idempotencyKey` of a keyed `/message`, carried from the call to the commit its message
//! produces, so the key is recorded in that commit's transaction (`docs/stores.md` §Exactly
//! once). The call runs its work inside [`with_key`]; the message it enqueues takes the key
//! ([`take`], once: one message, one commit); the commit reports back through
//! [`KeyedCommit::outcome`] whether it recorded the key or found it recorded by another
//! commit (the message was applied elsewhere, and this application was dropped).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use crate::engine::store::CommitKey;

/// What became of a keyed message's commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyOutcome {
    /// No commit recorded the key here (none ran, it failed, or the store keeps no keys).
    NotRecorded,
    /// This message's commit recorded the key.
    Recorded,
    /// Another commit had recorded the key: this application was not stored.
    UsedElsewhere,
}

/// A keyed call's key, as its message's commit records it.
#[derive(Debug)]
pub(crate) struct KeyedCommit {
    tid: String,
    key: String,
    msg: String,
    created_at: u64,
    taken: AtomicBool,
    outcome: AtomicU8,
}

impl KeyedCommit {
    /// The key `key` of token `tid` for the message `msg` (JSON text), first seen at
    /// `created_at`.
    pub(crate) fn new(tid: String, key: String, msg: String, created_at: u64) -> Arc<Self> {
        Arc::new(KeyedCommit {
            tid,
            key,
            msg,
            created_at,
            taken: AtomicBool::new(false),
            outcome: AtomicU8::new(0),
        })
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

    /// What became of the commit.
    pub(crate) fn outcome(&self) -> KeyOutcome {
        match self.outcome.load(Ordering::Acquire) {
            1 => KeyOutcome::Recorded,
            2 => KeyOutcome::UsedElsewhere,
            _ => KeyOutcome::NotRecorded,
        }
    }

    pub(crate) fn set_outcome(&self, outcome: KeyOutcome) {
        let v = match outcome {
            KeyOutcome::NotRecorded => 0,
            KeyOutcome::Recorded => 1,
            KeyOutcome::UsedElsewhere => 2,
        };
        self.outcome.store(v, Ordering::Release);
    }
}

tokio::task_local! {
    static KEYED: Arc<KeyedCommit>;
}

/// Runs `work` with `key` as the key of the message it sends.
pub(crate) async fn with_key<F: Future>(key: Arc<KeyedCommit>, work: F) -> F::Output {
    KEYED.scope(key, work).await
}

/// The key of the message the calling task enqueues: only the first time (a keyed call sends
/// one message); `None` outside [`with_key`].
pub(crate) fn take() -> Option<Arc<KeyedCommit>> {
    KEYED
        .try_with(|k| (!k.taken.swap(true, Ordering::AcqRel)).then(|| k.clone()))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_key_is_taken_once_and_only_inside_its_scope() {
        assert!(take().is_none());
        let k = KeyedCommit::new("t".into(), "k".into(), "{}".into(), 1);
        let (first, second) = with_key(k.clone(), async { (take(), take()) }).await;
        assert!(first.is_some());
        assert!(second.is_none());
        // Tasks spawned inside (effects) do not inherit it.
        let k2 = KeyedCommit::new("t".into(), "k2".into(), "{}".into(), 1);
        let spawned = with_key(k2, async { tokio::spawn(async { take() }).await.unwrap() }).await;
        assert!(spawned.is_none());
        k.set_outcome(KeyOutcome::UsedElsewhere);
        assert_eq!(k.outcome(), KeyOutcome::UsedElsewhere);
    }
}
