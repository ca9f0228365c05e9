//! The two steps every successful or long call shares, whatever its path: activation of the
//! token (`awaiting-claude` → `active`, else a touch) and the race against its revocation
//! (→ 403 `revoked`); with them, what keyed calls ask of the server ([`KeyedServer`]).

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tea_agent_schema::protocol::Action;

use super::error::ApiError;
use super::keyed::{IdempotencyStore, KeyedServer};
use super::reply::Reply;
use super::state::ServerState;
use crate::app::App;
use crate::engine::store::IdempotencyRecords;
use crate::security::{lifecycle, AuditEntry, LifecycleError, TokenRecord};

/// Activation (`awaiting-claude` → `active`) or touch of a successful call (the life cycle's
/// conditional write: a token revoked meanwhile stays revoked and the call answers 403).
/// Answers whether this call activated the token. A store failure is audited
/// (`store-failed`) and answered as an error, never as success.
pub(crate) async fn activate<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
) -> Result<bool, ApiError> {
    match lifecycle::activate(&**server.tokens(), record, server.now()).await {
        Ok(activated) => Ok(activated),
        Err(e) => {
            if let LifecycleError::Store(_) = e {
                store_failed(server, record, "activate").await;
            }
            Err(e.into())
        }
    }
}

/// Audits a store write that failed under a caller of `record` (the caller is answered an
/// error).
pub(crate) async fn store_failed<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
    op: &'static str,
) {
    let entry = AuditEntry::store_failed(server.now(), op, &record.tid, record.uid.as_deref());
    server.audit(entry).await;
}

/// Races `work` against the revocation of `tid` (→ 403 `revoked`).
pub(crate) async fn with_revocation<A: App>(
    server: &ServerState<A>,
    tid: &str,
    work: impl std::future::Future<Output = Reply>,
) -> Reply {
    let mut revoked = server.revocations().subscribe();
    let wait_revoked = async move {
        loop {
            match revoked.recv().await {
                Ok(t) if t == tid => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    std::future::pending::<()>().await
                }
            }
        }
    };
    tokio::select! {
        reply = work => reply,
        _ = wait_revoked => Reply::error(ApiError::revoked()),
    }
}

impl<A: App> KeyedServer for ServerState<A> {
    fn now(&self) -> u64 {
        ServerState::now(self)
    }

    fn idempotency(&self) -> &IdempotencyStore {
        ServerState::idempotency(self)
    }

    fn durable_idempotency(&self) -> Option<&Arc<dyn IdempotencyRecords>> {
        ServerState::durable_idempotency(self)
    }

    fn durable_idempotency_swept(&self) -> &AtomicU64 {
        ServerState::durable_idempotency_swept(self)
    }

    fn idempotency_sweep(&self) -> u64 {
        crate::clock::millis(self.host().config().budgets.idempotency_sweep)
    }

    fn activate(
        &self,
        record: &TokenRecord,
    ) -> impl Future<Output = Result<bool, ApiError>> + Send {
        activate(self, record)
    }

    fn with_revocation<F>(&self, tid: &str, work: F) -> impl Future<Output = Reply> + Send
    where
        F: Future<Output = Reply> + Send,
    {
        with_revocation(self, tid, work)
    }

    async fn actions_now(&self, id: &str) -> Vec<Action> {
        match self.host().load_session(id).await {
            Some(s) => s.list_actions().unwrap_or_default(),
            None => Vec::new(),
        }
    }
}
