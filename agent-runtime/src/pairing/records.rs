//! Pairing records: which token ids drive a paired session, and the token life cycle of
//! `pairing.md` (`awaiting-ws` → `awaiting-claude` → `active` → `pending-resume` → re-pair or
//! claim, `revoked` at any time).
//!
//! The seam with durable storage is [`PairingStore`] (which tids are paired) plus the
//! [`TokenStore`]'s own fields: status, `pendingResumeUntil` and the token hash of a record
//! are changed by replacing the record ([`TokenStore::create`] with the same `tid`), so a
//! durable token store persists the whole life cycle with no new method.

use std::collections::HashSet;
use std::sync::RwLock;

use futures::future::BoxFuture;

use crate::security::{TokenRecord, TokenStatus, TokenStore};

/// Which token ids drive a paired session (as opposed to a session hosted in this process).
/// Methods return futures so an implementation can await a database.
pub trait PairingStore: Send + Sync {
    /// Records `tid` as paired (at mint).
    fn insert<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, ()>;
    /// Whether `tid` is paired.
    fn is_paired<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, bool>;
    /// Forgets `tid` (its token expired and was swept).
    fn remove<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, ()>;
}

/// The in-memory [`PairingStore`] (lost on restart, like the in-memory token store).
#[derive(Debug, Default)]
pub struct InMemoryPairingStore {
    tids: RwLock<HashSet<String>>,
}

impl InMemoryPairingStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl PairingStore for InMemoryPairingStore {
    fn insert<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, ()> {
        self.tids
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tid.to_string());
        Box::pin(async {})
    }

    fn is_paired<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, bool> {
        let paired = self
            .tids
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(tid);
        Box::pin(async move { paired })
    }

    fn remove<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, ()> {
        self.tids
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tid);
        Box::pin(async {})
    }
}

/// Changes the record of `tid` with `change` unless it is revoked; answers the new record.
pub(crate) async fn update(
    tokens: &dyn TokenStore,
    tid: &str,
    change: impl FnOnce(&mut TokenRecord),
) -> Option<TokenRecord> {
    let mut record = tokens.find_by_tid(tid).await?;
    if record.status == TokenStatus::Revoked {
        return None;
    }
    change(&mut record);
    tokens.create(record.clone()).await;
    Some(record)
}

/// Sets the status of `tid` (clearing `pendingResumeUntil` unless the status is
/// `pending-resume`, which takes `until`).
pub(crate) async fn set_status(
    tokens: &dyn TokenStore,
    tid: &str,
    status: TokenStatus,
    until: Option<u64>,
) -> Option<TokenRecord> {
    update(tokens, tid, |r| {
        r.status = status;
        r.pending_resume_until = if status == TokenStatus::PendingResume {
            until
        } else {
            None
        };
    })
    .await
}

/// Whether a `pending-resume` record is still inside its grace window at `now`.
pub(crate) fn within_grace(record: &TokenRecord, now: u64) -> bool {
    record.status == TokenStatus::PendingResume
        && record.pending_resume_until.is_some_and(|until| until > now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::InMemoryTokenStore;

    #[tokio::test]
    async fn status_changes_replace_the_record_and_spare_revoked_ones() {
        let tokens = InMemoryTokenStore::new();
        let record = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        let tid = record.tid.clone();
        tokens.create(record);
        let r = set_status(&tokens, &tid, TokenStatus::PendingResume, Some(50))
            .await
            .unwrap();
        assert!(within_grace(&r, 49));
        assert!(!within_grace(&r, 50));
        let r = set_status(&tokens, &tid, TokenStatus::Active, Some(50))
            .await
            .unwrap();
        assert_eq!(r.pending_resume_until, None);
        tokens.revoke(&tid);
        assert!(set_status(&tokens, &tid, TokenStatus::Active, None)
            .await
            .is_none());
        assert_eq!(
            tokens.find_by_tid(&tid).unwrap().status,
            TokenStatus::Revoked
        );
        let store = InMemoryPairingStore::new();
        store.insert(&tid).await;
        assert!(store.is_paired(&tid).await);
        store.remove(&tid).await;
        assert!(!store.is_paired(&tid).await);
    }
}
