//! PKCE (RFC 7636) with S256 only, as OAuth 2.1 and the MCP authorization specification ask:
//! `plain` is refused, so a code intercepted on its way to the client is useless without the
//! verifier that never left it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The one method accepted.
pub(crate) const S256: &str = "S256";

/// Whether `verifier` has RFC 7636's shape: 43 to 128 characters of `[A-Za-z0-9-._~]`.
pub(crate) fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len()) && verifier.bytes().all(unreserved)
}

/// Whether `challenge` is the shape of an S256 challenge: 43 characters of base64url.
pub(crate) fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Whether `verifier` answers `challenge`: `BASE64URL(SHA256(verifier)) == challenge`,
/// compared in constant time.
pub(crate) fn verifies(verifier: &str, challenge: &str) -> bool {
    if !valid_verifier(verifier) {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    computed.len() == challenge.len()
        && computed
            .bytes()
            .zip(challenge.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_verifier(verifier));
        assert!(valid_challenge(challenge));
        assert!(verifies(verifier, challenge));
        assert!(!verifies(
            verifier,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"
        ));
        assert!(!verifies(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj",
            challenge
        ));
    }

    #[test]
    fn shapes_are_checked() {
        assert!(!valid_verifier("short"));
        assert!(!valid_verifier(&"a".repeat(129)));
        assert!(!valid_verifier(&format!("{}!", "a".repeat(43))));
        assert!(valid_verifier(&"a~._-".repeat(10)));
        assert!(!valid_challenge("plain-challenge"));
        assert!(!valid_challenge(&"+".repeat(43)));
        // A plain challenge (the verifier itself) never verifies as S256.
        let verifier = "a".repeat(43);
        assert!(!verifies(&verifier, &verifier));
    }
}
