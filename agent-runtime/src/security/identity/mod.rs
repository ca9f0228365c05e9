//! Caller identity (docs/lap.md §3.1): a pluggable resolver, then a signed identity cookie, plus the
//! anonymous identities issued in `allowAnonymous` mode.
//!
//! `key` signs and verifies cookie values (`<value>.<issued-at>.<signature>`, with previous keys
//! after a rotation); `cookie` names the cookie per scheme and reads a request's cookies. Agent
//! bearer tokens are never identities.

mod cookie;
mod key;

use std::fmt;
use std::sync::Arc;

use axum::http::request::Parts;
use futures::future::{self, BoxFuture, FutureExt as _};

use super::origin::OriginPolicy;
use crate::clock::{SharedClock, SystemClock};

pub(crate) use cookie::IdentityCookie;
pub use key::IdentityKey;

/// The default name of the identity cookie (`__Host-agent_identity` over https).
pub(crate) const DEFAULT_IDENTITY_COOKIE_NAME: &str = "agent_identity";

/// The prefix of an anonymous identity (`anon-<UUID v4>`).
pub(super) const ANONYMOUS_PREFIX: &str = "anon-";

/// Whether `uid` is an anonymous identity issued by this server.
pub(crate) fn is_anonymous(uid: &str) -> bool {
    uid.starts_with(ANONYMOUS_PREFIX)
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
/// identity cookie (named and checked by the request's scheme and the clock); and whether
/// anonymous identities may be issued.
#[derive(Clone)]
pub(crate) struct Identity {
    resolver: Option<Arc<dyn IdentityResolver>>,
    cookie: IdentityCookie,
    allow_anonymous: bool,
    clock: SharedClock,
    origin: OriginPolicy,
}

impl Default for Identity {
    /// The default cookie (random key), the system clock, plain http origins.
    fn default() -> Self {
        Identity::new(
            IdentityCookie::default(),
            Arc::new(SystemClock),
            OriginPolicy::default(),
        )
    }
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
    /// Identity from this cookie only, anonymous mode off. `clock` dates issued cookies and
    /// checks their age; `origin` tells whether a request's origin is https (its cookie is
    /// then `__Host-` prefixed).
    pub(crate) fn new(cookie: IdentityCookie, clock: SharedClock, origin: OriginPolicy) -> Self {
        Identity {
            resolver: None,
            cookie,
            allow_anonymous: false,
            clock,
            origin,
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

    /// The identity cookie's signing key (other server secrets are derived from it).
    #[cfg(feature = "mcp")]
    pub(crate) fn key(&self) -> &IdentityKey {
        self.cookie.key()
    }

    /// Whether anonymous mode is on.
    pub(crate) fn allows_anonymous(&self) -> bool {
        self.allow_anonymous
    }

    /// Why a caller without an identity cannot mint: the `auth-required` detail. Without
    /// anonymous mode and without a resolver no caller can ever have an identity here.
    pub(crate) fn missing_identity_detail(&self) -> &'static str {
        if self.resolver.is_some() {
            "no identity: sign in to the app first"
        } else {
            "no identity, and this server can issue none: anonymous identities are off \
             (ServerOptions::allow_anonymous) and no identity resolver is set; for local \
             development build the server with AgentServerBuilder::local_development()"
        }
    }

    /// The caller's identity: the resolver's answer, else the identity of the valid signed
    /// cookies under the name the request's scheme implies, else none.
    pub(crate) async fn resolve(&self, parts: &Parts) -> Option<String> {
        if let Some(resolver) = &self.resolver {
            if let Some(uid) = resolver.resolve(parts).await {
                return Some(uid);
            }
        }
        let https = self.origin.request_origin(parts).is_https();
        self.cookie.read(&parts.headers, https, self.clock.now_ms())
    }

    /// In anonymous mode, a fresh `anon-<UUID v4>` identity and its `Set-Cookie` value
    /// (`__Host-` prefixed and `Secure` when `https`, i.e. the request origin is https).
    /// Without anonymous mode no identity is ever issued: none.
    pub(crate) fn issue_anonymous(&self, https: bool) -> Option<IssuedIdentity> {
        if !self.allow_anonymous {
            return None;
        }
        let uid = anonymous_identity();
        let set_cookie = self
            .cookie
            .set_cookie_header(&uid, https, self.clock.now_ms());
        Some(IssuedIdentity { uid, set_cookie })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::security::TrustProxy;
    use axum::http::header::COOKIE;
    use axum::http::Request;

    /// 2026-11-26 00:00:00 UTC, in milliseconds.
    const NOW_MS: u64 = 1_795_651_200_000;

    fn key() -> IdentityKey {
        IdentityKey::new([7u8; 32]).unwrap()
    }

    fn cookie() -> IdentityCookie {
        IdentityCookie::new(DEFAULT_IDENTITY_COOKIE_NAME, key()).unwrap()
    }

    /// An identity reading `cookie()` at the clock's time, behind one trusted proxy (so
    /// `x-forwarded-proto` gives the scheme).
    fn identity(clock: &ManualClock) -> Identity {
        let origin = OriginPolicy {
            trust_proxy: TrustProxy::hops(1),
            ..Default::default()
        };
        Identity::new(cookie(), Arc::new(clock.clone()), origin)
    }

    fn parts(cookies: &[&str]) -> Parts {
        let mut builder = Request::builder().uri("/agent/mint");
        for c in cookies {
            builder = builder.header(COOKIE, *c);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[tokio::test]
    async fn resolver_first_then_cookie() {
        let clock = ManualClock::new(NOW_MS);
        let signed = key().sign("from-cookie", NOW_MS);
        let with_cookie = parts(&[&format!("agent_identity={signed}")]);
        let without = parts(&[]);

        let plain = identity(&clock);
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
        let with_resolver = identity(&clock).with_resolver(Arc::new(resolver));
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
    async fn the_cookie_expires_on_the_server_clock() {
        let clock = ManualClock::new(NOW_MS);
        let id = identity(&clock);
        let signed = key().sign("user-42", NOW_MS);
        let p = parts(&[&format!("agent_identity={signed}")]);
        clock.advance(30 * 86_400_000 - 1000);
        assert_eq!(id.resolve(&p).await.as_deref(), Some("user-42"));
        clock.advance(1000);
        assert_eq!(id.resolve(&p).await, None);
    }

    #[tokio::test]
    async fn the_request_scheme_picks_the_cookie_name() {
        let clock = ManualClock::new(NOW_MS);
        let id = identity(&clock).with_allow_anonymous(true);
        let issued = id.issue_anonymous(true).unwrap();
        assert!(issued.set_cookie.starts_with("__Host-agent_identity=anon-"));
        let pair = issued.set_cookie.split(';').next().unwrap();
        let mut https = parts(&[pair]);
        https
            .headers
            .insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(
            id.resolve(&https).await.as_deref(),
            Some(issued.uid.as_str())
        );
        // The same request over http reads only the plain name.
        assert_eq!(id.resolve(&parts(&[pair])).await, None);
        let plain = pair.strip_prefix("__Host-").unwrap();
        assert_eq!(
            id.resolve(&parts(&[plain])).await.as_deref(),
            Some(issued.uid.as_str())
        );
        let mut plain_over_https = parts(&[plain]);
        plain_over_https
            .headers
            .insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(id.resolve(&plain_over_https).await, None);
    }

    #[tokio::test]
    async fn bearer_tokens_are_not_identities() {
        let identity = identity(&ManualClock::new(NOW_MS));
        let mut p = parts(&[]);
        p.headers
            .insert("authorization", "Bearer agt_abc".parse().unwrap());
        assert_eq!(identity.resolve(&p).await, None);
    }

    #[tokio::test]
    async fn anonymous_identities() {
        let clock = ManualClock::new(NOW_MS);
        let off = identity(&clock);
        assert_eq!(off.issue_anonymous(false), None);

        let on = identity(&clock).with_allow_anonymous(true);
        let issued = on.issue_anonymous(false).unwrap();
        let uuid = issued.uid.strip_prefix("anon-").unwrap();
        let parsed = uuid::Uuid::parse_str(uuid).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert!(issued
            .set_cookie
            .starts_with(&format!("agent_identity={}.1795651200.", issued.uid)));
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
