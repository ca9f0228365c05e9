//! The keys that sign and verify identity cookie values, and the value's format:
//! `<identity>.<issued-at seconds>.<base64url-nopad(HMAC-SHA256(key, identity NUL issued-at))>`.
//!
//! The issue time is signed with the identity, so a value is refused once it is older than the
//! cookie's `Max-Age`, whatever the browser still sends. The NUL separator keeps the signed text
//! apart from the one signed before issue times existed (`HMAC(key, identity)` over a cookie-safe
//! identity, which never contains NUL): a value of that old format never verifies.

use std::fmt;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore as _;
use sha2::Sha256;

use crate::security::error::ConfigError;

type HmacSha256 = Hmac<Sha256>;

/// The smallest accepted signing key, in bytes.
pub(crate) const MIN_IDENTITY_KEY_LEN: usize = 32;

/// How long an identity cookie is valid, in seconds: 30 days (also its `Max-Age`).
pub(crate) const IDENTITY_COOKIE_MAX_AGE_S: u64 = 2_592_000;

/// How far in the future an issue time may lie (another replica's clock running ahead), in
/// seconds.
const CLOCK_SKEW_S: u64 = 300;

/// The keys of the identity cookie: the current key, which signs new cookies, and previous keys,
/// which still verify the cookies they signed (a key rotation). Every key is at least 32 bytes.
/// `Debug` never shows them.
#[derive(Clone)]
pub struct IdentityKey {
    current: Arc<[u8]>,
    previous: Arc<[Arc<[u8]>]>,
}

impl IdentityKey {
    /// A key from bytes; fewer than 32 bytes (empty included) is a configuration error.
    pub fn new(bytes: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        let bytes = bytes.as_ref();
        if bytes.len() < MIN_IDENTITY_KEY_LEN {
            return Err(ConfigError::IdentityKeyTooShort(bytes.len()));
        }
        Ok(IdentityKey {
            current: Arc::from(bytes),
            previous: Arc::from([]),
        })
    }

    /// 32 bytes from a CSPRNG (the default: one key per process).
    pub fn random() -> Self {
        let mut bytes = [0u8; MIN_IDENTITY_KEY_LEN];
        rand::rng().fill_bytes(&mut bytes);
        IdentityKey {
            current: Arc::from(&bytes[..]),
            previous: Arc::from([]),
        }
    }

    /// This key, still accepting the cookies signed by `previous` (every key they hold, current
    /// and previous): rotate by making the new key current and passing the old one here, then
    /// drop it once its cookies have expired (30 days). A key equal to the current one is left
    /// out.
    pub fn with_previous(mut self, previous: impl IntoIterator<Item = IdentityKey>) -> Self {
        let mut keys: Vec<Arc<[u8]>> = self.previous.iter().cloned().collect();
        for key in previous {
            for bytes in std::iter::once(key.current).chain(key.previous.iter().cloned()) {
                if bytes != self.current && !keys.contains(&bytes) {
                    keys.push(bytes);
                }
            }
        }
        self.previous = Arc::from(keys);
        self
    }

    /// The current key's bytes (to store them where every replica reads them).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.current
    }

    /// How many previous keys still verify.
    #[cfg(test)]
    pub(crate) fn previous_count(&self) -> usize {
        self.previous.len()
    }

    /// The cookie value carrying `identity`, issued at `now_ms` (milliseconds since the Unix
    /// epoch, kept in whole seconds), signed with the current key:
    /// `<identity>.<issued-at seconds>.<signature>`.
    pub fn sign(&self, identity: &str, now_ms: u64) -> String {
        let issued = (now_ms / 1000).to_string();
        let signature = mac(&self.current, identity, &issued)
            .finalize()
            .into_bytes();
        format!("{identity}.{issued}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// The identity in a cookie value, when it is signed by the current or a previous key and
    /// was issued less than 30 days before `now_ms` (and at most 5 minutes after it). Splits at
    /// the last two dots (so identities may contain dots); the issue time must be decimal digits;
    /// the signature is base64url without padding, compared in constant time. Anything else
    /// (the old format without an issue time included) is none.
    pub fn verify(&self, value: &str, now_ms: u64) -> Option<String> {
        let (signed, signature) = value.rsplit_once('.')?;
        let (identity, issued) = signed.rsplit_once('.')?;
        if issued.is_empty() || !issued.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        let verified = std::iter::once(&self.current)
            .chain(self.previous.iter())
            .any(|key| mac(key, identity, issued).verify_slice(&signature).is_ok());
        if !verified {
            return None;
        }
        let issued_s: u64 = issued.parse().ok()?;
        let now_s = now_ms / 1000;
        let fresh = now_s < issued_s.saturating_add(IDENTITY_COOKIE_MAX_AGE_S)
            && issued_s <= now_s.saturating_add(CLOCK_SKEW_S);
        fresh.then(|| identity.to_owned())
    }
}

/// The HMAC of `identity` NUL `issued` under `key`.
fn mac(key: &[u8], identity: &str, issued: &str) -> HmacSha256 {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    mac.update(identity.as_bytes());
    mac.update(&[0]);
    mac.update(issued.as_bytes());
    mac
}

impl fmt::Debug for IdentityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IdentityKey(<{} bytes redacted>, {} previous)",
            self.current.len(),
            self.previous.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-26 00:00:00 UTC, in milliseconds.
    const NOW_MS: u64 = 1_795_651_200_000;
    const DAY_MS: u64 = 86_400_000;

    fn key(byte: u8) -> IdentityKey {
        IdentityKey::new([byte; 32]).unwrap()
    }

    #[test]
    fn key_length_rules() {
        assert_eq!(
            IdentityKey::new([0u8; 31]).unwrap_err(),
            ConfigError::IdentityKeyTooShort(31)
        );
        assert_eq!(
            IdentityKey::new(b"").unwrap_err(),
            ConfigError::IdentityKeyTooShort(0)
        );
        assert!(IdentityKey::new([0u8; 32]).is_ok());
        assert!(IdentityKey::new([0u8; 64]).is_ok());
        let shown = format!("{:?}", key(7).with_previous([key(8)]));
        assert_eq!(shown, "IdentityKey(<32 bytes redacted>, 1 previous)");
    }

    #[test]
    fn random_keys_differ() {
        let a = IdentityKey::random();
        let b = IdentityKey::random();
        assert_ne!(a.sign("x", NOW_MS), b.sign("x", NOW_MS));
        assert_eq!(a.verify(&a.sign("x", NOW_MS), NOW_MS).as_deref(), Some("x"));
        assert_eq!(b.verify(&a.sign("x", NOW_MS), NOW_MS), None);
    }

    #[test]
    fn signature_is_the_hmac_of_identity_nul_issue_time() {
        // RFC 4231 test case 6 (131-byte key): the MAC itself.
        let data = "Test Using Larger Than Block-Size Key - Hash Key First";
        let mut m = HmacSha256::new_from_slice(&[0xaa; 131]).unwrap();
        m.update(data.as_bytes());
        assert_eq!(
            URL_SAFE_NO_PAD.encode(m.finalize().into_bytes()),
            "YOQxWR7gtn8Niiaqy_W3f44LxiE3KMUUBUYEDw7jf1Q"
        );
        // What is signed: identity, NUL, the issue time in seconds.
        let k = IdentityKey::new([b'k'; 32]).unwrap();
        let mut m = HmacSha256::new_from_slice(&[b'k'; 32]).unwrap();
        m.update(b"user-42\x001795651200");
        let expected = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
        assert_eq!(
            k.sign("user-42", NOW_MS + 999),
            format!("user-42.1795651200.{expected}")
        );
    }

    #[test]
    fn tampered_or_malformed_values_are_none() {
        let k = key(7);
        let signed = k.sign("user-42", NOW_MS);
        assert_eq!(k.verify(&signed, NOW_MS).as_deref(), Some("user-42"));
        assert_eq!(key(8).verify(&signed, NOW_MS), None);
        for bad in [
            signed.replacen("user-42", "user-43", 1),
            signed.replacen(".1795651200.", ".1795651201.", 1),
            signed.replacen(".1795651200.", ".+1795651200.", 1),
            signed[..signed.len() - 2].to_string(),
            format!("{signed}="),
            "user-42".to_string(),
            "user-42.1795651200.!!!".to_string(),
            String::new(),
        ] {
            assert_eq!(k.verify(&bad, NOW_MS), None, "{bad}");
        }
    }

    #[test]
    fn identities_with_dots_split_at_the_last_two_dots() {
        let k = key(7);
        let signed = k.sign("a.b.c", NOW_MS);
        assert_eq!(k.verify(&signed, NOW_MS).as_deref(), Some("a.b.c"));
    }

    #[test]
    fn a_value_older_than_the_max_age_is_refused() {
        let k = key(7);
        let signed = k.sign("user-42", NOW_MS);
        let last = NOW_MS + IDENTITY_COOKIE_MAX_AGE_S * 1000 - 1000;
        assert_eq!(k.verify(&signed, last).as_deref(), Some("user-42"));
        assert_eq!(k.verify(&signed, NOW_MS + 30 * DAY_MS), None);
        assert_eq!(k.verify(&signed, NOW_MS + 365 * DAY_MS), None);
        // Issued in the future: a few minutes of skew pass, more does not.
        assert_eq!(
            k.verify(&signed, NOW_MS - 300_000).as_deref(),
            Some("user-42")
        );
        assert_eq!(k.verify(&signed, NOW_MS - 301_000), None);
    }

    #[test]
    fn the_old_format_without_an_issue_time_is_refused() {
        // `<value>.<base64url(HMAC(key, value))>`, as issued before issue times were signed.
        let old = |value: &str| {
            let mut m = HmacSha256::new_from_slice(&[7; 32]).unwrap();
            m.update(value.as_bytes());
            format!(
                "{value}.{}",
                URL_SAFE_NO_PAD.encode(m.finalize().into_bytes())
            )
        };
        let k = key(7);
        assert_eq!(k.verify(&old("user-42"), NOW_MS), None);
        // An old identity that looks like `<identity>.<seconds>` does not verify either.
        assert_eq!(k.verify(&old("user.1795651200"), NOW_MS), None);
    }

    #[test]
    fn a_rotated_key_still_verifies_while_the_new_one_signs() {
        let old = key(7);
        let rotated = key(9).with_previous([old.clone()]);
        let before = old.sign("user-42", NOW_MS);
        assert_eq!(rotated.verify(&before, NOW_MS).as_deref(), Some("user-42"));
        // New values are signed with the new key: the old key alone no longer reads them.
        let after = rotated.sign("user-42", NOW_MS);
        assert_eq!(key(9).verify(&after, NOW_MS).as_deref(), Some("user-42"));
        assert_eq!(old.verify(&after, NOW_MS), None);
        // Without the old key, its values are refused.
        assert_eq!(key(9).verify(&before, NOW_MS), None);
        // Previous keys accumulate and leave out the current one.
        let twice = key(10).with_previous([rotated.clone(), key(10)]);
        assert_eq!(twice.previous_count(), 2);
        assert_eq!(twice.verify(&before, NOW_MS).as_deref(), Some("user-42"));
        assert_eq!(twice.verify(&after, NOW_MS).as_deref(), Some("user-42"));
    }
}
