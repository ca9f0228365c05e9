//! What the OAuth tests share across their binaries (`tests/mcp/oauth*.rs`,
//! `tests/console_browser/consent.rs`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// A PKCE pair: `(verifier, S256 challenge)` (RFC 7636), the verifier fresh each time.
pub fn pkce() -> (String, String) {
    let verifier = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}
