//! Sealed values: a payload a client carries and gives back, authenticated with HMAC-SHA256
//! under a key derived from the server's identity key, so a value the server did not make, or
//! one changed by a single bit, never opens. Format: `<version>.<base64url(payload)>.
//! <base64url(tag)>`, the tag over the version, a NUL and the payload. Integrity only: the
//! payload is readable by whoever holds the value; never put a secret in it.
//!
//! The MCP surface seals its 2026-07-28 `requestState` with it (`docs/security.md`
//! §Confirmation in the MCP client).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::identity::IdentityKey;

type HmacSha256 = Hmac<Sha256>;

/// A key that seals and opens the values of one purpose.
pub(crate) struct Sealer {
    key: [u8; 32],
    version: &'static str,
}

impl Sealer {
    /// The sealer of `purpose` (a fixed label; values sealed for one purpose never open for
    /// another), its values marked `version`, keyed by `HMAC(identity key, purpose)`: a server
    /// whose identity key is stored (durable stores) opens its values after a restart and on
    /// every replica; with a per-process key a restart refuses them.
    pub(crate) fn new(identity: &IdentityKey, purpose: &str, version: &'static str) -> Self {
        Sealer {
            key: derive(identity.as_bytes(), purpose),
            version,
        }
    }

    /// `payload`, sealed.
    pub(crate) fn seal(&self, payload: &[u8]) -> String {
        let tag = self.mac(payload).finalize().into_bytes();
        format!(
            "{}.{}.{}",
            self.version,
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The payload of `sealed` when this key sealed it (the tag compared in constant time);
    /// `None` for anything else.
    pub(crate) fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        let (version, rest) = sealed.split_once('.')?;
        let (payload, tag) = rest.split_once('.')?;
        if version != self.version {
            return None;
        }
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        self.mac(&payload).verify_slice(&tag).ok()?;
        Some(payload)
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut mac = keyed(&self.key);
        mac.update(self.version.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac
    }
}

/// `HMAC-SHA256(key, label)`.
fn derive(key: &[u8], label: &str) -> [u8; 32] {
    let mut mac = keyed(key);
    mac.update(label.as_bytes());
    mac.finalize().into_bytes().into()
}

fn keyed(key: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer(byte: u8, purpose: &str) -> Sealer {
        let key = IdentityKey::new([byte; 32]).expect("key");
        Sealer::new(&key, purpose, "v1")
    }

    #[test]
    fn opens_its_own_values_only() {
        let s = sealer(1, "a");
        let sealed = s.seal(b"{\"c\":\"x\"}");
        assert_eq!(s.open(&sealed).as_deref(), Some(&b"{\"c\":\"x\"}"[..]));
        // Another key, another purpose, another version: refused.
        assert!(sealer(2, "a").open(&sealed).is_none());
        assert!(sealer(1, "b").open(&sealed).is_none());
        assert!(s.open(&sealed.replacen("v1", "v2", 1)).is_none());
        // One changed character of the payload or the tag: refused.
        let (head, tag) = sealed.rsplit_once('.').expect("tag");
        let other = URL_SAFE_NO_PAD.encode(b"{\"c\":\"y\"}");
        assert!(s.open(&format!("v1.{other}.{tag}")).is_none());
        let mut bytes = tag.as_bytes().to_vec();
        bytes[0] = if bytes[0] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(bytes).expect("ascii");
        assert!(s.open(&format!("{head}.{flipped}")).is_none());
        for junk in ["", "v1", "v1.", "v1..", "v1.!.!", "v1.e30"] {
            assert!(s.open(junk).is_none(), "{junk}");
        }
    }
}
