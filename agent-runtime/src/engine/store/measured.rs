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
use metrics::Histogram;
use tracing::Instrument as _;

use super::records::{
    CommitWrite, Committed, ConfirmsSwap, IdempotencyEntry, McpBinding, SessionChanges,
    SessionRecord,
};
use super::traits::{ChangesListener, IdempotencyRecords, McpBindings, SessionStore};
use super::{StoreKind, StoreResult, TokenStore};
use crate::security::{TokenChange, TokenRecord};
use crate::telemetry::Handles;

/// The store calls, each measured under its name as the `op` label.
macro_rules! store_ops {
    ($($(#[$cfg:meta])? $op:ident,)*) => {
        /// A store call, named as the `op` label of its metrics and span.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy)]
        pub(crate) enum StoreOp {
            $($(#[$cfg])? $op,)*
        }

        impl StoreOp {
            /// How many calls there are: the number of metric handles a store keeps.
            const COUNT: usize = [$(stringify!($op),)*].len();

            /// The call's name.
            fn name(self) -> &'static str {
                match self {
                    $($(#[$cfg])? StoreOp::$op => stringify!($op),)*
                }
            }
        }
    };
}

store_ops! {
    insert_session,
    load_session,
    commit,
    commit_state,
    load_since,
    undo_records,
    swap_confirms,
    save_log_tail,
    delete_session,
    delete_session_unused,
    sessions_of,
    session_count,
    touch_session,
    stale_sessions,
    ping,
    create,
    find_by_tid,
    find_by_token_hash,
    list_by_identity,
    list_by_session,
    touch,
    change,
    revoke,
    sweep_expired,
    flush,
    put_idempotent,
    get_idempotent,
    claim_idempotent,
    sweep_idempotent,
    bind_mcp,
    mcp_binding,
    delete_mcp,
    unbind_mcp,
    mcp_ids_of,
    mcp_count,
    oldest_mcp,
    #[cfg(feature = "oauth")]
    register_client,
    #[cfg(feature = "oauth")]
    find_client,
    #[cfg(feature = "oauth")]
    client_used,
    #[cfg(feature = "oauth")]
    add_code,
    #[cfg(feature = "oauth")]
    take_code,
    #[cfg(feature = "oauth")]
    create_grant,
    #[cfg(feature = "oauth")]
    rotate,
    #[cfg(feature = "oauth")]
    grant_by_refresh,
    #[cfg(feature = "oauth")]
    grant_by_access,
    #[cfg(feature = "oauth")]
    access,
    #[cfg(feature = "oauth")]
    revoke_grant,
    #[cfg(feature = "oauth")]
    revoke_access,
}

/// A store whose calls are measured; `store` names its kind (`memory`, `sqlite`, `postgres`).
pub(crate) struct Measured<S: ?Sized> {
    inner: Arc<S>,
    store: &'static str,
    /// The duration histogram of each call, registered at its first use.
    durations: Handles<Histogram>,
}

impl<S: ?Sized> Measured<S> {
    /// `inner`, measured as a store of `kind`.
    pub(crate) fn new(inner: Arc<S>, kind: StoreKind) -> Arc<Self> {
        let store = match kind {
            StoreKind::Memory => "memory",
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        };
        Arc::new(Measured {
            inner,
            store,
            durations: Handles::new(StoreOp::COUNT),
        })
    }

    /// The store's `op`, called by `call` in its span, measured.
    fn run<'a, T: Send + 'a>(
        &'a self,
        call_op: StoreOp,
        call: impl FnOnce(&'a S) -> BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        let store = self.store;
        let op = call_op.name();
        let duration = self.durations.get(call_op as usize, || {
            crate::telemetry::store_duration(store, op)
        });
        let span = tracing::debug_span!("agent.store", store, op, error = tracing::field::Empty);
        let started = Instant::now();
        let pending = span.in_scope(|| call(&self.inner));
        let recorded = span.clone();
        Box::pin(
            async move {
                let result = pending.await;
                let seconds = started.elapsed().as_secs_f64();
                crate::telemetry::store_call(duration, store, op, seconds, result.is_err());
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
        self.run(StoreOp::insert_session, |s| s.insert_session(record))
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        self.run(StoreOp::load_session, |s| s.load_session(id))
    }

    fn commit<'a>(&'a self, write: CommitWrite<'a>) -> BoxFuture<'a, StoreResult<Committed>> {
        self.run(StoreOp::commit, |s| s.commit(write))
    }

    fn commit_state<'a>(
        &'a self,
        id: &'a str,
        seq: u64,
        state: &'a str,
        schema_hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.run(StoreOp::commit_state, |s| {
            s.commit_state(id, seq, state, schema_hash, now)
        })
    }

    fn load_since<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Option<SessionChanges>>> {
        self.run(StoreOp::load_since, |s| s.load_since(id, after))
    }

    fn undo_records<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        self.run(StoreOp::undo_records, |s| s.undo_records(id, after))
    }

    fn swap_confirms<'a>(
        &'a self,
        id: &'a str,
        expected: &'a str,
        confirms: &'a str,
    ) -> BoxFuture<'a, StoreResult<ConfirmsSwap>> {
        self.run(StoreOp::swap_confirms, |s| {
            s.swap_confirms(id, expected, confirms)
        })
    }

    fn save_log_tail<'a>(
        &'a self,
        id: &'a str,
        log_tail: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.run(StoreOp::save_log_tail, |s| s.save_log_tail(id, log_tail))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.run(StoreOp::delete_session, |s| s.delete_session(id))
    }

    fn delete_session_unused<'a>(
        &'a self,
        id: &'a str,
        before: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.run(StoreOp::delete_session_unused, |s| {
            s.delete_session_unused(id, before)
        })
    }

    fn sessions_of<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        self.run(StoreOp::sessions_of, |s| s.sessions_of(owner))
    }

    fn session_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(StoreOp::session_count, |s| s.session_count())
    }

    fn touch_session<'a>(&'a self, id: &'a str, at: u64) -> BoxFuture<'a, StoreResult<()>> {
        self.run(StoreOp::touch_session, |s| s.touch_session(id, at))
    }

    fn stale_sessions(&self, before: u64, limit: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run(StoreOp::stale_sessions, |s| s.stale_sessions(before, limit))
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.changes()
    }

    fn ping(&self) -> BoxFuture<'_, StoreResult<()>> {
        self.run(StoreOp::ping, |s| s.ping())
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
        self.run(StoreOp::create, |s| s.create(record))
    }

    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        self.run(StoreOp::find_by_tid, |s| s.find_by_tid(tid))
    }

    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        self.run(StoreOp::find_by_token_hash, |s| {
            s.find_by_token_hash(token_hash)
        })
    }

    fn list_by_identity<'a>(
        &'a self,
        uid: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        self.run(StoreOp::list_by_identity, |s| s.list_by_identity(uid))
    }

    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        self.run(StoreOp::list_by_session, |s| s.list_by_session(session_id))
    }

    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>> {
        self.run(StoreOp::touch, |s| s.touch(tid, now))
    }

    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.run(StoreOp::change, |s| s.change(tid, change))
    }

    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.run(StoreOp::revoke, |s| s.revoke(tid))
    }

    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(StoreOp::sweep_expired, |s| {
            s.sweep_expired(now, retention_ms)
        })
    }

    fn flush(&self) -> BoxFuture<'_, StoreResult<()>> {
        self.run(StoreOp::flush, |s| s.flush())
    }
}

impl<S: IdempotencyRecords + ?Sized> IdempotencyRecords for Measured<S> {
    fn put_idempotent(&self, entry: IdempotencyEntry) -> BoxFuture<'_, StoreResult<()>> {
        self.run(StoreOp::put_idempotent, |s| s.put_idempotent(entry))
    }

    fn get_idempotent<'a>(
        &'a self,
        tid: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<IdempotencyEntry>>> {
        self.run(StoreOp::get_idempotent, |s| s.get_idempotent(tid, key))
    }

    fn claim_idempotent(
        &self,
        entry: IdempotencyEntry,
        expired_before: u64,
        stale_before: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(StoreOp::claim_idempotent, |s| {
            s.claim_idempotent(entry, expired_before, stale_before)
        })
    }

    fn sweep_idempotent(&self, before: u64) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(StoreOp::sweep_idempotent, |s| s.sweep_idempotent(before))
    }
}

impl<S: McpBindings + ?Sized> McpBindings for Measured<S> {
    fn bind_mcp(&self, binding: McpBinding) -> BoxFuture<'_, StoreResult<()>> {
        self.run(StoreOp::bind_mcp, |s| s.bind_mcp(binding))
    }

    fn mcp_binding<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<McpBinding>>> {
        self.run(StoreOp::mcp_binding, |s| s.mcp_binding(id))
    }

    fn delete_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.run(StoreOp::delete_mcp, |s| s.delete_mcp(id))
    }

    fn unbind_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.run(StoreOp::unbind_mcp, |s| s.unbind_mcp(id))
    }

    fn mcp_ids_of<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        self.run(StoreOp::mcp_ids_of, |s| s.mcp_ids_of(tid))
    }

    fn mcp_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(StoreOp::mcp_count, |s| s.mcp_count())
    }

    fn oldest_mcp(&self, n: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run(StoreOp::oldest_mcp, |s| s.oldest_mcp(n))
    }

    fn deleted(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.deleted()
    }
}
