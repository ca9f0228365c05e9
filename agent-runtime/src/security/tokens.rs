//! Agent bearer tokens: format, hash and verification (docs/lap.md §2); the record they verify to
//! is `token_record`.
//!
//! A token is `agt_` followed by the unpadded base64url form of 32 CSPRNG bytes (47 chars). Only
//! its SHA-256 hash is stored; the token itself is handed out once, by mint, wrapped in
//! [`SecretToken`] whose `Debug` never shows it.

use std::fmt;
use tea_agent_schema::protocol::ErrorCode;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;
use sha2::{Digest, Sha256};

use super::token_record::{TokenRecord, TokenStatus};
use super::token_store::TokenStore;

/// The prefix of every agent token.
pub(super) const TOKEN_PREFIX: &str = "agt_";

/// A freshly minted agent token. `Debug` and `Display` are redacted; read it with
/// [`SecretToken::expose`] only to put it into the mint answer.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SecretToken(String);

impl SecretToken {
    /// The token text, to be returned exactly once to the minting caller.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretToken(agt_<redacted>)")
    }
}

impl fmt::Display for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("agt_<redacted>")
    }
}

/// Mints a new token: `(token, hash)` where the hash is [`token_hash_of`] the token.
pub(crate) fn mint_token() -> (SecretToken, String) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let hash = sha256_hex(&token);
    (SecretToken(token), hash)
}

/// The stored hash of a token: lowercase hex SHA-256 of the whole string, prefix included.
/// `None` when `token` does not start with `agt_` (nothing is hashed then); any other `agt_…`
/// string is hashed without further checks.
pub(super) fn token_hash_of(token: &str) -> Option<String> {
    token.starts_with(TOKEN_PREFIX).then(|| sha256_hex(token))
}

/// Lowercase hex SHA-256 of `text`.
pub(crate) fn sha256_hex(text: &str) -> String {
    // Into a buffer of its size: `hex::encode` collects characters one by one.
    let mut hex = [0u8; 64];
    match hex::encode_to_slice(Sha256::digest(text.as_bytes()), &mut hex) {
        // Hex digits are ASCII: `from_utf8` only checks them (the lossy form walks them in
        // chunks and showed in the read path's profile).
        Ok(()) => String::from_utf8(hex.to_vec()).unwrap_or_default(),
        Err(_) => unreachable!("a SHA-256 digest is 32 bytes, 64 hex digits"),
    }
}

/// Why a token that verified once no longer does (docs/lap.md §2.5): told to whoever presents
/// it, as the `reason` of its 401 (only the holder of the token itself learns it, so it tells
/// a prober nothing that the token does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lapse {
    /// Past its hard expiry (`ServerOptions::hard_expiry` after mint): `expired`.
    Expired,
    /// Unused longer than the sliding TTL (`ServerOptions::sliding_ttl`): `idle`.
    Idle,
}

impl Lapse {
    /// The wire spelling, the `reason` of the 401 (`expired` is LLui's word for it).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Lapse::Expired => "expired",
            Lapse::Idle => "idle",
        }
    }

    /// The detail of the 401: what happened and what the agent does about it.
    pub(crate) fn detail(self) -> &'static str {
        match self {
            Lapse::Expired => {
                "the token reached its hard expiry; ask the user for a new token (a mint)"
            }
            Lapse::Idle => {
                "the token was unused longer than the server's sliding TTL; ask the user for a new \
                 token (a mint, or the token a claim of the paired session gave)"
            }
        }
    }
}

/// Why a bearer token was refused (docs/lap.md §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AuthError {
    /// Missing or malformed header, unknown token: 401 `auth-failed`.
    #[error("auth-failed")]
    AuthFailed,
    /// A token past its hard expiry or idle past the sliding TTL: 401 `auth-failed` with the
    /// reason.
    #[error("auth-failed ({})", .0.as_str())]
    Lapsed(Lapse),
    /// The token was revoked: 403 `revoked`.
    #[error("revoked")]
    Revoked,
    /// The token store failed while looking the token up: 500 `internal` (neither a grant
    /// nor a claim that the token is unknown).
    #[error("the token store failed")]
    StoreFailed,
}

impl AuthError {
    /// Its error code, which gives its status (answered as an `ApiError`, whose `From` reads
    /// it).
    pub(crate) fn code(&self) -> ErrorCode {
        match self {
            AuthError::AuthFailed | AuthError::Lapsed(_) => ErrorCode::AuthFailed,
            AuthError::Revoked => ErrorCode::Revoked,
            AuthError::StoreFailed => ErrorCode::Internal,
        }
    }
}

impl AuthError {
    /// Whether the credential itself was refused (401 or 403), which counts against the client
    /// address; a store failure is not the caller's. (Asked by MCP's `initialize` and the
    /// pairing socket.)
    #[cfg_attr(not(any(feature = "mcp", feature = "pairing")), allow(dead_code))]
    pub(crate) fn refused_credential(&self) -> bool {
        !matches!(self, AuthError::StoreFailed)
    }
}

/// Verifies the value of an `Authorization` header (docs/lap.md §2.5) and answers the token's
/// record, as the store holds it (one lookup: callers need not find it again).
///
/// First failure wins: no `Bearer ` prefix (case-sensitive), no `agt_` token, no record, hard
/// → `AuthFailed`; hard expiry (`expiresAt <= now`) → `Lapsed(Expired)`, sliding TTL
/// (`lastSeenAt + slidingTtlMs < now`) → `Lapsed(Idle)`; a revoked record → `Revoked`, so an `Ok` record is never revoked. `sliding_ttl` of `None`
/// or `Some(0)` disables the sliding TTL (a configuration of zero or less means off). Nothing
/// is modified.
pub(crate) async fn verify_bearer(
    authorization_header: Option<&str>,
    store: &dyn TokenStore,
    now: u64,
    sliding_ttl: Option<u64>,
) -> Result<TokenRecord, AuthError> {
    let token = authorization_header
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| refused("missing"))?;
    let hash = token_hash_of(token).ok_or_else(|| refused("malformed"))?;
    let record = store
        .find_by_token_hash(&hash)
        .await
        .map_err(lookup_failed)?;
    check_record(record, now, sliding_ttl)
}

/// A credential refused 401 `auth-failed` for `reason`, counted (`docs/operations.md`
/// §Metrics and traces).
pub(super) fn refused(reason: &'static str) -> AuthError {
    crate::telemetry::auth_failure(reason);
    AuthError::AuthFailed
}

/// A token refused 401 `auth-failed` because it lapsed, counted under its reason.
fn lapsed(lapse: Lapse) -> AuthError {
    crate::telemetry::auth_failure(lapse.as_str());
    AuthError::Lapsed(lapse)
}

/// Verifies an in-process trusted credential: the token id `tid` of a binding this server
/// made earlier from a verified bearer (an MCP session bound with `connect_session`, rebuilt
/// after a restart; the raw token is never stored). The same checks as [`verify_bearer`]
/// after the lookup: no record → `AuthFailed`, hard expiry, sliding TTL → `Lapsed`; revoked →
/// `Revoked`.
#[cfg(feature = "mcp")]
pub(crate) async fn verify_tid(
    tid: &str,
    store: &dyn TokenStore,
    now: u64,
    sliding_ttl: Option<u64>,
) -> Result<TokenRecord, AuthError> {
    let record = store.find_by_tid(tid).await.map_err(lookup_failed)?;
    check_record(record, now, sliding_ttl)
}

/// A failed lookup: logged for the operator, answered as [`AuthError::StoreFailed`].
pub(super) fn lookup_failed(e: super::StoreError) -> AuthError {
    tracing::error!(target: "tea_agent_runtime::store", "token lookup failed: {e}");
    AuthError::StoreFailed
}

pub(super) fn check_record(
    record: Option<TokenRecord>,
    now: u64,
    sliding_ttl: Option<u64>,
) -> Result<TokenRecord, AuthError> {
    let record = record.ok_or_else(|| refused("unknown"))?;
    if record.expires_at <= now {
        return Err(lapsed(Lapse::Expired));
    }
    if let Some(ttl) = sliding_ttl.filter(|ttl| *ttl > 0) {
        if record.last_seen_at.saturating_add(ttl) < now {
            return Err(lapsed(Lapse::Idle));
        }
    }
    if record.status == TokenStatus::Revoked {
        crate::telemetry::auth_failure("revoked");
        return Err(AuthError::Revoked);
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::token_record::TOKEN_TTL_MS;
    use crate::security::token_store::InMemoryTokenStore;

    #[test]
    fn minted_token_format_and_hash() {
        let (token, hash) = mint_token();
        let text = token.expose();
        assert!(text.starts_with("agt_"));
        assert_eq!(text.len(), 47);
        assert!(text[4..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(URL_SAFE_NO_PAD.decode(&text[4..]).unwrap().len(), 32);
        assert_eq!(hash.len(), 64);
        assert!(hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        let expected: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hash, expected);
        assert_eq!(token_hash_of(text).as_deref(), Some(hash.as_str()));
        let (other, other_hash) = mint_token();
        assert_ne!(other.expose(), text);
        assert_ne!(other_hash, hash);
    }

    #[test]
    fn known_hash_vectors() {
        // Computed independently (sha256sum).
        assert_eq!(
            token_hash_of("agt_abc").unwrap(),
            "a51a27c49730321b2565c7b58fbb3208840b6a5ebc4404958a0014f3da091559"
        );
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn token_hash_of_requires_prefix() {
        assert_eq!(token_hash_of("not-a-token"), None);
        assert_eq!(token_hash_of("Bearer xyz"), None);
        assert_eq!(token_hash_of(""), None);
        assert_eq!(token_hash_of("AGT_x"), None);
        assert!(token_hash_of("agt_x").is_some());
        assert!(token_hash_of("agt_ anything at all").is_some());
    }

    #[test]
    fn secret_token_is_redacted() {
        let (token, _) = mint_token();
        let debug = format!("{token:?}");
        let display = format!("{token}");
        assert!(!debug.contains(&token.expose()[4..]));
        assert!(!display.contains(&token.expose()[4..]));
    }

    #[test]
    fn minted_record_shape() {
        let record = TokenRecord::minted(
            "h".into(),
            Some("user-1".into()),
            "s1".into(),
            "https://app.example".into(),
            1_000,
        );
        assert!(uuid::Uuid::parse_str(&record.tid).is_ok());
        assert_eq!(record.status, TokenStatus::AwaitingClaude);
        assert_eq!(record.created_at, 1_000);
        assert_eq!(record.last_seen_at, 1_000);
        assert_eq!(record.expires_at, 1_000 + 86_400_000);
        assert_eq!(record.label, None);
        assert_eq!(record.activation_label(), "agent");
        let json = serde_json::to_value(&record).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "tid",
                "tokenHash",
                "uid",
                "sessionId",
                "kind",
                "status",
                "createdAt",
                "expiresAt",
                "lastSeenAt",
                "pendingResumeUntil",
                "origin",
                "label"
            ]
        );
        assert_eq!(json["kind"], "hosted");
        assert_eq!(json["status"], "awaiting-claude");
        assert_eq!(json["pendingResumeUntil"], serde_json::Value::Null);
        let back: TokenRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn status_spellings() {
        for (status, text) in [
            (TokenStatus::AwaitingWs, "awaiting-ws"),
            (TokenStatus::AwaitingClaude, "awaiting-claude"),
            (TokenStatus::Active, "active"),
            (TokenStatus::PendingResume, "pending-resume"),
            (TokenStatus::Revoked, "revoked"),
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), text);
            assert_eq!(status.as_str(), text);
        }
    }

    #[test]
    fn agent_session_wire_form() {
        let mut record = TokenRecord::minted("h".into(), None, "s9".into(), "http://x".into(), 5);
        let wire = serde_json::to_string(&record.to_agent_session()).unwrap();
        assert_eq!(
            wire,
            format!(
                r#"{{"tid":"{}","label":"(unknown)","status":"awaiting-claude","createdAt":5,"lastSeenAt":5,"sessionId":"s9"}}"#,
                record.tid
            )
        );
        record.label = Some("claude".into());
        assert_eq!(record.to_agent_session().label, "claude");
        assert_eq!(record.activation_label(), "claude");
    }

    fn store_with(now: u64) -> (InMemoryTokenStore, SecretToken, String) {
        let store = InMemoryTokenStore::new();
        let (token, hash) = mint_token();
        let record =
            TokenRecord::minted(hash, Some("u".into()), "s".into(), "http://h".into(), now);
        let tid = record.tid.clone();
        store.create(record).unwrap();
        (store, token, tid)
    }

    fn bearer(token: &SecretToken) -> String {
        format!("Bearer {}", token.expose())
    }

    /// `verify_bearer`, run to completion, answering the verified record's `tid`.
    fn verify(
        header: Option<&str>,
        store: &InMemoryTokenStore,
        now: u64,
        sliding_ttl: Option<u64>,
    ) -> Result<String, AuthError> {
        futures::executor::block_on(verify_bearer(header, store, now, sliding_ttl))
            .map(|record| record.tid)
    }

    #[test]
    fn verify_accepts_a_valid_token() {
        let (store, token, tid) = store_with(1_000);
        assert_eq!(
            verify(Some(&bearer(&token)), &store, 1_001, None),
            Ok(tid.clone())
        );
        // The answer is the stored record itself.
        let header = bearer(&token);
        let verified =
            futures::executor::block_on(verify_bearer(Some(&header), &store, 1_001, None));
        assert_eq!(verified.ok(), store.find_by_tid(&tid));
    }

    #[test]
    fn verify_refuses_missing_or_malformed_headers() {
        let (store, token, _) = store_with(1_000);
        let bare = token.expose().to_owned();
        for header in [
            None,
            Some(""),
            Some(bare.as_str()),
            Some(&*format!("bearer {bare}")),
            Some(&*format!("Bearer  {bare}")),
            Some(&*format!("Basic {bare}")),
            Some("Bearer xyz"),
            Some("Bearer agt_unknown"),
        ] {
            assert_eq!(
                verify(header, &store, 1_001, None),
                Err(AuthError::AuthFailed),
                "{header:?}"
            );
        }
    }

    #[test]
    fn verify_refuses_expired_tokens() {
        let (store, token, _) = store_with(0);
        let header = bearer(&token);
        assert!(verify(Some(&header), &store, TOKEN_TTL_MS - 1, None).is_ok());
        assert_eq!(
            verify(Some(&header), &store, TOKEN_TTL_MS, None),
            Err(AuthError::Lapsed(Lapse::Expired))
        );
    }

    #[test]
    fn verify_applies_the_sliding_ttl() {
        let (store, token, tid) = store_with(1_000);
        let header = bearer(&token);
        assert!(verify(Some(&header), &store, 1_500, Some(500)).is_ok());
        assert_eq!(
            verify(Some(&header), &store, 1_501, Some(500)),
            Err(AuthError::Lapsed(Lapse::Idle))
        );
        // Off when unset or zero.
        assert!(verify(Some(&header), &store, 50_000, None).is_ok());
        assert!(verify(Some(&header), &store, 50_000, Some(0)).is_ok());
        // A touch revives it.
        store.touch(&tid, 50_000);
        assert!(verify(Some(&header), &store, 50_400, Some(500)).is_ok());
    }

    #[test]
    fn verify_revoked_is_403_but_expiry_wins() {
        let (store, token, tid) = store_with(0);
        assert!(store.revoke(&tid));
        let header = bearer(&token);
        assert_eq!(
            verify(Some(&header), &store, 10, None),
            Err(AuthError::Revoked)
        );
        // First failure wins: an expired or idle revoked token says so.
        assert_eq!(
            verify(Some(&header), &store, TOKEN_TTL_MS, None),
            Err(AuthError::Lapsed(Lapse::Expired))
        );
        assert_eq!(
            verify(Some(&header), &store, 5_000, Some(1_000)),
            Err(AuthError::Lapsed(Lapse::Idle))
        );
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn verify_tid_applies_the_same_checks() {
        let (store, _, tid) = store_with(1_000);
        let by_tid = |tid: &str, now, ttl| {
            futures::executor::block_on(verify_tid(tid, &store, now, ttl)).map(|r| r.tid)
        };
        assert_eq!(by_tid(&tid, 1_001, None), Ok(tid.clone()));
        assert_eq!(by_tid("unknown", 1_001, None), Err(AuthError::AuthFailed));
        assert_eq!(
            by_tid(&tid, TOKEN_TTL_MS + 1_000, None),
            Err(AuthError::Lapsed(Lapse::Expired))
        );
        assert_eq!(
            by_tid(&tid, 2_001, Some(1_000)),
            Err(AuthError::Lapsed(Lapse::Idle))
        );
        assert!(store.revoke(&tid));
        assert_eq!(by_tid(&tid, 1_001, None), Err(AuthError::Revoked));
    }
}
