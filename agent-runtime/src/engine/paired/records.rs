//! Pairing records: which token ids drive a paired session, and the token life cycle of
//! `docs/pairing.md` (`awaiting-ws` → `awaiting-claude` → `active` → `pending-resume` → re-pair or
//! claim, `revoked` at any time).
//!
//! Everything lives in the [`TokenStore`](crate::security::TokenStore), so a durable token
//! store keeps the whole life cycle across restarts with no store of its own: a paired token is
//! one whose record is of kind [`SessionKind::Paired`] (set at mint), and its status changes are
//! the steps of `security::token_lifecycle` (conditional writes: a revoke always wins).

use crate::security::{SessionKind, TokenRecord, TokenStatus};

/// The prefix of the session id minted for a paired session. Only a readable name (and what a
/// version-4 migration recognises in records stored before the kind was a field): whether a
/// token is paired is its record's [`kind`](TokenRecord::kind).
const PAIRED_SESSION_PREFIX: &str = "paired-";

/// A new paired session id.
pub(crate) fn new_paired_session_id() -> String {
    format!("{PAIRED_SESSION_PREFIX}{}", uuid::Uuid::new_v4())
}

/// Whether `record` drives a paired session (as opposed to one hosted in this process).
pub(crate) fn drives_paired_session(record: &TokenRecord) -> bool {
    record.kind == SessionKind::Paired
}

/// Whether a `pending-resume` record is still inside its grace window at `now`.
pub(crate) fn within_grace(record: &TokenRecord, now: u64) -> bool {
    record.status == TokenStatus::PendingResume
        && record.pending_resume_until.is_some_and(|until| until > now)
}

/// Whether the owner can still claim a paired record at `now` (`docs/pairing.md` §Token /
/// session lifecycle): `pending-resume`, inside its grace window or past it, until its hard
/// expiry. The sliding TTL does not bound it: it bounds the bearer, which the claim replaces.
pub(crate) fn claimable(record: &TokenRecord, now: u64) -> bool {
    drives_paired_session(record)
        && record.status == TokenStatus::PendingResume
        && record.expires_at > now
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
    fn a_closed_paired_record_stays_claimable_past_its_grace_until_its_hard_expiry() {
        let mut r = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        r.kind = SessionKind::Paired;
        r.status = TokenStatus::PendingResume;
        r.pending_resume_until = Some(50);
        r.expires_at = 1_000;
        assert!(claimable(&r, 49));
        assert!(claimable(&r, 999), "past its grace");
        assert!(!claimable(&r, 1_000), "past its hard expiry");
        r.status = TokenStatus::Revoked;
        assert!(!claimable(&r, 49));
        r.status = TokenStatus::PendingResume;
        r.kind = SessionKind::Hosted;
        assert!(!claimable(&r, 49));
    }

    #[test]
    fn paired_records_are_known_by_their_kind_not_their_session_id() {
        let mut paired = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        paired.kind = SessionKind::Paired;
        assert!(drives_paired_session(&paired));
        let hosted = TokenRecord::minted(
            "h".into(),
            None,
            new_paired_session_id(),
            "http://x".into(),
            0,
        );
        assert!(!drives_paired_session(&hosted));
    }
}
