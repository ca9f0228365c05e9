//! The token life cycle in one place (`docs/lap.md` §2.4, `docs/pairing.md` §Token / session
//! lifecycle): every surface that changes a token record calls one of these steps, and each
//! step is one conditional write of the [`TokenStore`] ([`TokenChange`]).
//!
//! ```text
//! mint ──► awaiting-ws ──socket──► awaiting-claude ──first success──► active
//!            (paired)                    ▲   │                        │
//!                                        │   └──────socket closes─────┴──► pending-resume
//!                                        └─socket back (out of grace)──────┘   │
//!                                                     socket back in grace / claim ──► active
//! any status ──revoke──► revoked (final)
//! ```
//!
//! The rules: a revoke is the one unconditional status write and always wins; no step ever
//! leaves `revoked` (a step that lost the race to a revoke answers
//! [`LifecycleError::Revoked`], and the caller answers 403); a store that fails answers
//! [`LifecycleError::Store`], which the caller answers as an error, never as success.

use tea_agent_schema::protocol::ErrorCode;

use super::store_error::StoreError;
use super::token_record::{TokenRecord, TokenStatus};
use super::token_store::{TokenChange, TokenStore};

/// Why a life-cycle step did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LifecycleError {
    /// The token was revoked (before, or while, the step ran).
    #[error("the token was revoked")]
    Revoked,
    /// The record is gone (swept after expiry) or was never stored.
    #[error("the token is unknown")]
    Unknown,
    /// The record is in a status the step does not start from (a claim of a record that
    /// is no longer `pending-resume`, say).
    #[error("the token is {0}")]
    Moved(TokenStatus),
    /// The store failed: nothing is known to have changed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The detail of a store failure on the wire: the database's own text goes to the log only.
pub(crate) const STORE_FAILED_DETAIL: &str =
    "the token store failed; nothing was changed (try again)";

impl LifecycleError {
    /// The error code a caller answers it with (`ApiError`'s `From` reads it).
    pub(crate) fn code(&self) -> ErrorCode {
        match self {
            LifecycleError::Revoked => ErrorCode::Revoked,
            LifecycleError::Unknown => ErrorCode::AuthFailed,
            LifecycleError::Moved(_) => ErrorCode::Conflict,
            LifecycleError::Store(_) => ErrorCode::Internal,
        }
    }

    /// The detail a caller answers it with; a store failure's own text is logged here and
    /// never answered.
    pub(crate) fn detail(&self) -> Option<String> {
        match self {
            LifecycleError::Moved(status) => Some(format!("the token is {status}")),
            LifecycleError::Store(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "token store: {e}");
                Some(STORE_FAILED_DETAIL.to_owned())
            }
            _ => None,
        }
    }
}

/// The statuses a live (unrevoked) record can have.
#[cfg_attr(not(feature = "pairing"), allow(dead_code))]
const LIVE: [TokenStatus; 4] = [
    TokenStatus::AwaitingWs,
    TokenStatus::AwaitingClaude,
    TokenStatus::Active,
    TokenStatus::PendingResume,
];

/// Applies `change` to `tid`, and when it did not apply, says why from the record as it is now.
async fn conditional(
    tokens: &dyn TokenStore,
    tid: &str,
    change: &TokenChange,
) -> Result<(), LifecycleError> {
    if tokens.change(tid, change).await? {
        return Ok(());
    }
    match tokens.find_by_tid(tid).await? {
        None => Err(LifecycleError::Unknown),
        Some(r) if r.status == TokenStatus::Revoked => Err(LifecycleError::Revoked),
        Some(r) => Err(LifecycleError::Moved(r.status)),
    }
}

/// Stores a minted record (before its token is handed out: a mint whose record was not stored
/// answers an error, never a token).
pub(crate) async fn store_minted(
    tokens: &dyn TokenStore,
    record: TokenRecord,
) -> Result<(), LifecycleError> {
    tokens.create(record).await?;
    Ok(())
}

/// A success within this long of the `lastSeenAt` its caller's record had is not written
/// (`docs/lap.md` §2.4): the sliding expiry is kept to the second, and a busy token costs the
/// store one write a second instead of one per call.
pub(crate) const TOUCH_EVERY_MS: u64 = 1_000;

/// The success tail of a call: `awaiting-claude` → `active` (with its label) on the first
/// success, a touch otherwise (unless the record was seen within [`TOUCH_EVERY_MS`]). Answers
/// whether this call activated the token (a paired app is then told). A token revoked
/// meanwhile stays revoked: [`LifecycleError::Revoked`].
pub(crate) async fn activate(
    tokens: &dyn TokenStore,
    record: &TokenRecord,
    now: u64,
) -> Result<bool, LifecycleError> {
    if record.status == TokenStatus::AwaitingClaude {
        let mut change = TokenChange::new(&[TokenStatus::AwaitingClaude], TokenStatus::Active);
        change.label = Some(record.activation_label().to_owned());
        change.last_seen_at = Some(now);
        match conditional(tokens, &record.tid, &change).await {
            Ok(()) => return Ok(true),
            // Activated by a concurrent call, or its paired app moved it meanwhile (the call
            // itself succeeded): a touch, as below.
            Err(LifecycleError::Moved(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if now.saturating_sub(record.last_seen_at) >= TOUCH_EVERY_MS {
        touch(tokens, &record.tid, now).await?;
    }
    Ok(false)
}

/// Records a use of `tid` at `now` (`lastSeenAt` only; never a status).
pub(crate) async fn touch(tokens: &dyn TokenStore, tid: &str, now: u64) -> Result<(), StoreError> {
    tokens.touch(tid, now).await
}

/// A paired app's socket was accepted for `tid`: back to `active` when it came back within
/// its grace window (`resumed`), else `awaiting-claude` until the agent's first success.
/// Answers the record as it is after the change.
#[cfg_attr(not(feature = "pairing"), allow(dead_code))]
pub(crate) async fn socket_opened(
    tokens: &dyn TokenStore,
    tid: &str,
    resumed: bool,
) -> Result<TokenRecord, LifecycleError> {
    let change = if resumed {
        TokenChange::new(&[TokenStatus::PendingResume], TokenStatus::Active)
    } else {
        TokenChange::new(&LIVE, TokenStatus::AwaitingClaude)
    };
    conditional(tokens, tid, &change).await?;
    tokens
        .find_by_tid(tid)
        .await?
        .ok_or(LifecycleError::Unknown)
}

/// The current socket of `tid` closed: `pending-resume` until `until` (the grace window).
#[cfg_attr(not(feature = "pairing"), allow(dead_code))]
pub(crate) async fn socket_closed(
    tokens: &dyn TokenStore,
    tid: &str,
    until: u64,
) -> Result<(), LifecycleError> {
    let mut change = TokenChange::new(&LIVE, TokenStatus::PendingResume);
    change.pending_resume_until = Some(until);
    conditional(tokens, tid, &change).await
}

/// The owner claimed a `pending-resume` record: its bearer is rotated to `new_hash` (the old
/// token then answers 401) and it is `active` again. A record that left `pending-resume`
/// meanwhile (revoked, or its app came back) is not claimed.
#[cfg_attr(not(feature = "pairing"), allow(dead_code))]
pub(crate) async fn claim(
    tokens: &dyn TokenStore,
    tid: &str,
    new_hash: String,
    now: u64,
) -> Result<(), LifecycleError> {
    let mut change = TokenChange::new(&[TokenStatus::PendingResume], TokenStatus::Active);
    change.token_hash = Some(new_hash);
    change.last_seen_at = Some(now);
    conditional(tokens, tid, &change).await
}

/// Revokes `tid` (final, and it always wins over a concurrent step). Answers whether a
/// record exists.
pub(crate) async fn revoke(tokens: &dyn TokenStore, tid: &str) -> Result<bool, StoreError> {
    tokens.revoke(tid).await
}

/// Deletes the records expired for longer than `retention_ms` (a mint's housekeeping).
pub(crate) async fn sweep_expired(
    tokens: &dyn TokenStore,
    now: u64,
    retention_ms: u64,
) -> Result<usize, StoreError> {
    tokens.sweep_expired(now, retention_ms).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::token_store::InMemoryTokenStore;

    fn minted(status: TokenStatus) -> (InMemoryTokenStore, TokenRecord) {
        let tokens = InMemoryTokenStore::new();
        let mut record = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        record.status = status;
        tokens.create(record.clone()).unwrap();
        (tokens, record)
    }

    #[tokio::test]
    async fn activation_after_a_revoke_leaves_it_revoked() {
        let (tokens, record) = minted(TokenStatus::AwaitingClaude);
        tokens.revoke(&record.tid);
        assert_eq!(
            activate(&tokens, &record, 5).await,
            Err(LifecycleError::Revoked)
        );
        let stored = tokens.find_by_tid(&record.tid).unwrap();
        assert_eq!(stored.status, TokenStatus::Revoked);
    }

    #[tokio::test]
    async fn activation_sets_active_once_then_touches() {
        let (tokens, record) = minted(TokenStatus::AwaitingClaude);
        assert_eq!(activate(&tokens, &record, 5).await, Ok(true));
        // A second call that read the record before the first activation only touches.
        assert_eq!(activate(&tokens, &record, 1_009).await, Ok(false));
        let stored = tokens.find_by_tid(&record.tid).unwrap();
        assert_eq!(stored.status, TokenStatus::Active);
        assert_eq!(stored.label.as_deref(), Some("agent"));
        assert_eq!(stored.last_seen_at, 1_009);
    }

    /// A success within a second of the `lastSeenAt` the caller's record had writes nothing;
    /// one a second later touches.
    #[tokio::test]
    async fn touches_are_written_at_most_once_a_second() {
        let (tokens, mut record) = minted(TokenStatus::Active);
        record.last_seen_at = 10_000;
        tokens.touch(&record.tid, 10_000);
        assert_eq!(activate(&tokens, &record, 10_999).await, Ok(false));
        assert_eq!(
            tokens.find_by_tid(&record.tid).unwrap().last_seen_at,
            10_000
        );
        assert_eq!(activate(&tokens, &record, 11_000).await, Ok(false));
        assert_eq!(
            tokens.find_by_tid(&record.tid).unwrap().last_seen_at,
            11_000
        );
    }

    #[tokio::test]
    async fn pairing_steps_never_leave_revoked() {
        let (tokens, record) = minted(TokenStatus::AwaitingWs);
        let tid = &record.tid;
        let opened = socket_opened(&tokens, tid, false).await.unwrap();
        assert_eq!(opened.status, TokenStatus::AwaitingClaude);
        socket_closed(&tokens, tid, 50).await.unwrap();
        let stored = tokens.find_by_tid(tid).unwrap();
        assert_eq!(stored.pending_resume_until, Some(50));
        assert_eq!(
            socket_opened(&tokens, tid, true).await.unwrap().status,
            TokenStatus::Active
        );
        tokens.revoke(tid);
        for result in [
            socket_opened(&tokens, tid, false).await.map(|_| ()),
            socket_opened(&tokens, tid, true).await.map(|_| ()),
            socket_closed(&tokens, tid, 99).await,
            claim(&tokens, tid, "h2".into(), 1).await,
        ] {
            assert_eq!(result, Err(LifecycleError::Revoked));
        }
        let stored = tokens.find_by_tid(tid).unwrap();
        assert_eq!(stored.status, TokenStatus::Revoked);
        assert_eq!(stored.token_hash, "h");
    }

    #[tokio::test]
    async fn a_claim_rotates_the_hash_only_from_pending_resume() {
        let (tokens, record) = minted(TokenStatus::Active);
        let tid = &record.tid;
        assert_eq!(
            claim(&tokens, tid, "h2".into(), 1).await,
            Err(LifecycleError::Moved(TokenStatus::Active))
        );
        socket_closed(&tokens, tid, 50).await.unwrap();
        claim(&tokens, tid, "h2".into(), 7).await.unwrap();
        assert!(tokens.find_by_token_hash("h").is_none());
        let stored = tokens.find_by_token_hash("h2").unwrap();
        assert_eq!(stored.status, TokenStatus::Active);
        assert_eq!(stored.pending_resume_until, None);
        assert_eq!(stored.last_seen_at, 7);
        assert_eq!(
            claim(&tokens, "nope", "h3".into(), 1).await,
            Err(LifecycleError::Unknown)
        );
    }
}
