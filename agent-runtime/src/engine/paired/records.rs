//! Pairing records: which token ids drive a paired session, and the token life cycle of
//! `docs/pairing.md` (`awaiting-ws` → `awaiting-claude` → `active` → `pending-resume` → re-pair or
//! claim, `revoked` at any time).
//!
//! Everything lives in the [`TokenStore`](crate::security::TokenStore), so a durable token
//! store keeps the whole life cycle across restarts with no store of its own: a paired token is
//! one whose session id is a paired session id ([`PAIRED_SESSION_PREFIX`], given at mint), and
//! its status changes are the steps of `security::lifecycle` (conditional writes: a revoke
//! always wins).

use crate::security::{TokenRecord, TokenStatus};

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

/// Whether a `pending-resume` record is still inside its grace window at `now`.
pub(crate) fn within_grace(record: &TokenRecord, now: u64) -> bool {
    record.status == TokenStatus::PendingResume
        && record.pending_resume_until.is_some_and(|until| until > now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_ends_at_its_deadline() {
        let mut r = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        r.status = TokenStatus::PendingResume;
        r.pending_resume_until = Some(50);
        assert!(within_grace(&r, 49));
        assert!(!within_grace(&r, 50));
        r.status = TokenStatus::Active;
        assert!(!within_grace(&r, 49));
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
