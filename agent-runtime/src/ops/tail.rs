//! The two steps every successful or long call shares, whatever its path: activation of the
//! token (`awaiting-claude` → `active`, else a touch) and the race against its revocation
//! (→ 403 `revoked`).

use super::error::ApiError;
use super::reply::Reply;
use super::state::ServerState;
use crate::app::App;
use crate::security::{TokenRecord, TokenStatus, DEFAULT_ACTIVE_LABEL};

/// Activation (`awaiting-claude` → `active`) or touch of a successful call.
pub(crate) async fn activate<A: App>(server: &ServerState<A>, record: &TokenRecord) {
    let now = server.now();
    if record.status == TokenStatus::AwaitingClaude {
        let label = record.label.as_deref().unwrap_or(DEFAULT_ACTIVE_LABEL);
        server.tokens().mark_active(&record.tid, label, now).await;
    } else {
        server.tokens().touch(&record.tid, now).await;
    }
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
        _ = wait_revoked => Reply::from_error(&ApiError::revoked()),
    }
}
