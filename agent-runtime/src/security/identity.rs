//! Caller identity (docs/lap.md §3.1): a pluggable resolver, then a signed identity cookie, plus the
//! anonymous identities issued in `allowAnonymous` mode.
//!
//! Cookie value: `<value>.<base64url-nopad(HMAC-SHA256(key, value))>`. Agent bearer tokens are
//! never identities.

use std::fmt;
use std::sync::Arc;

use axum::http::header::COOKIE;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures::future::{self, BoxFuture, FutureExt as _};
use hmac::{Hmac, Mac};
use rand::RngCore as _;
use sha2::Sha256;

use super::error::ConfigError;

type HmacSha256 = Hmac<Sha256>;

/// The default name of the identity cookie.
pub(crate) const DEFAULT_IDENTITY_COOKIE_NAME: &str = "agent_identity";

/// The smallest accepted signing key, in bytes.
pub(super) const MIN_IDENTITY_KEY_LEN: usize = 32;

/// `Max-Age` of an issued identity cookie: 30 days, in seconds.
pub(super) const IDENTITY_COOKIE_MAX_AGE_S: u64 = 2_592_000;

/// The prefix of an anonymous identity (`anon-<UUID v4>`).
pub(super) const ANONYMOUS_PREFIX: &str = "anon-";

/// Whether `uid` is an anonymous identity issued by this server.
#[cfg(feature = "pairing")]
pub(crate) fn is_anonymous(uid: &str) -> bool {
    uid.starts_with(ANONYMOUS_PREFIX)
}

/// The HMAC key that signs identity cookies: at least 32 bytes. `Debug` never shows it.
#[derive(Clone)]
pub struct IdentityKey(Arc<[u8]>);

impl IdentityKey {
    /// A key from bytes; fewer than 32 bytes (empty included) is a configuration error.
    pub fn new(bytes: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        let bytes = bytes.as_ref();
        if bytes.len() < MIN_IDENTITY_KEY_LEN {
            return Err(ConfigError::IdentityKeyTooShort(bytes.len()));
        }
        Ok(IdentityKey(Arc::from(bytes)))
    }

    /// 32 bytes from a CSPRNG (the default: one key per process).
    pub fn random() -> Self {
        let mut bytes = [0u8; MIN_IDENTITY_KEY_LEN];
        rand::rng().fill_bytes(&mut bytes);
        IdentityKey(Arc::from(&bytes[..]))
    }

    /// The key bytes (to store them where every replica reads them).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    fn mac(&self, value: &str) -> HmacSha256 {
        // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
        let mut mac = match HmacSha256::new_from_slice(&self.0) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        mac.update(value.as_bytes());
        mac
    }

    /// The signed form `<value>.<base64url-nopad(HMAC-SHA256(key, value))>`.
    pub fn sign(&self, value: &str) -> String {
        let signature = self.mac(value).finalize().into_bytes();
        format!("{value}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// The value of a signed string: split at the LAST `.` (no dot → none), base64url-decode the
    /// signature (invalid → none), verify it in constant time (mismatch → none).
    pub fn verify(&self, signed: &str) -> Option<String> {
        let (value, signature) = signed.rsplit_once('.')?;
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        self.mac(value).verify_slice(&signature).ok()?;
        Some(value.to_owned())
    }
}

impl fmt::Debug for IdentityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdentityKey(<{} bytes redacted>)", self.0.len())
    }
}

/// The signed identity cookie: its name and signing key.
#[derive(Debug, Clone)]
pub(crate) struct IdentityCookie {
    name: String,
    key: IdentityKey,
}

impl Default for IdentityCookie {
    /// Name `agent_identity`, a random key.
    fn default() -> Self {
        IdentityCookie {
            name: DEFAULT_IDENTITY_COOKIE_NAME.to_owned(),
            key: IdentityKey::random(),
        }
    }
}

impl IdentityCookie {
    /// A cookie with this name and key. The name must be a non-empty RFC 6265 token (no
    /// separators, spaces, `=` or `;`), else a configuration error.
    pub(crate) fn new(name: impl Into<String>, key: IdentityKey) -> Result<Self, ConfigError> {
        let name = name.into();
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
        if !valid {
            return Err(ConfigError::InvalidCookieName(name));
        }
        Ok(IdentityCookie { name, key })
    }

    /// The signing key.
    #[cfg(test)]
    pub(crate) fn key(&self) -> &IdentityKey {
        &self.key
    }

    /// The identity carried by one `Cookie` header value: split on `;`, trim each pair, split
    /// at its first `=`, take the FIRST pair with this cookie's name and verify its value.
    pub(crate) fn read_header(&self, cookie_header: &str) -> Option<String> {
        let value = cookie_header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.name)
            .map(|(_, value)| value)?;
        self.key.verify(value)
    }

    /// The identity carried by the request's `Cookie` header(s). Several `Cookie` header lines
    /// (as HTTP/2 may send) read as one, joined with `; ` in order; a line that is not valid
    /// UTF-8 is skipped.
    pub(crate) fn read(&self, headers: &HeaderMap) -> Option<String> {
        let lines: Vec<&str> = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if lines.is_empty() {
            return None;
        }
        self.read_header(&lines.join("; "))
    }

    /// The exact `Set-Cookie` header value issuing `identity`:
    /// `<name>=<signed>; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000`, plus `; Secure`
    /// when the request origin is https. `identity` must consist of cookie-safe characters
    /// (anonymous identities do).
    pub(crate) fn set_cookie_header(&self, identity: &str, secure: bool) -> String {
        let mut header = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={IDENTITY_COOKIE_MAX_AGE_S}",
            self.name,
            self.key.sign(identity)
        );
        if secure {
            header.push_str("; Secure");
        }
        header
    }
}

/// Maps a request to the caller's identity (uid), e.g. from the host app's own session.
///
/// `resolve` returns a `Send` future borrowing the resolver and the request, so an
/// implementation can await its session store (write `Box::pin(async move { … })`); the trait
/// stays dyn-compatible and is used as `Arc<dyn IdentityResolver>`. A synchronous closure
/// `Fn(&Parts) -> Option<String>` is a resolver as is.
pub trait IdentityResolver: Send + Sync {
    /// The caller's uid, or none.
    fn resolve<'a>(&'a self, parts: &'a Parts) -> BoxFuture<'a, Option<String>>;
}

/// A synchronous closure resolves at once.
impl<F> IdentityResolver for F
where
    F: Fn(&Parts) -> Option<String> + Send + Sync,
{
    fn resolve<'a>(&'a self, parts: &'a Parts) -> BoxFuture<'a, Option<String>> {
        future::ready(self(parts)).boxed()
    }
}

/// A fresh anonymous identity `anon-<UUID v4>`.
pub(super) fn anonymous_identity() -> String {
    format!("{ANONYMOUS_PREFIX}{}", uuid::Uuid::new_v4())
}

/// An identity issued in anonymous mode, with the header that hands it to the browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IssuedIdentity {
    /// The new identity, `anon-<UUID v4>`.
    pub uid: String,
    /// The `Set-Cookie` header value carrying it.
    pub set_cookie: String,
}

/// How the server tells who is calling: the configured resolver first, then the signed
/// identity cookie; and whether anonymous identities may be issued.
#[derive(Clone, Default)]
pub(crate) struct Identity {
    resolver: Option<Arc<dyn IdentityResolver>>,
    cookie: IdentityCookie,
    allow_anonymous: bool,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("resolver", &self.resolver.is_some())
            .field("cookie", &self.cookie)
            .field("allow_anonymous", &self.allow_anonymous)
            .finish()
    }
}

impl Identity {
    /// Identity from this cookie only, anonymous mode off.
    pub(crate) fn new(cookie: IdentityCookie) -> Self {
        Identity {
            resolver: None,
            cookie,
            allow_anonymous: false,
        }
    }

    /// Consults `resolver` before the cookie.
    pub(crate) fn with_resolver(mut self, resolver: Arc<dyn IdentityResolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Turns anonymous mode (`allowAnonymous`) on or off.
    pub(crate) fn with_allow_anonymous(mut self, allow: bool) -> Self {
        self.allow_anonymous = allow;
        self
    }

    /// Whether anonymous mode is on.
    pub(crate) fn allows_anonymous(&self) -> bool {
        self.allow_anonymous
    }

    /// The caller's identity: the resolver's answer, else a valid signed cookie, else none.
    pub(crate) async fn resolve(&self, parts: &Parts) -> Option<String> {
        if let Some(resolver) = &self.resolver {
            if let Some(uid) = resolver.resolve(parts).await {
                return Some(uid);
            }
        }
        self.cookie.read(&parts.headers)
    }

    /// In anonymous mode, a fresh `anon-<UUID v4>` identity and its `Set-Cookie` value (with
    /// `; Secure` when `secure`, i.e. the request origin is https). Without anonymous mode no
    /// identity is ever issued: none.
    pub(crate) fn issue_anonymous(&self, secure: bool) -> Option<IssuedIdentity> {
        if !self.allow_anonymous {
            return None;
        }
        let uid = anonymous_identity();
        let set_cookie = self.cookie.set_cookie_header(&uid, secure);
        Some(IssuedIdentity { uid, set_cookie })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn key() -> IdentityKey {
        IdentityKey::new([7u8; 32]).unwrap()
    }

    fn cookie() -> IdentityCookie {
        IdentityCookie::new(DEFAULT_IDENTITY_COOKIE_NAME, key()).unwrap()
    }

    fn parts(cookies: &[&str]) -> Parts {
        let mut builder = Request::builder().uri("/agent/mint");
        for c in cookies {
            builder = builder.header(COOKIE, *c);
        }
        builder.body(()).unwrap().into_parts().0
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
        assert!(!format!("{:?}", key()).contains("7, 7"));
    }

    #[test]
    fn random_keys_differ() {
        let a = IdentityKey::random();
        let b = IdentityKey::random();
        assert_ne!(a.sign("x"), b.sign("x"));
        assert_eq!(a.verify(&a.sign("x")).as_deref(), Some("x"));
        assert_eq!(b.verify(&a.sign("x")), None);
    }

    #[test]
    fn signature_matches_hmac_definition() {
        // RFC 4231 test case 6 (131-byte key), signature in base64url without padding.
        let k = IdentityKey::new([0xaau8; 131]).unwrap();
        let data = "Test Using Larger Than Block-Size Key - Hash Key First";
        assert_eq!(
            k.sign(data),
            format!("{data}.YOQxWR7gtn8Niiaqy_W3f44LxiE3KMUUBUYEDw7jf1Q")
        );
        // Computed independently with another HMAC implementation.
        let k = IdentityKey::new([b'k'; 32]).unwrap();
        assert_eq!(
            k.sign("user-42"),
            "user-42.WgcgCdzUGt7biTsH8DLz-7-VmFk5xkGCeVJrnWL0TSc"
        );
        assert_eq!(
            k.verify("user-42.WgcgCdzUGt7biTsH8DLz-7-VmFk5xkGCeVJrnWL0TSc")
                .as_deref(),
            Some("user-42")
        );
    }

    #[test]
    fn no_cookie_is_none() {
        assert_eq!(cookie().read(&parts(&[]).headers), None);
        assert_eq!(cookie().read_header(""), None);
        assert_eq!(cookie().read_header("other=1"), None);
    }

    #[test]
    fn wrong_signature_is_none() {
        let c = cookie();
        let other = IdentityKey::new([8u8; 32]).unwrap();
        assert_eq!(
            c.read_header(&format!("agent_identity={}", other.sign("user-42"))),
            None
        );
        // Tampered value, no dot, bad base64, truncated signature.
        let signed = c.key().sign("user-42");
        let tampered = signed.replacen("user-42", "user-43", 1);
        assert_eq!(c.read_header(&format!("agent_identity={tampered}")), None);
        assert_eq!(c.read_header("agent_identity=user-42"), None);
        assert_eq!(c.read_header("agent_identity=user-42.!!!"), None);
        assert_eq!(
            c.read_header(&format!("agent_identity={}", &signed[..signed.len() - 2])),
            None
        );
        assert_eq!(c.read_header(&format!("agent_identity={signed}=")), None);
    }

    #[test]
    fn valid_signed_cookie_is_the_identity() {
        let c = cookie();
        let signed = c.key().sign("user-42");
        assert_eq!(
            c.read(&parts(&[&format!("agent_identity={signed}")]).headers)
                .as_deref(),
            Some("user-42")
        );
    }

    #[test]
    fn cookie_among_others() {
        let c = cookie();
        let signed = c.key().sign("user-42");
        let header = format!("session=abc; agent_identity={signed}; csrf=xyz");
        assert_eq!(c.read_header(&header).as_deref(), Some("user-42"));
        // Untrimmed spacing still reads.
        let header = format!("session=abc;   agent_identity={signed}  ;csrf=xyz");
        assert_eq!(c.read_header(&header).as_deref(), Some("user-42"));
        // A name that merely contains ours does not count.
        let header = format!("xagent_identity={signed}");
        assert_eq!(c.read_header(&header), None);
    }

    #[test]
    fn first_pair_with_the_name_wins() {
        let c = cookie();
        let good = c.key().sign("user-1");
        let second = c.key().sign("user-2");
        assert_eq!(
            c.read_header(&format!("agent_identity={good}; agent_identity={second}"))
                .as_deref(),
            Some("user-1")
        );
        assert_eq!(
            c.read_header(&format!("agent_identity=junk; agent_identity={good}")),
            None
        );
    }

    #[test]
    fn several_cookie_headers_read_as_one() {
        let c = cookie();
        let signed = c.key().sign("user-9");
        let p = parts(&["a=1", &format!("agent_identity={signed}")]);
        assert_eq!(c.read(&p.headers).as_deref(), Some("user-9"));
    }

    #[test]
    fn values_with_dots_split_at_the_last_dot() {
        let c = cookie();
        let signed = c.key().sign("a.b.c");
        assert_eq!(
            c.read_header(&format!("agent_identity={signed}"))
                .as_deref(),
            Some("a.b.c")
        );
    }

    #[test]
    fn value_with_equals_splits_pair_at_first_equals() {
        let c = cookie();
        let signed = c.key().sign("k=v");
        assert_eq!(
            c.read_header(&format!("agent_identity={signed}"))
                .as_deref(),
            Some("k=v")
        );
    }

    #[test]
    fn cookie_name_validation() {
        assert!(IdentityCookie::new("", key()).is_err());
        assert!(IdentityCookie::new("a b", key()).is_err());
        assert!(IdentityCookie::new("a=b", key()).is_err());
        assert!(IdentityCookie::new("a;b", key()).is_err());
        assert!(IdentityCookie::new("my_app-id", key()).is_ok());
    }

    #[test]
    fn custom_cookie_name_is_used() {
        let c = IdentityCookie::new("who", key()).unwrap();
        let signed = c.key().sign("u");
        assert_eq!(
            c.read_header(&format!("who={signed}")).as_deref(),
            Some("u")
        );
        assert_eq!(c.read_header(&format!("agent_identity={signed}")), None);
        assert!(c.set_cookie_header("u", false).starts_with("who="));
    }

    #[test]
    fn set_cookie_header_text() {
        let c = cookie();
        let signed = c.key().sign("anon-1");
        assert_eq!(
            c.set_cookie_header("anon-1", false),
            format!("agent_identity={signed}; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000")
        );
        assert_eq!(
            c.set_cookie_header("anon-1", true),
            format!(
                "agent_identity={signed}; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000; Secure"
            )
        );
    }

    #[tokio::test]
    async fn resolver_first_then_cookie() {
        let c = cookie();
        let signed = c.key().sign("from-cookie");
        let with_cookie = parts(&[&format!("agent_identity={signed}")]);
        let without = parts(&[]);

        let plain = Identity::new(c.clone());
        assert_eq!(
            plain.resolve(&with_cookie).await.as_deref(),
            Some("from-cookie")
        );
        assert_eq!(plain.resolve(&without).await, None);

        let resolver = |p: &Parts| {
            p.headers
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let with_resolver = Identity::new(c).with_resolver(Arc::new(resolver));
        let mut both = with_cookie.clone();
        both.headers
            .insert("x-user", "from-resolver".parse().unwrap());
        assert_eq!(
            with_resolver.resolve(&both).await.as_deref(),
            Some("from-resolver")
        );
        // Resolver says none → the cookie decides.
        assert_eq!(
            with_resolver.resolve(&with_cookie).await.as_deref(),
            Some("from-cookie")
        );
        assert_eq!(with_resolver.resolve(&without).await, None);
    }

    #[tokio::test]
    async fn bearer_tokens_are_not_identities() {
        let identity = Identity::new(cookie());
        let mut p = parts(&[]);
        p.headers
            .insert("authorization", "Bearer agt_abc".parse().unwrap());
        assert_eq!(identity.resolve(&p).await, None);
    }

    #[tokio::test]
    async fn anonymous_identities() {
        let off = Identity::new(cookie());
        assert_eq!(off.issue_anonymous(false), None);

        let on = Identity::new(cookie()).with_allow_anonymous(true);
        let issued = on.issue_anonymous(false).unwrap();
        let uuid = issued.uid.strip_prefix("anon-").unwrap();
        let parsed = uuid::Uuid::parse_str(uuid).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert!(issued
            .set_cookie
            .starts_with(&format!("agent_identity={}.", issued.uid)));
        assert!(!issued.set_cookie.ends_with("; Secure"));
        assert!(on
            .issue_anonymous(true)
            .unwrap()
            .set_cookie
            .ends_with("; Secure"));
        assert_ne!(on.issue_anonymous(false).unwrap().uid, issued.uid);

        // The issued cookie reads back as the same identity.
        let cookie_pair = issued.set_cookie.split(';').next().unwrap();
        assert_eq!(
            on.resolve(&parts(&[cookie_pair])).await.as_deref(),
            Some(issued.uid.as_str())
        );
    }
}
