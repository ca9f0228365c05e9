//! The token store (docs/lap.md §2.3): a trait and the default in-memory implementation.

use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use futures::future::{self, BoxFuture, FutureExt as _};

use super::store_error::{StoreError, StoreResult};
use super::token_record::{TokenRecord, TokenStatus};

/// A conditional change of one token record: applied only when the record's status is one of
/// [`from`](Self::from), and never to a revoked record, whatever `from` says. This is how a
/// revoke always wins (`docs/security.md` §Agent tokens): activation, pairing status changes
/// and claims are compare-and-set writes (`UPDATE … WHERE status IN (…)` in SQL), and a revoke
/// is the one unconditional write, so a change that lost the race to it changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenChange {
    /// The statuses the record may have for the change to apply (`revoked` never applies).
    pub from: Vec<TokenStatus>,
    /// The status the record takes.
    pub status: TokenStatus,
    /// `pendingResumeUntil` after the change (set whatever its value, `None` clears it).
    pub pending_resume_until: Option<u64>,
    /// `lastSeenAt` after the change, when `Some`.
    pub last_seen_at: Option<u64>,
    /// The label after the change, when `Some`.
    pub label: Option<String>,
    /// The token hash after the change (a claim's rotation), when `Some`.
    pub token_hash: Option<String>,
}

impl TokenChange {
    /// A change to `status` from any of `from`, touching nothing else but clearing
    /// `pendingResumeUntil`.
    pub fn new(from: &[TokenStatus], status: TokenStatus) -> Self {
        TokenChange {
            from: from.to_vec(),
            status,
            pending_resume_until: None,
            last_seen_at: None,
            label: None,
            token_hash: None,
        }
    }

    /// Whether the change applies to a record whose status is `current`.
    pub fn applies_to(&self, current: TokenStatus) -> bool {
        current != TokenStatus::Revoked && self.from.contains(&current)
    }

    /// Applies the change to `record` when [`applies_to`](Self::applies_to) its status;
    /// answers whether it did.
    pub fn apply(&self, record: &mut TokenRecord) -> bool {
        if !self.applies_to(record.status) {
            return false;
        }
        record.status = self.status;
        record.pending_resume_until = self.pending_resume_until;
        if let Some(at) = self.last_seen_at {
            record.last_seen_at = at;
        }
        if let Some(label) = &self.label {
            record.label = Some(label.clone());
        }
        if let Some(hash) = &self.token_hash {
            record.token_hash = hash.clone();
        }
        true
    }
}

/// Where token records live. Reads return copies; list methods answer records in creation
/// order. Every call answers a [`StoreResult`]: a store that cannot read or write says so, and
/// the server answers an error (never "no record", never success).
///
/// Every method returns a `Send` future, so an implementation can await its database (write
/// `Box::pin(async move { … })`); the trait stays dyn-compatible and is used as
/// `Arc<dyn TokenStore>`. The futures are awaited on the request path: keep them short.
pub trait TokenStore: Send + Sync {
    /// Stores a new record; [`StoreError::Conflict`] when its `tid` exists.
    fn create(&self, record: TokenRecord) -> BoxFuture<'_, StoreResult<()>>;

    /// The record with this `tid`.
    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>>;

    /// The record whose token hashes to `token_hash` (revoked records included).
    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>>;

    /// The records owned by exactly `uid`; records without an owner are never returned.
    fn list_by_identity<'a>(&'a self, uid: &'a str)
        -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>>;

    /// The records that drive session `session_id`.
    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>>;

    /// Sets `lastSeenAt` (nothing else; a store may coalesce these writes).
    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>>;

    /// Applies `change` to the record of `tid` in one conditional write; answers whether it
    /// applied (`false`: no such record, or its status is not one the change starts from —
    /// revoked, say).
    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// Sets status `revoked` unconditionally, keeping the record and its hash entry (so the
    /// token answers 403); answers whether a record exists.
    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// Deletes the records with `expiresAt + retention <= now` and their hash entries; answers
    /// how many went.
    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>>;

    /// Writes what the store holds back (the database stores' coalesced `lastSeenAt`
    /// touches), for a shutdown (`docs/operations.md` §Shutdown); nothing by default.
    fn flush(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async { Ok(()) })
    }
}

impl<T: TokenStore + ?Sized> TokenStore for std::sync::Arc<T> {
    fn create(&self, record: TokenRecord) -> BoxFuture<'_, StoreResult<()>> {
        (**self).create(record)
    }
    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        (**self).find_by_tid(tid)
    }
    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        (**self).find_by_token_hash(token_hash)
    }
    fn list_by_identity<'a>(
        &'a self,
        uid: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        (**self).list_by_identity(uid)
    }
    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        (**self).list_by_session(session_id)
    }
    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>> {
        (**self).touch(tid, now)
    }
    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        (**self).change(tid, change)
    }
    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        (**self).revoke(tid)
    }
    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>> {
        (**self).sweep_expired(now, retention_ms)
    }

    fn flush(&self) -> BoxFuture<'_, StoreResult<()>> {
        (**self).flush()
    }
}

#[derive(Debug, Default)]
struct Maps {
    /// tid → (creation sequence, record).
    records: HashMap<String, (u64, TokenRecord)>,
    /// token hash → tid.
    by_hash: HashMap<String, String>,
    next_seq: u64,
}

impl Maps {
    fn collect(&self, keep: impl Fn(&TokenRecord) -> bool) -> Vec<TokenRecord> {
        let mut found: Vec<&(u64, TokenRecord)> =
            self.records.values().filter(|(_, r)| keep(r)).collect();
        found.sort_by_key(|(seq, _)| *seq);
        found.into_iter().map(|(_, r)| r.clone()).collect()
    }

    fn update(&mut self, tid: &str, change: impl FnOnce(&mut TokenRecord) -> bool) -> bool {
        match self.records.get_mut(tid) {
            Some((_, record)) => change(record),
            None => false,
        }
    }
}

/// The default token store: two maps behind one lock (`tid` → record, hash → `tid`). Records
/// are lost when the process ends.
#[derive(Debug, Default)]
pub struct InMemoryTokenStore {
    maps: RwLock<Maps>,
}

impl InMemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of records held.
    pub fn len(&self) -> usize {
        self.read().records.len()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    // A panic while holding the lock cannot leave the maps half-updated in a way that matters
    // (every mutation is a single insert/remove pair), so a poisoned lock is used as is.
    fn read(&self) -> RwLockReadGuard<'_, Maps> {
        self.maps.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// The store's operations, synchronous: an in-memory store never waits, so code that holds the
/// concrete type can skip the futures of [`TokenStore`].
impl InMemoryTokenStore {
    /// Stores a new record, synchronously (see [`TokenStore::create`]).
    pub fn create(&self, record: TokenRecord) -> StoreResult<()> {
        let mut maps = self.write();
        if maps.records.contains_key(&record.tid) {
            return Err(StoreError::Conflict(format!("token {} exists", record.tid)));
        }
        let seq = maps.next_seq;
        maps.next_seq += 1;
        maps.by_hash
            .insert(record.token_hash.clone(), record.tid.clone());
        maps.records.insert(record.tid.clone(), (seq, record));
        Ok(())
    }

    /// The record with this `tid`, synchronously (see [`TokenStore::find_by_tid`]).
    pub fn find_by_tid(&self, tid: &str) -> Option<TokenRecord> {
        self.read().records.get(tid).map(|(_, r)| r.clone())
    }

    /// The record whose token hashes to `token_hash`, synchronously (see
    /// [`TokenStore::find_by_token_hash`]).
    pub fn find_by_token_hash(&self, token_hash: &str) -> Option<TokenRecord> {
        let maps = self.read();
        let tid = maps.by_hash.get(token_hash)?;
        maps.records.get(tid).map(|(_, r)| r.clone())
    }

    /// The records owned by exactly `uid`, synchronously (see [`TokenStore::list_by_identity`]).
    pub fn list_by_identity(&self, uid: &str) -> Vec<TokenRecord> {
        self.read().collect(|r| r.uid.as_deref() == Some(uid))
    }

    /// The records of session `session_id`, synchronously (see [`TokenStore::list_by_session`]).
    pub fn list_by_session(&self, session_id: &str) -> Vec<TokenRecord> {
        self.read().collect(|r| r.session_id == session_id)
    }

    /// Sets `lastSeenAt`, synchronously (see [`TokenStore::touch`]).
    pub fn touch(&self, tid: &str, now: u64) {
        self.write().update(tid, |r| {
            r.last_seen_at = now;
            true
        });
    }

    /// Applies a conditional change, synchronously (see [`TokenStore::change`]).
    pub fn change(&self, tid: &str, change: &TokenChange) -> bool {
        let mut maps = self.write();
        let Some((_, record)) = maps.records.get(tid) else {
            return false;
        };
        let old_hash = record.token_hash.clone();
        if !maps.update(tid, |r| change.apply(r)) {
            return false;
        }
        if let Some(hash) = &change.token_hash {
            if maps.by_hash.get(&old_hash).map(String::as_str) == Some(tid) {
                maps.by_hash.remove(&old_hash);
            }
            maps.by_hash.insert(hash.clone(), tid.to_owned());
        }
        true
    }

    /// Revokes the record, synchronously (see [`TokenStore::revoke`]).
    pub fn revoke(&self, tid: &str) -> bool {
        self.write().update(tid, |r| {
            r.status = TokenStatus::Revoked;
            true
        })
    }

    /// Deletes the long-expired records, synchronously (see [`TokenStore::sweep_expired`]).
    pub fn sweep_expired(&self, now: u64, retention_ms: u64) -> usize {
        let mut maps = self.write();
        let expired: Vec<(String, String)> = maps
            .records
            .values()
            .filter(|(_, r)| r.expires_at.saturating_add(retention_ms) <= now)
            .map(|(_, r)| (r.tid.clone(), r.token_hash.clone()))
            .collect();
        for (tid, hash) in &expired {
            maps.records.remove(tid);
            if maps.by_hash.get(hash) == Some(tid) {
                maps.by_hash.remove(hash);
            }
        }
        expired.len()
    }
}

impl TokenStore for InMemoryTokenStore {
    fn create(&self, record: TokenRecord) -> BoxFuture<'_, StoreResult<()>> {
        future::ready(InMemoryTokenStore::create(self, record)).boxed()
    }

    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        future::ready(Ok(InMemoryTokenStore::find_by_tid(self, tid))).boxed()
    }

    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        future::ready(Ok(InMemoryTokenStore::find_by_token_hash(self, token_hash))).boxed()
    }

    fn list_by_identity<'a>(
        &'a self,
        uid: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        future::ready(Ok(InMemoryTokenStore::list_by_identity(self, uid))).boxed()
    }

    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        future::ready(Ok(InMemoryTokenStore::list_by_session(self, session_id))).boxed()
    }

    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>> {
        InMemoryTokenStore::touch(self, tid, now);
        future::ready(Ok(())).boxed()
    }

    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        future::ready(Ok(InMemoryTokenStore::change(self, tid, change))).boxed()
    }

    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        future::ready(Ok(InMemoryTokenStore::revoke(self, tid))).boxed()
    }

    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>> {
        future::ready(Ok(InMemoryTokenStore::sweep_expired(
            self,
            now,
            retention_ms,
        )))
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::tokens::{mint_token, verify_bearer, AuthError};

    fn record(tid: &str, uid: Option<&str>, session: &str, expires_at: u64) -> TokenRecord {
        TokenRecord {
            tid: tid.into(),
            token_hash: format!("hash-{tid}"),
            uid: uid.map(Into::into),
            session_id: session.into(),
            kind: crate::security::SessionKind::Hosted,
            status: TokenStatus::AwaitingClaude,
            created_at: 10,
            expires_at,
            last_seen_at: 10,
            pending_resume_until: None,
            origin: "http://localhost".into(),
            label: None,
            scope: None,
        }
    }

    #[test]
    fn create_and_find_round_trip() {
        let store = InMemoryTokenStore::new();
        let r = record("t1", Some("u1"), "s1", 100);
        store.create(r.clone()).unwrap();
        assert_eq!(store.find_by_tid("t1"), Some(r.clone()));
        assert_eq!(store.find_by_token_hash("hash-t1"), Some(r));
        assert_eq!(store.find_by_tid("nope"), None);
        assert_eq!(store.find_by_token_hash("hash-nope"), None);
    }

    #[test]
    fn reads_are_copies() {
        let store = InMemoryTokenStore::new();
        store.create(record("t1", Some("u1"), "s1", 100)).unwrap();
        let mut copy = store.find_by_tid("t1").unwrap();
        copy.status = TokenStatus::Revoked;
        assert_eq!(
            store.find_by_tid("t1").unwrap().status,
            TokenStatus::AwaitingClaude
        );
    }

    #[test]
    fn list_by_identity_is_exact_and_skips_ownerless() {
        let store = InMemoryTokenStore::new();
        store.create(record("a", Some("u1"), "s1", 100)).unwrap();
        store.create(record("b", None, "s1", 100)).unwrap();
        store.create(record("c", Some("u2"), "s2", 100)).unwrap();
        store.create(record("d", Some("u1"), "s3", 100)).unwrap();
        store.create(record("e", Some("u1x"), "s3", 100)).unwrap();
        let tids: Vec<String> = store
            .list_by_identity("u1")
            .into_iter()
            .map(|r| r.tid)
            .collect();
        assert_eq!(tids, ["a", "d"]);
        assert!(store.list_by_identity("").is_empty());
        let by_session: Vec<String> = store
            .list_by_session("s1")
            .into_iter()
            .map(|r| r.tid)
            .collect();
        assert_eq!(by_session, ["a", "b"]);
    }

    #[test]
    fn touch_changes_only_last_seen() {
        let store = InMemoryTokenStore::new();
        let before = record("t", Some("u"), "s", 100);
        store.create(before.clone()).unwrap();
        store.touch("t", 77);
        let after = store.find_by_tid("t").unwrap();
        assert_eq!(after.last_seen_at, 77);
        assert_eq!(
            TokenRecord {
                last_seen_at: before.last_seen_at,
                ..after
            },
            before
        );
    }

    #[test]
    fn a_change_sets_status_label_and_last_seen() {
        let store = InMemoryTokenStore::new();
        let before = record("t", Some("u"), "s", 100);
        store.create(before.clone()).unwrap();
        let mut activate = TokenChange::new(&[TokenStatus::AwaitingClaude], TokenStatus::Active);
        activate.label = Some("agent".into());
        activate.last_seen_at = Some(55);
        assert!(store.change("t", &activate));
        let after = store.find_by_tid("t").unwrap();
        assert_eq!(after.status, TokenStatus::Active);
        assert_eq!(after.label.as_deref(), Some("agent"));
        assert_eq!(after.last_seen_at, 55);
        assert_eq!(after.created_at, before.created_at);
        assert_eq!(after.expires_at, before.expires_at);
    }

    #[test]
    fn revoke_keeps_record_and_hash_so_token_answers_403() {
        let store = InMemoryTokenStore::new();
        let (token, hash) = mint_token();
        let r = TokenRecord::minted(hash.clone(), Some("u".into()), "s".into(), "o".into(), 0);
        let tid = r.tid.clone();
        store.create(r).unwrap();
        assert!(store.revoke(&tid));
        let kept = store.find_by_token_hash(&hash).unwrap();
        assert_eq!(kept.tid, tid);
        assert_eq!(kept.status, TokenStatus::Revoked);
        let header = format!("Bearer {}", token.expose());
        assert_eq!(
            futures::executor::block_on(verify_bearer(Some(&header), &store, 1, None)),
            Err(AuthError::Revoked)
        );
        // Idempotent.
        assert!(store.revoke(&tid));
        assert_eq!(
            store.find_by_tid(&tid).unwrap().status,
            TokenStatus::Revoked
        );
    }

    #[test]
    fn mutations_on_missing_tid_are_noops() {
        let store = InMemoryTokenStore::new();
        store.create(record("t", Some("u"), "s", 100)).unwrap();
        let before = store.find_by_tid("t");
        store.touch("x", 1);
        assert!(!store.change(
            "x",
            &TokenChange::new(&TokenStatus::ALL, TokenStatus::Active)
        ));
        assert!(!store.revoke("x"));
        assert_eq!(store.len(), 1);
        assert_eq!(store.find_by_tid("x"), None);
        assert_eq!(store.find_by_tid("t"), before);
    }

    #[test]
    fn sweep_expired_deletes_records_and_hash_entries() {
        let store = InMemoryTokenStore::new();
        store.create(record("old", Some("u"), "s", 1_000)).unwrap();
        store.create(record("mid", Some("u"), "s", 4_500)).unwrap();
        store.create(record("new", Some("u"), "s", 10_000)).unwrap();
        assert_eq!(store.sweep_expired(5_000, 1_000), 1);
        assert_eq!(store.find_by_tid("old"), None);
        assert_eq!(store.find_by_token_hash("hash-old"), None);
        assert!(store.find_by_tid("mid").is_some());
        assert!(store.find_by_token_hash("hash-mid").is_some());
        assert!(store.find_by_tid("new").is_some());
        // Boundary: expiresAt + retention == now is swept.
        assert_eq!(store.sweep_expired(5_500, 1_000), 1);
        assert_eq!(store.find_by_tid("mid"), None);
        assert_eq!(store.sweep_expired(5_500, 1_000), 0);
    }

    #[test]
    fn create_refuses_an_existing_tid_and_a_change_moves_the_hash() {
        let store = InMemoryTokenStore::new();
        store.create(record("t", Some("u"), "s", 100)).unwrap();
        assert!(matches!(
            store.create(record("t", None, "s2", 1)),
            Err(StoreError::Conflict(_))
        ));
        let mut rotate = TokenChange::new(&[TokenStatus::AwaitingClaude], TokenStatus::Active);
        rotate.token_hash = Some("hash-new".into());
        assert!(store.change("t", &rotate));
        assert_eq!(store.find_by_token_hash("hash-t"), None);
        assert_eq!(store.find_by_token_hash("hash-new").unwrap().tid, "t");
        assert_eq!(store.len(), 1);
    }
}
