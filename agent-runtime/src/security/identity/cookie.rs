//! The identity cookie: its names, how a request's `Cookie` headers are read, and the
//! `Set-Cookie` header that issues one (`docs/lap.md` §3.1).
//!
//! Over https the cookie is `__Host-<name>` (`Secure`, `Path=/`, no `Domain`: a sibling
//! subdomain cannot set it); over http it is `<name>`, so local use keeps working. A request is
//! read under the name its scheme implies. Every cookie of that name is verified: the one
//! identity they verify to counts; several cookies that verify to different identities (one of
//! them planted) count as none.

use axum::http::header::COOKIE;
use axum::http::HeaderMap;

use super::key::{IdentityKey, IDENTITY_COOKIE_MAX_AGE_S};
use crate::security::error::ConfigError;

/// The prefix of the cookie's name over https.
const HOST_PREFIX: &str = "__Host-";

/// The cookie name prefixes browsers give a meaning to (compared case-insensitively).
const RESERVED_PREFIXES: [&str; 2] = ["__host-", "__secure-"];

/// The signed identity cookie: its names and keys.
#[derive(Debug, Clone)]
pub(crate) struct IdentityCookie {
    name: String,
    https_name: String,
    key: IdentityKey,
}

impl Default for IdentityCookie {
    /// Name `agent_identity`, a random key.
    fn default() -> Self {
        match IdentityCookie::new(super::DEFAULT_IDENTITY_COOKIE_NAME, IdentityKey::random()) {
            Ok(cookie) => cookie,
            Err(_) => unreachable!("the default cookie name is valid"),
        }
    }
}

impl IdentityCookie {
    /// A cookie with this name and keys. The name must be a non-empty RFC 6265 token (no
    /// separators, spaces, `=` or `;`) without a `__Host-` or `__Secure-` prefix (the server
    /// adds `__Host-` over https), else a configuration error.
    pub(crate) fn new(name: impl Into<String>, key: IdentityKey) -> Result<Self, ConfigError> {
        let name = name.into();
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
        let lower = name.to_ascii_lowercase();
        let prefixed = RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p));
        if !token || prefixed {
            return Err(ConfigError::InvalidCookieName(name));
        }
        Ok(IdentityCookie {
            https_name: format!("{HOST_PREFIX}{name}"),
            name,
            key,
        })
    }

    /// The key that signs the cookie (other server secrets are derived from it).
    #[cfg(feature = "mcp")]
    pub(crate) fn key(&self) -> &IdentityKey {
        &self.key
    }

    /// The cookie's name for a request whose origin is https (`__Host-<name>`) or http.
    pub(crate) fn name(&self, https: bool) -> &str {
        if https {
            &self.https_name
        } else {
            &self.name
        }
    }

    /// The identity carried by one `Cookie` header value at `now_ms`: split on `;`, trim each
    /// pair, split at its first `=`; every pair with the name `https` implies is verified; the
    /// identity when those that verify all carry the same one, else none.
    pub(crate) fn read_header(
        &self,
        cookie_header: &str,
        https: bool,
        now_ms: u64,
    ) -> Option<String> {
        let name = self.name(https);
        let mut found: Option<String> = None;
        for (_, value) in cookie_header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(n, _)| *n == name)
        {
            let Some(identity) = self.key.verify(value, now_ms) else {
                continue;
            };
            match &found {
                Some(first) if *first != identity => {
                    tracing::warn!(
                        cookie = name,
                        "identity cookies of two identities in one request: none is used"
                    );
                    return None;
                }
                _ => found = Some(identity),
            }
        }
        found
    }

    /// The identity carried by the request's `Cookie` header(s), as [`Self::read_header`].
    /// Several `Cookie` header lines (as HTTP/2 may send) read as one, joined with `; ` in
    /// order; a line that is not valid UTF-8 is skipped.
    pub(crate) fn read(&self, headers: &HeaderMap, https: bool, now_ms: u64) -> Option<String> {
        let lines: Vec<&str> = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if lines.is_empty() {
            return None;
        }
        self.read_header(&lines.join("; "), https, now_ms)
    }

    /// The exact `Set-Cookie` header value issuing `identity` at `now_ms`: over http
    /// `<name>=<signed>; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000`, over https
    /// `__Host-<name>=<signed>; …; Secure`. `identity` must consist of cookie-safe characters
    /// (anonymous identities do).
    pub(crate) fn set_cookie_header(&self, identity: &str, https: bool, now_ms: u64) -> String {
        let mut header = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={IDENTITY_COOKIE_MAX_AGE_S}",
            self.name(https),
            self.key.sign(identity, now_ms)
        );
        if https {
            header.push_str("; Secure");
        }
        header
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    /// 2026-11-26 00:00:00 UTC, in milliseconds.
    const NOW_MS: u64 = 1_795_651_200_000;

    fn key() -> IdentityKey {
        IdentityKey::new([7u8; 32]).unwrap()
    }

    fn cookie() -> IdentityCookie {
        IdentityCookie::new("agent_identity", key()).unwrap()
    }

    fn signed(identity: &str) -> String {
        key().sign(identity, NOW_MS)
    }

    /// Reads `header` over http at `NOW_MS`.
    fn read(c: &IdentityCookie, header: &str) -> Option<String> {
        c.read_header(header, false, NOW_MS)
    }

    fn headers(cookies: &[&str]) -> HeaderMap {
        let mut builder = Request::builder().uri("/agent/mint");
        for c in cookies {
            builder = builder.header(COOKIE, *c);
        }
        builder.body(()).unwrap().into_parts().0.headers
    }

    #[test]
    fn no_cookie_is_none() {
        let c = cookie();
        assert_eq!(c.read(&headers(&[]), false, NOW_MS), None);
        assert_eq!(read(&c, ""), None);
        assert_eq!(read(&c, "other=1"), None);
        assert_eq!(read(&c, "agent_identity=user-42"), None);
    }

    #[test]
    fn valid_signed_cookie_is_the_identity() {
        let h = headers(&[&format!("agent_identity={}", signed("user-42"))]);
        assert_eq!(cookie().read(&h, false, NOW_MS).as_deref(), Some("user-42"));
    }

    #[test]
    fn cookie_among_others() {
        let c = cookie();
        let s = signed("user-42");
        let header = format!("session=abc; agent_identity={s}; csrf=xyz");
        assert_eq!(read(&c, &header).as_deref(), Some("user-42"));
        // Untrimmed spacing still reads.
        let header = format!("session=abc;   agent_identity={s}  ;csrf=xyz");
        assert_eq!(read(&c, &header).as_deref(), Some("user-42"));
        // A name that merely contains ours does not count.
        assert_eq!(read(&c, &format!("xagent_identity={s}")), None);
    }

    #[test]
    fn a_planted_cookie_beside_the_real_one_does_not_switch_identity() {
        let c = cookie();
        let real = signed("user-1");
        let planted = signed("anon-attacker");
        // An unsigned or forged cookie before the real one (as a planted `Path=/agent` cookie
        // comes first): the real one still counts.
        for junk in ["junk", "anon-attacker.1795651200.AAAA", "user-1"] {
            let header = format!("agent_identity={junk}; agent_identity={real}");
            assert_eq!(read(&c, &header).as_deref(), Some("user-1"), "{junk}");
        }
        // Another identity's valid cookie, in either order: neither counts.
        let header = format!("agent_identity={planted}; agent_identity={real}");
        assert_eq!(read(&c, &header), None);
        let header = format!("agent_identity={real}; agent_identity={planted}");
        assert_eq!(read(&c, &header), None);
        // The same identity twice (issued at two times) is that identity.
        let later = key().sign("user-1", NOW_MS + 60_000);
        let header = format!("agent_identity={later}; agent_identity={real}");
        assert_eq!(
            c.read_header(&header, false, NOW_MS + 60_000).as_deref(),
            Some("user-1")
        );
        // An expired planted cookie is no conflict: the fresh one counts.
        let expired = key().sign("anon-attacker", NOW_MS - 31 * 86_400_000);
        let header = format!("agent_identity={expired}; agent_identity={real}");
        assert_eq!(read(&c, &header).as_deref(), Some("user-1"));
    }

    #[test]
    fn an_expired_cookie_is_refused_even_if_the_browser_sends_it() {
        let c = cookie();
        let header = format!("agent_identity={}", signed("user-42"));
        let day = 86_400_000;
        assert_eq!(
            c.read_header(&header, false, NOW_MS + 29 * day).as_deref(),
            Some("user-42")
        );
        assert_eq!(c.read_header(&header, false, NOW_MS + 30 * day), None);
    }

    #[test]
    fn a_cookie_signed_with_a_rotated_key_still_reads() {
        let old = key();
        let before = format!("agent_identity={}", old.sign("user-42", NOW_MS));
        let rotated = IdentityKey::new([9u8; 32])
            .unwrap()
            .with_previous([old.clone()]);
        let c = IdentityCookie::new("agent_identity", rotated).unwrap();
        assert_eq!(read(&c, &before).as_deref(), Some("user-42"));
        // New cookies are signed with the new key.
        let issued = c.set_cookie_header("anon-1", false, NOW_MS);
        let pair = issued.split(';').next().unwrap();
        assert_eq!(read(&c, pair).as_deref(), Some("anon-1"));
        let value = pair.split_once('=').unwrap().1;
        assert_eq!(old.verify(value, NOW_MS), None);
        // Once the old key is dropped, its cookies are refused.
        let c = IdentityCookie::new("agent_identity", IdentityKey::new([9u8; 32]).unwrap());
        assert_eq!(read(&c.unwrap(), &before), None);
    }

    #[test]
    fn over_https_the_name_is_host_prefixed() {
        let c = cookie();
        let s = signed("user-42");
        let plain = format!("agent_identity={s}");
        let host = format!("__Host-agent_identity={s}");
        assert_eq!(
            c.read_header(&host, true, NOW_MS).as_deref(),
            Some("user-42")
        );
        // The plain name (which a sibling subdomain can set) is not read over https, nor the
        // prefixed one over http.
        assert_eq!(c.read_header(&plain, true, NOW_MS), None);
        assert_eq!(c.read_header(&host, false, NOW_MS), None);
        // Beside the real `__Host-` cookie, a planted plain one changes nothing.
        let planted = format!("agent_identity={}; {host}", signed("anon-attacker"));
        assert_eq!(
            c.read_header(&planted, true, NOW_MS).as_deref(),
            Some("user-42")
        );
    }

    #[test]
    fn several_cookie_headers_read_as_one() {
        let h = headers(&["a=1", &format!("agent_identity={}", signed("user-9"))]);
        assert_eq!(cookie().read(&h, false, NOW_MS).as_deref(), Some("user-9"));
    }

    #[test]
    fn value_with_equals_splits_pair_at_first_equals() {
        let header = format!("agent_identity={}", signed("k=v"));
        assert_eq!(read(&cookie(), &header).as_deref(), Some("k=v"));
    }

    #[test]
    fn cookie_name_validation() {
        for bad in [
            "",
            "a b",
            "a=b",
            "a;b",
            "__Host-x",
            "__host-x",
            "__Secure-x",
        ] {
            assert_eq!(
                IdentityCookie::new(bad, key()).unwrap_err(),
                ConfigError::InvalidCookieName(bad.into())
            );
        }
        assert!(IdentityCookie::new("my_app-id", key()).is_ok());
        assert_eq!(cookie().name(true), "__Host-agent_identity");
        assert_eq!(cookie().name(false), "agent_identity");
    }

    #[test]
    fn custom_cookie_name_is_used() {
        let c = IdentityCookie::new("who", key()).unwrap();
        let s = signed("u");
        assert_eq!(read(&c, &format!("who={s}")).as_deref(), Some("u"));
        assert_eq!(read(&c, &format!("agent_identity={s}")), None);
        assert!(c.set_cookie_header("u", false, NOW_MS).starts_with("who="));
        assert!(c
            .set_cookie_header("u", true, NOW_MS)
            .starts_with("__Host-who="));
    }

    #[test]
    fn set_cookie_header_text() {
        let c = cookie();
        let s = signed("anon-1");
        assert_eq!(
            c.set_cookie_header("anon-1", false, NOW_MS),
            format!("agent_identity={s}; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000")
        );
        assert_eq!(
            c.set_cookie_header("anon-1", true, NOW_MS),
            format!(
                "__Host-agent_identity={s}; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000; \
                 Secure"
            )
        );
    }
}
