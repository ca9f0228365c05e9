//! Every store call measured, whichever store answers it: [`Measured`] wraps a store's trait
//! object and runs each call in an `agent.store` span (fields `store`, `op`, and `error` when
//! it failed), recording its duration and failures (`docs/operations.md` §Metrics and traces).
//! [`Stores`](super::Stores) wraps the stores it bundles, so memory, SQLite and PostgreSQL go
//! through this one code path.

#[cfg(feature = "oauth")]
mod oauth;

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use tracing::Instrument as _;

use super::records::{
    CommitWrite, Committed, ConfirmsSwap, IdempotencyEntry, McpBinding, SessionChanges,
    SessionRecord,
};
use super::traits::{ChangesListener, IdempotencyRecords, McpBindings, SessionStore};
use super::{StoreKind, StoreResult, TokenStore};
use crate::security::{TokenChange, TokenRecord};

/// A store whose calls are measured; `store` names its kind (`memory`, `sqlite`, `postgres`).
pub(crate) struct Measured<S: ?Sized> {
    inner: Arc<S>,
    store: &'static str,
}

impl<S: ?Sized> Measured<S> {
    /// `inner`, measured as a store of `kind`.
    pub(crate) fn new(inner: Arc<S>, kind: StoreKind) -> Arc<Self> {
        let store = match kind {
            StoreKind::Memory => "memory",
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        };
        Arc::new(Measured { inner, store })
    }

    /// The store's `op`, called by `call` in its span, measured.
    fn run<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        call: impl FnOnce(&'a S) -> BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        let store = self.store;
        let span = tracing::debug_span!("agent.store", store, op, error = tracing::field::Empty);
        let started = Instant::now();
        let pending = span.in_scope(|| call(&self.inner));
        let recorded = span.clone();
        Box::pin(
            async move {
                let result = pending.await;
                let seconds = started.elapsed().as_secs_f64();
                crate::telemetry::store_call(store, op, seconds, result.is_err());
                if let Err(e) = &result {
                    recorded.record("error", tracing::field::display(e));
                }
                result
            }
            .instrument(span),
        )
    }
}

impl<S: SessionStore + ?Sized> SessionStore for Measured<S> {
    fn insert_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run("insert_session", |s| s.insert_session(record))
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        self.run("load_session", |s| s.load_session(id))
    }

    fn commit<'a>(&'a self, write: CommitWrite<'a>) -> BoxFuture<'a, StoreResult<Committed>> {
        self.run("commit", |s| s.commit(write))
    }

    fn commit_state<'a>(
        &'a self,
        id: &'a str,
        seq: u64,
        state: &'a str,
        schema_hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.run("commit_state", |s| {
            s.commit_state(id, seq, state, schema_hash, now)
        })
    }

    fn load_since<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Option<SessionChanges>>> {
        self.run("load_since", |s| s.load_since(id, after))
    }

    fn undo_records<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        self.run("undo_records", |s| s.undo_records(id, after))
    }

    fn swap_confirms<'a>(
        &'a self,
        id: &'a str,
        expected: &'a str,
        confirms: &'a str,
    ) -> BoxFuture<'a, StoreResult<ConfirmsSwap>> {
        self.run("swap_confirms", |s| s.swap_confirms(id, expected, confirms))
    }

    fn save_log_tail<'a>(
        &'a self,
        id: &'a str,
        log_tail: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.run("save_log_tail", |s| s.save_log_tail(id, log_tail))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.run("delete_session", |s| s.delete_session(id))
    }

    fn delete_session_unused<'a>(
        &'a self,
        id: &'a str,
        before: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.run("delete_session_unused", |s| {
            s.delete_session_unused(id, before)
        })
    }

    fn sessions_of<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        self.run("sessions_of", |s| s.sessions_of(owner))
    }

    fn session_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.run("session_count", |s| s.session_count())
    }

    fn touch_session<'a>(&'a self, id: &'a str, at: u64) -> BoxFuture<'a, StoreResult<()>> {
        self.run("touch_session", |s| s.touch_session(id, at))
    }

    fn stale_sessions(&self, before: u64, limit: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run("stale_sessions", |s| s.stale_sessions(before, limit))
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.changes()
    }

    fn ping(&self) -> BoxFuture<'_, StoreResult<()>> {
        self.run("ping", |s| s.ping())
    }

    fn listener(&self) -> ChangesListener {
        self.inner.listener()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }
}

impl<S: TokenStore + ?Sized> TokenStore for Measured<S> {
    fn create(&self, record: TokenRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run("create", |s| s.create(record))
    }

    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        self.run("find_by_tid", |s| s.find_by_tid(tid))
    }

    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        self.run("find_by_token_hash", |s| s.find_by_token_hash(token_hash))
    }

    fn list_by_identity<'a>(
        &'a self,
        uid: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        self.run("list_by_identity", |s| s.list_by_identity(uid))
    }

    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        self.run("list_by_session", |s| s.list_by_session(session_id))
    }

    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>> {
        self.run("touch", |s| s.touch(tid, now))
    }

    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.run("change", |s| s.change(tid, change))
    }

    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.run("revoke", |s| s.revoke(tid))
    }

    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>> {
        self.run("sweep_expired", |s| s.sweep_expired(now, retention_ms))
    }

    fn flush(&self) -> BoxFuture<'_, StoreResult<()>> {
        self.run("flush", |s| s.flush())
    }
}

impl<S: IdempotencyRecords + ?Sized> IdempotencyRecords for Measured<S> {
    fn put_idempotent(&self, entry: IdempotencyEntry) -> BoxFuture<'_, StoreResult<()>> {
        self.run("put_idempotent", |s| s.put_idempotent(entry))
    }

    fn get_idempotent<'a>(
        &'a self,
        tid: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<IdempotencyEntry>>> {
        self.run("get_idempotent", |s| s.get_idempotent(tid, key))
    }

    fn claim_idempotent(
        &self,
        entry: IdempotencyEntry,
        expired_before: u64,
        stale_before: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run("claim_idempotent", |s| {
            s.claim_idempotent(entry, expired_before, stale_before)
        })
    }

    fn sweep_idempotent(&self, before: u64) -> BoxFuture<'_, StoreResult<u64>> {
        self.run("sweep_idempotent", |s| s.sweep_idempotent(before))
    }
}

impl<S: McpBindings + ?Sized> McpBindings for Measured<S> {
    fn bind_mcp(&self, binding: McpBinding) -> BoxFuture<'_, StoreResult<()>> {
        self.run("bind_mcp", |s| s.bind_mcp(binding))
    }

    fn mcp_binding<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<McpBinding>>> {
        self.run("mcp_binding", |s| s.mcp_binding(id))
    }

    fn delete_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.run("delete_mcp", |s| s.delete_mcp(id))
    }

    fn unbind_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.run("unbind_mcp", |s| s.unbind_mcp(id))
    }

    fn mcp_ids_of<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        self.run("mcp_ids_of", |s| s.mcp_ids_of(tid))
    }

    fn mcp_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.run("mcp_count", |s| s.mcp_count())
    }

    fn oldest_mcp(&self, n: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run("oldest_mcp", |s| s.oldest_mcp(n))
    }

    fn deleted(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.deleted()
    }
}
