//! Pairing records: which token ids drive a paired session, and the token life cycle of
//! `docs/pairing.md` (`awaiting-ws` → `awaiting-claude` → `active` → `pending-resume` → re-pair or
//! claim, `revoked` at any time).
//!
//! Everything lives in the [`TokenStore`], so a durable token store keeps the whole life
//! cycle across restarts with no store of its own: a paired token is one whose session id is a
//! paired session id ([`PAIRED_SESSION_PREFIX`], given at mint), and status,
//! `pendingResumeUntil` and the token hash are changed by replacing the record
//! ([`TokenStore::create`] with the same `tid`).

use crate::security::{TokenRecord, TokenStatus, TokenStore};

/// The prefix of the session id minted for a paired session (the session lives in the app,
/// so no hosted session ever has it).
pub(crate) const PAIRED_SESSION_PREFIX: &str = "paired-";

/// A new paired session id.
pub(crate) fn new_paired_session_id() -> String {
    format!("{PAIRED_SESSION_PREFIX}{}", uuid::Uuid::new_v4())
}

/// Whether `record` drives a paired session (as opposed to one hosted in this process).
pub(crate) fn is_paired(record: &TokenRecord) -> bool {
    record.session_id.starts_with(PAIRED_SESSION_PREFIX)
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
    }

    #[test]
    fn paired_records_are_known_by_their_session_id() {
        let paired = TokenRecord::minted(
            "h".into(),
            None,
            new_paired_session_id(),
            "http://x".into(),
            0,
        );
        assert!(is_paired(&paired));
        let hosted = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        assert!(!is_paired(&hosted));
    }
}
