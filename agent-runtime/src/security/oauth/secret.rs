//! The OAuth secrets this server hands out (authorization codes, access and refresh tokens):
//! a prefix naming the kind and 32 CSPRNG bytes in unpadded base64url, as an `agt_` token.
//! Only the SHA-256 of the whole text is kept; the text is handed out once.

use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;

use crate::security::tokens::sha256_hex;

/// What a secret is, told by its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SecretKind {
    /// An authorization code (`oac_`): single use, short lived.
    Code,
    /// An access token (`oat_`): the bearer of `/agent/mcp`, short lived.
    Access,
    /// A refresh token (`ort_`): rotated on every use.
    Refresh,
}

impl SecretKind {
    /// The prefix of a secret of this kind.
    pub(crate) const fn prefix(self) -> &'static str {
        match self {
            SecretKind::Code => "oac_",
            SecretKind::Access => "oat_",
            SecretKind::Refresh => "ort_",
        }
    }
}

/// A secret just made. `Debug` and `Display` never show it; [`Secret::expose`] reads it to
/// put it into the one answer that hands it out.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    /// A new secret of `kind` and its stored hash.
    pub(crate) fn new(kind: SecretKind) -> (Secret, String) {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let text = format!("{}{}", kind.prefix(), URL_SAFE_NO_PAD.encode(bytes));
        let hash = sha256_hex(&text);
        (Secret(text), hash)
    }

    /// The secret's text, for the answer that hands it out.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The stored hash of a presented secret of `kind`: `None` when it does not carry the
/// kind's prefix (nothing is looked up then), or is longer than any secret made here.
pub(crate) fn hash_of(kind: SecretKind, presented: &str) -> Option<String> {
    (presented.starts_with(kind.prefix()) && presented.len() <= 128).then(|| sha256_hex(presented))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_carry_their_prefix_and_hash() {
        let (code, hash) = Secret::new(SecretKind::Code);
        assert!(code.expose().starts_with("oac_"));
        assert_eq!(code.expose().len(), 47);
        assert_eq!(hash_of(SecretKind::Code, code.expose()), Some(hash));
        assert_eq!(hash_of(SecretKind::Access, code.expose()), None);
        assert!(!format!("{code:?}").contains(&code.expose()[4..]));
        let (other, _) = Secret::new(SecretKind::Code);
        assert_ne!(other, code);
    }
}
