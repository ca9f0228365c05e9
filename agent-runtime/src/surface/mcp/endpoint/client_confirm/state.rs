//! The `requestState` of a 2026-07-28 confirmation (`docs/mcp.md` §Confirmation in the
//! client): what it binds (the proposal, its session, the asking token, an expiry), sealed
//! with HMAC-SHA256 under a key derived from the server's identity key
//! ([`crate::security::Sealer`]), and the checks of one a client gives back.

use serde::{Deserialize, Serialize};

use crate::security::{IdentityKey, Sealer};

/// What the key is derived for: no other sealed value opens as a `requestState`.
const PURPOSE: &str = "agent-runtime/mcp/confirm-request-state";
/// The format's version, the sealed value's first field.
const VERSION: &str = "c1";

/// What a `requestState` binds, compact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Claims {
    /// The proposal's `confirmId`.
    #[serde(rename = "c")]
    pub confirm_id: String,
    /// The session it was proposed in.
    #[serde(rename = "s")]
    pub session: String,
    /// The agent token that proposed it (and only it may answer).
    #[serde(rename = "t")]
    pub tid: String,
    /// When it expires, in the server clock's milliseconds.
    #[serde(rename = "e")]
    pub expires_ms: u64,
}

/// Why a `requestState` was refused; nothing was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Not made by this server, or changed: its MAC does not verify.
    Tampered,
    /// Past its expiry.
    Expired,
    /// Made for another agent token.
    Foreign,
}

impl Refusal {
    /// The text the tool error shows.
    pub(super) fn text(&self) -> &'static str {
        match self {
            Refusal::Tampered => {
                "requestState refused: it does not verify (changed, not made \
                by this server, or made before its key changed). Nothing was decided; call the \
                tool again to be asked again, or let the user decide in the app's console."
            }
            Refusal::Expired => {
                "requestState refused: it expired. Nothing was decided; call \
                the tool again to be asked again, or let the user decide in the app's console."
            }
            Refusal::Foreign => {
                "requestState refused: it was issued to another agent token. \
                Nothing was decided."
            }
        }
    }
}

/// Seals and opens confirmation `requestState`s.
pub(super) struct StateSeal {
    sealer: Sealer,
}

impl StateSeal {
    /// The seal under the server's identity key `key`.
    pub(super) fn new(key: &IdentityKey) -> Self {
        StateSeal {
            sealer: Sealer::new(key, PURPOSE, VERSION),
        }
    }

    /// `claims`, sealed.
    pub(super) fn seal(&self, claims: &Claims) -> String {
        // A struct of strings and a number always serializes.
        let payload = serde_json::to_vec(claims).unwrap_or_default();
        self.sealer.seal(&payload)
    }

    /// The claims of `sealed` when it verifies, was made for token `tid` and has not expired
    /// at `now_ms`.
    pub(super) fn open(&self, sealed: &str, tid: &str, now_ms: u64) -> Result<Claims, Refusal> {
        let payload = self.sealer.open(sealed).ok_or(Refusal::Tampered)?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| Refusal::Tampered)?;
        if claims.tid != tid {
            return Err(Refusal::Foreign);
        }
        if now_ms >= claims.expires_ms {
            return Err(Refusal::Expired);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            confirm_id: "c-1".into(),
            session: "s-1".into(),
            tid: "tid-a".into(),
            expires_ms: 1_000,
        }
    }

    #[test]
    fn binds_token_and_expiry() {
        let seal = StateSeal::new(&IdentityKey::new([7u8; 32]).expect("key"));
        let sealed = seal.seal(&claims());
        assert_eq!(seal.open(&sealed, "tid-a", 999), Ok(claims()));
        assert_eq!(seal.open(&sealed, "tid-a", 1_000), Err(Refusal::Expired));
        assert_eq!(seal.open(&sealed, "tid-b", 0), Err(Refusal::Foreign));
        let other = StateSeal::new(&IdentityKey::new([8u8; 32]).expect("key"));
        assert_eq!(other.open(&sealed, "tid-a", 0), Err(Refusal::Tampered));
        assert_eq!(
            seal.open(&format!("{sealed}x"), "tid-a", 0),
            Err(Refusal::Tampered)
        );
    }
}
