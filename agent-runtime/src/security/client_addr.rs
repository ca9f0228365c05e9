//! The client address (docs/lap.md §3.2): the rate-limit key of callers without identity.
//!
//! 1. With `trustProxy` n ≥ 1: the `x-forwarded-for` chain (split on commas, trimmed, empty
//!    entries dropped) gives `chain[len - n]` when it has at least n entries.
//! 2. Else, or as fallback: the peer address, trimmed, when non-empty.
//! 3. Else the shared literal `anon`.
//!
//! `x-real-ip` is never read.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The shared client address of callers nothing else distinguishes.
pub(super) const ANONYMOUS_CLIENT_ADDR: &str = "anon";

/// The number of trusted appending proxies in front of the server (`trustProxy`).
///
/// Built from a number (floored; negative or NaN → 0) or a boolean (`true` = 1, `false` = 0).
/// Deserializes from a JSON number or boolean; parses from text such as `2`, `1.7` or `true`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TrustProxy(u32);

impl TrustProxy {
    /// No trusted proxy (the default).
    pub const NONE: TrustProxy = TrustProxy(0);

    /// Exactly `hops` trusted proxies.
    pub const fn hops(hops: u32) -> Self {
        TrustProxy(hops)
    }

    /// From a configured number: floored; negative or NaN → 0; saturates at `u32::MAX`.
    pub fn from_number(n: f64) -> Self {
        if n.is_nan() || n < 1.0 {
            return TrustProxy(0);
        }
        let floored = n.floor();
        if floored >= f64::from(u32::MAX) {
            TrustProxy(u32::MAX)
        } else {
            TrustProxy(floored as u32)
        }
    }

    /// From a configured boolean: `true` = 1, `false` = 0.
    pub const fn from_bool(trust: bool) -> Self {
        TrustProxy(if trust { 1 } else { 0 })
    }

    /// The number of trusted proxies.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Whether at least one proxy is trusted.
    pub const fn is_enabled(self) -> bool {
        self.0 >= 1
    }
}

impl From<u32> for TrustProxy {
    fn from(hops: u32) -> Self {
        TrustProxy(hops)
    }
}

impl From<bool> for TrustProxy {
    fn from(trust: bool) -> Self {
        TrustProxy::from_bool(trust)
    }
}

/// A `trustProxy` text that is neither a number nor a boolean.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid trustProxy {0:?}: expected a number or true/false")]
pub struct InvalidTrustProxy(pub String);

impl FromStr for TrustProxy {
    type Err = InvalidTrustProxy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "true" => Ok(TrustProxy(1)),
            "false" => Ok(TrustProxy(0)),
            other => other
                .parse::<f64>()
                .ok()
                .filter(|n| !n.is_nan())
                .map(TrustProxy::from_number)
                .ok_or_else(|| InvalidTrustProxy(s.to_owned())),
        }
    }
}

impl fmt::Display for TrustProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for TrustProxy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.0)
    }
}

impl<'de> Deserialize<'de> for TrustProxy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TrustProxyVisitor;

        impl Visitor<'_> for TrustProxyVisitor {
            type Value = TrustProxy;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a boolean")
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<TrustProxy, E> {
                Ok(TrustProxy::from_bool(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TrustProxy, E> {
                Ok(TrustProxy(u32::try_from(v).unwrap_or(u32::MAX)))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TrustProxy, E> {
                Ok(TrustProxy(u32::try_from(v.max(0)).unwrap_or(u32::MAX)))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<TrustProxy, E> {
                Ok(TrustProxy::from_number(v))
            }
        }

        deserializer.deserialize_any(TrustProxyVisitor)
    }
}

/// The `x-forwarded-for` chain: every header line joined, split on commas, trimmed, empty
/// entries dropped. Lines that are not valid UTF-8 are skipped.
pub(super) fn forwarded_for_chain(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The client address of a request (docs/lap.md §3.2) from its headers and its peer address.
pub(super) fn client_address(headers: &HeaderMap, peer: Option<&str>, trust: TrustProxy) -> String {
    let n = trust.get() as usize;
    if n >= 1 {
        let mut chain = forwarded_for_chain(headers);
        if chain.len() >= n {
            return chain.swap_remove(chain.len() - n);
        }
    }
    match peer.map(str::trim) {
        Some(peer) if !peer.is_empty() => peer.to_owned(),
        _ => ANONYMOUS_CLIENT_ADDR.to_owned(),
    }
}

/// The TCP peer's IP address from axum's `ConnectInfo<SocketAddr>`, when the server was started
/// with connect info. The port is left out so that one client keeps one key across connections.
pub(super) fn peer_address(parts: &Parts) -> Option<String> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_string())
}

/// [`client_address`] of a request, with the peer address from [`peer_address`].
pub(crate) fn request_client_address(parts: &Parts, trust: TrustProxy) -> String {
    client_address(&parts.headers, peer_address(parts).as_deref(), trust)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, Request};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn default_config_ignores_forwarding_headers() {
        let h = headers(&[("x-forwarded-for", "1.2.3.4"), ("x-real-ip", "5.6.7.8")]);
        assert_eq!(client_address(&h, None, TrustProxy::NONE), "anon");
        assert_eq!(
            client_address(&h, Some("10.0.0.9"), TrustProxy::NONE),
            "10.0.0.9"
        );
    }

    #[test]
    fn spoofed_headers_all_land_on_one_key() {
        let keys: Vec<String> = [
            headers(&[("x-forwarded-for", "1.1.1.1")]),
            headers(&[("x-forwarded-for", "2.2.2.2, 3.3.3.3")]),
            headers(&[("x-real-ip", "4.4.4.4")]),
        ]
        .iter()
        .map(|h| client_address(h, Some("192.0.2.1"), TrustProxy::default()))
        .collect();
        assert!(keys.iter().all(|k| k == "192.0.2.1"), "{keys:?}");
    }

    #[test]
    fn trusted_proxy_picks_from_the_end() {
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.7")]);
        assert_eq!(
            client_address(&h, Some("10.0.0.1"), TrustProxy::hops(1)),
            "203.0.113.7"
        );
        assert_eq!(
            client_address(&h, Some("10.0.0.1"), TrustProxy::hops(2)),
            "1.2.3.4"
        );
        let h = headers(&[("x-forwarded-for", "203.0.113.7, 10.0.0.1")]);
        assert_eq!(client_address(&h, None, TrustProxy::hops(1)), "10.0.0.1");
    }

    #[test]
    fn short_chain_falls_back() {
        let h = headers(&[("x-forwarded-for", "1.2.3.4")]);
        assert_eq!(
            client_address(&h, Some("10.0.0.1"), TrustProxy::hops(2)),
            "10.0.0.1"
        );
        assert_eq!(client_address(&h, None, TrustProxy::hops(2)), "anon");
        assert_eq!(client_address(&h, Some("   "), TrustProxy::hops(2)), "anon");
        assert_eq!(
            client_address(&h, Some(" 10.0.0.1 "), TrustProxy::hops(3)),
            "10.0.0.1"
        );
    }

    #[test]
    fn empty_entries_and_whitespace() {
        let h = headers(&[("x-forwarded-for", "  ")]);
        assert_eq!(client_address(&h, None, TrustProxy::hops(1)), "anon");
        let h = headers(&[("x-forwarded-for", " , ,")]);
        assert_eq!(client_address(&h, None, TrustProxy::hops(1)), "anon");
        let h = headers(&[("x-forwarded-for", "1.1.1.1, , 2.2.2.2 ,")]);
        assert_eq!(client_address(&h, None, TrustProxy::hops(1)), "2.2.2.2");
        assert_eq!(client_address(&h, None, TrustProxy::hops(2)), "1.1.1.1");
    }

    #[test]
    fn x_real_ip_is_never_used() {
        let h = headers(&[("x-real-ip", "9.9.9.9")]);
        assert_eq!(client_address(&h, None, TrustProxy::hops(1)), "anon");
        assert_eq!(
            client_address(&h, Some("10.0.0.1"), TrustProxy::hops(1)),
            "10.0.0.1"
        );
    }

    #[test]
    fn several_forwarded_for_lines_form_one_chain() {
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1, 2.2.2.2"),
            ("x-forwarded-for", "3.3.3.3"),
        ]);
        assert_eq!(client_address(&h, None, TrustProxy::hops(1)), "3.3.3.3");
        assert_eq!(client_address(&h, None, TrustProxy::hops(3)), "1.1.1.1");
    }

    #[test]
    fn trust_proxy_values() {
        assert_eq!(TrustProxy::from_bool(true), TrustProxy::hops(1));
        assert_eq!(TrustProxy::from_bool(false), TrustProxy::NONE);
        assert_eq!(TrustProxy::from_number(1.9), TrustProxy::hops(1));
        assert_eq!(TrustProxy::from_number(2.0), TrustProxy::hops(2));
        assert_eq!(TrustProxy::from_number(0.5), TrustProxy::NONE);
        assert_eq!(TrustProxy::from_number(-3.0), TrustProxy::NONE);
        assert_eq!(TrustProxy::from_number(f64::NAN), TrustProxy::NONE);
        assert_eq!(TrustProxy::from_number(1e20), TrustProxy::hops(u32::MAX));
        assert_eq!("true".parse::<TrustProxy>(), Ok(TrustProxy::hops(1)));
        assert_eq!("false".parse::<TrustProxy>(), Ok(TrustProxy::NONE));
        assert_eq!("2.7".parse::<TrustProxy>(), Ok(TrustProxy::hops(2)));
        assert_eq!("-1".parse::<TrustProxy>(), Ok(TrustProxy::NONE));
        assert!("yes".parse::<TrustProxy>().is_err());
        assert!("NaN".parse::<TrustProxy>().is_err());
        for (json, hops) in [("true", 1), ("false", 0), ("3", 3), ("-2", 0), ("1.5", 1)] {
            let parsed: TrustProxy = serde_json::from_str(json).unwrap();
            assert_eq!(parsed, TrustProxy::hops(hops), "{json}");
        }
        assert!(serde_json::from_str::<TrustProxy>("\"1\"").is_err());
    }

    #[test]
    fn true_equals_one() {
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.7")]);
        assert_eq!(
            client_address(&h, None, TrustProxy::from(true)),
            client_address(&h, None, TrustProxy::hops(1))
        );
    }

    #[test]
    fn peer_from_connect_info() {
        let mut parts = Request::builder().body(()).unwrap().into_parts().0;
        assert_eq!(peer_address(&parts), None);
        assert_eq!(request_client_address(&parts, TrustProxy::NONE), "anon");
        let addr: SocketAddr = "192.0.2.5:40123".parse().unwrap();
        parts.extensions.insert(ConnectInfo(addr));
        assert_eq!(peer_address(&parts).as_deref(), Some("192.0.2.5"));
        parts
            .headers
            .insert("x-forwarded-for", HeaderValue::from_static("198.51.100.1"));
        assert_eq!(
            request_client_address(&parts, TrustProxy::NONE),
            "192.0.2.5"
        );
        assert_eq!(
            request_client_address(&parts, TrustProxy::hops(1)),
            "198.51.100.1"
        );
    }
}
