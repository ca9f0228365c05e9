//! A token store around a real one that can fail chosen operations or hold its conditional
//! writes open: the races and failures of `docs/security.md` §Promises, made deterministic.
//! It also counts the calls of each operation (what a request cost the store).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tea_agent_runtime::security::{TokenChange, TokenRecord};
use tea_agent_runtime::store::TokenStore;
use tea_agent_runtime::store::{StoreError, StoreResult};
use tokio::sync::Notify;

/// A token operation, as [`FaultyTokens::fail`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenOp {
    /// `create`.
    Create,
    /// `find_by_tid` and `find_by_token_hash`.
    Find,
    /// `list_by_identity` and `list_by_session`.
    List,
    /// `touch`.
    Touch,
    /// `change`.
    Change,
    /// `revoke`.
    Revoke,
}

/// Wraps a real token store (memory, SQLite or PostgreSQL). Failing operations answer
/// [`StoreError::Database`] without reaching the store; held `change` calls wait, before
/// reaching the store, until [`FaultyTokens::release`]. Every call is counted by operation
/// ([`FaultyTokens::calls`]).
pub struct FaultyTokens {
    inner: Arc<dyn TokenStore>,
    calls: Mutex<HashMap<TokenOp, usize>>,
    failing: Mutex<HashSet<TokenOp>>,
    holding: AtomicBool,
    held: AtomicUsize,
    released: Notify,
}

impl FaultyTokens {
    /// Wraps `inner`, failing and holding nothing.
    pub fn new(inner: Arc<dyn TokenStore>) -> Arc<Self> {
        Arc::new(FaultyTokens {
            inner,
            calls: Mutex::new(HashMap::new()),
            failing: Mutex::new(HashSet::new()),
            holding: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            released: Notify::new(),
        })
    }

    /// How many calls of `op` were made so far (failed ones included).
    pub fn calls(&self, op: TokenOp) -> usize {
        self.calls.lock().unwrap().get(&op).copied().unwrap_or(0)
    }

    /// From now on `op` fails.
    pub fn fail(&self, op: TokenOp) {
        self.failing.lock().unwrap().insert(op);
    }

    /// From now on `op` works again.
    pub fn heal(&self, op: TokenOp) {
        self.failing.lock().unwrap().remove(&op);
    }

    /// From now on every `change` waits before it reaches the store.
    pub fn hold_changes(&self) {
        self.holding.store(true, Ordering::SeqCst);
    }

    /// How many `change` calls are waiting.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Lets the waiting `change` calls (and every later one) through.
    pub fn release(&self) {
        self.holding.store(false, Ordering::SeqCst);
        self.released.notify_waiters();
    }

    fn check(&self, op: TokenOp) -> StoreResult<()> {
        *self.calls.lock().unwrap().entry(op).or_default() += 1;
        if self.failing.lock().unwrap().contains(&op) {
            return Err(StoreError::Database(format!("injected failure of {op:?}")));
        }
        Ok(())
    }
}

impl TokenStore for FaultyTokens {
    fn create(&self, record: TokenRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            self.check(TokenOp::Create)?;
            self.inner.create(record).await
        })
    }

    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        Box::pin(async move {
            self.check(TokenOp::Find)?;
            self.inner.find_by_tid(tid).await
        })
    }

    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        Box::pin(async move {
            self.check(TokenOp::Find)?;
            self.inner.find_by_token_hash(token_hash).await
        })
    }

    fn list_by_identity<'a>(
        &'a self,
        uid: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        Box::pin(async move {
            self.check(TokenOp::List)?;
            self.inner.list_by_identity(uid).await
        })
    }

    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        Box::pin(async move {
            self.check(TokenOp::List)?;
            self.inner.list_by_session(session_id).await
        })
    }

    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.check(TokenOp::Touch)?;
            self.inner.touch(tid, now).await
        })
    }

    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            if self.holding.load(Ordering::SeqCst) {
                let released = self.released.notified();
                tokio::pin!(released);
                released.as_mut().enable();
                self.held.fetch_add(1, Ordering::SeqCst);
                if self.holding.load(Ordering::SeqCst) {
                    released.await;
                }
                self.held.fetch_sub(1, Ordering::SeqCst);
            }
            self.check(TokenOp::Change)?;
            self.inner.change(tid, change).await
        })
    }

    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            self.check(TokenOp::Revoke)?;
            self.inner.revoke(tid).await
        })
    }

    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>> {
        self.inner.sweep_expired(now, retention_ms)
    }
}
