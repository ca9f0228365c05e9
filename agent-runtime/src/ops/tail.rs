//! The two steps every successful or long call shares, whatever its path: activation of the
//! token (`awaiting-claude` → `active`, else a touch) and the race against its revocation
//! (→ 403 `revoked`).

use super::error::ApiError;
use super::reply::Reply;
use super::state::ServerState;
use crate::app::App;
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
