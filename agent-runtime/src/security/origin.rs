//! The request origin and the cross-origin check for cookie-authenticated POSTs (docs/lap.md §3.6).
//!
//! The request origin is `scheme://host[:port]`: with `trustProxy` ≥ 1 the scheme and host come
//! from the first entries of `x-forwarded-proto` / `x-forwarded-host` (each falling back when
//! absent or empty); otherwise the scheme is `http` (`https` when the host app declares that it
//! serves TLS) and the host is the `Host` header (the URI authority for HTTP/2 requests that
//! carry none).

use std::fmt;
use tea_agent_schema::protocol::ErrorCode;

use axum::http::header::{HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::HeaderMap;

use super::client_addr::TrustProxy;

/// The `detail` of a refused cross-origin request.
pub(super) const CROSS_ORIGIN_DETAIL: &str = "cross-origin request refused";

/// The origin a request was addressed to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RequestOrigin {
    scheme: String,
    host: String,
}

impl RequestOrigin {
    /// An origin from its parts; the scheme is lowercased.
    pub(crate) fn new(scheme: &str, host: &str) -> Self {
        RequestOrigin {
            scheme: scheme.trim().to_ascii_lowercase(),
            host: host.trim().to_owned(),
        }
    }

    #[cfg(test)]
    /// `host[:port]` (empty when the request named no host).
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// Whether the scheme is `https` (identity cookies then get `; Secure`).
    pub(crate) fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// The origin followed by `path`, e.g. the LAP URL `https://app.example/agent/lap/v1`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{self}{path}")
    }

    /// `ws://` (or `wss://` for https) + host + `path`.
    pub(crate) fn websocket_url(&self, path: &str) -> String {
        let scheme = if self.is_https() { "wss" } else { "ws" };
        format!("{scheme}://{}{path}", self.host)
    }

    /// Whether `origin` (an `Origin` header value) names this origin. Scheme and host compare
    /// ASCII case-insensitively, as browsers serialize them in lowercase anyway.
    pub(crate) fn matches(&self, origin: &str) -> bool {
        origin.eq_ignore_ascii_case(&self.to_string())
    }
}

impl fmt::Display for RequestOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)
    }
}

/// The first comma-separated entry of a header, trimmed, when non-empty.
fn first_entry(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?.to_str().ok()?;
    let first = value.split(',').next()?.trim();
    (!first.is_empty()).then(|| first.to_owned())
}

/// The request origin from the headers, the URI authority (when the request has one), the
/// proxy trust and whether the app serves TLS.
pub(super) fn request_origin(
    headers: &HeaderMap,
    uri_authority: Option<&str>,
    trust: TrustProxy,
    tls: bool,
) -> RequestOrigin {
    let direct_scheme = if tls { "https" } else { "http" };
    let direct_host = || {
        headers
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .or(uri_authority)
            .unwrap_or("")
            .to_owned()
    };
    if trust.is_enabled() {
        let scheme = first_entry(headers, "x-forwarded-proto");
        let host = first_entry(headers, "x-forwarded-host");
        RequestOrigin::new(
            scheme.as_deref().unwrap_or(direct_scheme),
            &host.unwrap_or_else(direct_host),
        )
    } else {
        RequestOrigin::new(direct_scheme, &direct_host())
    }
}

/// A POST whose `Origin` is neither the request origin nor allowed: 403
/// `{"error":{"code":"forbidden","detail":"cross-origin request refused"}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cross-origin request refused")]
pub(crate) struct CrossOriginRefused;

impl CrossOriginRefused {
    /// Its error code (answered as an `ApiError`, whose `From` reads it).
    pub(crate) fn code(&self) -> ErrorCode {
        ErrorCode::Forbidden
    }

    /// Its detail.
    pub(crate) fn detail(&self) -> &'static str {
        CROSS_ORIGIN_DETAIL
    }
}

/// The inputs of the origin computation and check: `trustProxy`, whether the app serves TLS,
/// and `allowedOrigins` (extra origins accepted for cookie-authenticated POSTs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OriginPolicy {
    /// The number of trusted proxies.
    pub trust_proxy: TrustProxy,
    /// Whether the host app serves TLS itself (direct requests are then `https`).
    pub tls: bool,
    /// Extra accepted origins, `scheme://host[:port]`.
    pub allowed_origins: Vec<String>,
}

impl OriginPolicy {
    /// The origin `parts` was addressed to.
    pub(crate) fn request_origin(&self, parts: &Parts) -> RequestOrigin {
        request_origin(
            &parts.headers,
            parts.uri.authority().map(|a| a.as_str()),
            self.trust_proxy,
            self.tls,
        )
    }

    /// The cross-origin check of `/agent/mint`, `/agent/revoke` and the human POST routes: no
    /// `Origin` header passes; otherwise every `Origin` value must be the request origin or one
    /// of `allowedOrigins` (an unreadable value is refused).
    pub(crate) fn check(&self, parts: &Parts) -> Result<(), CrossOriginRefused> {
        let mut origins = parts.headers.get_all(ORIGIN).iter().peekable();
        if origins.peek().is_none() {
            return Ok(());
        }
        let own = self.request_origin(parts);
        for value in origins {
            let value = value.to_str().map_err(|_| CrossOriginRefused)?.trim();
            let allowed = own.matches(value)
                || self
                    .allowed_origins
                    .iter()
                    .any(|o| o.trim().eq_ignore_ascii_case(value));
            if !allowed {
                return Err(CrossOriginRefused);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut builder = Request::builder().method("POST").uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    fn policy(trust: u32, tls: bool, allowed: &[&str]) -> OriginPolicy {
        OriginPolicy {
            trust_proxy: TrustProxy::hops(trust),
            tls,
            allowed_origins: allowed.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn direct_origin_from_host() {
        let p = parts("/agent/mint", &[("host", "app.example:8080")]);
        assert_eq!(
            policy(0, false, &[]).request_origin(&p).to_string(),
            "http://app.example:8080"
        );
        assert_eq!(
            policy(0, true, &[]).request_origin(&p).to_string(),
            "https://app.example:8080"
        );
    }

    #[test]
    fn forwarded_headers_ignored_without_trust() {
        let p = parts(
            "/agent/mint",
            &[
                ("host", "internal:3000"),
                ("x-forwarded-proto", "https"),
                ("x-forwarded-host", "app.example"),
            ],
        );
        assert_eq!(
            policy(0, false, &[]).request_origin(&p).to_string(),
            "http://internal:3000"
        );
    }

    #[test]
    fn forwarded_headers_first_entries_with_trust() {
        let p = parts(
            "/agent/mint",
            &[
                ("host", "internal:3000"),
                ("x-forwarded-proto", "HTTPS, http"),
                ("x-forwarded-host", " app.example , other"),
            ],
        );
        let origin = policy(1, false, &[]).request_origin(&p);
        assert_eq!(origin.to_string(), "https://app.example");
        assert!(origin.is_https());
        assert_eq!(
            origin.url("/agent/lap/v1"),
            "https://app.example/agent/lap/v1"
        );
        assert_eq!(
            origin.websocket_url("/agent/ws"),
            "wss://app.example/agent/ws"
        );
    }

    #[test]
    fn forwarded_headers_fall_back_individually() {
        let p = parts(
            "/",
            &[("host", "internal:3000"), ("x-forwarded-proto", "https")],
        );
        assert_eq!(
            policy(1, false, &[]).request_origin(&p).to_string(),
            "https://internal:3000"
        );
        let p = parts(
            "/",
            &[
                ("host", "internal:3000"),
                ("x-forwarded-host", "app.example"),
            ],
        );
        assert_eq!(
            policy(2, true, &[]).request_origin(&p).to_string(),
            "https://app.example"
        );
        let p = parts("/", &[("host", "h"), ("x-forwarded-proto", " , https")]);
        assert_eq!(
            policy(1, false, &[]).request_origin(&p).to_string(),
            "http://h"
        );
    }

    #[test]
    fn host_falls_back_to_uri_authority() {
        let p = parts("http://h2.example:9/agent/mint", &[]);
        assert_eq!(
            policy(0, false, &[]).request_origin(&p).to_string(),
            "http://h2.example:9"
        );
        let p = parts("/agent/mint", &[]);
        let origin = policy(0, false, &[]).request_origin(&p);
        assert_eq!(origin.host(), "");
        assert_eq!(origin.websocket_url("/agent/ws"), "ws:///agent/ws");
    }

    #[test]
    fn no_origin_header_passes() {
        let p = parts("/agent/mint", &[("host", "app.example")]);
        assert_eq!(policy(0, false, &[]).check(&p), Ok(()));
    }

    #[test]
    fn same_origin_passes() {
        let p = parts(
            "/agent/mint",
            &[
                ("host", "app.example:8080"),
                ("origin", "http://app.example:8080"),
            ],
        );
        assert_eq!(policy(0, false, &[]).check(&p), Ok(()));
        let p = parts(
            "/agent/mint",
            &[
                ("host", "App.Example:8080"),
                ("origin", "http://app.example:8080"),
            ],
        );
        assert_eq!(policy(0, false, &[]).check(&p), Ok(()));
    }

    #[test]
    fn cross_origin_is_refused() {
        for origin in [
            "http://evil.example",
            "https://app.example:8080",
            "http://app.example",
            "http://app.example:8080/",
            "null",
            "",
        ] {
            let p = parts(
                "/agent/mint",
                &[("host", "app.example:8080"), ("origin", origin)],
            );
            assert_eq!(
                policy(0, false, &[]).check(&p),
                Err(CrossOriginRefused),
                "{origin}"
            );
        }
    }

    #[test]
    fn proxied_https_origin() {
        let headers = [
            ("host", "127.0.0.1:3000"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "app.example"),
            ("origin", "https://app.example"),
        ];
        let p = parts("/agent/revoke", &headers);
        assert_eq!(policy(1, false, &[]).check(&p), Ok(()));
        // Without proxy trust the same request is cross-origin.
        assert_eq!(policy(0, false, &[]).check(&p), Err(CrossOriginRefused));
    }

    #[test]
    fn allowed_origins_pass() {
        let p = parts(
            "/agent/mint",
            &[
                ("host", "app.example"),
                ("origin", "https://console.example"),
            ],
        );
        assert_eq!(
            policy(0, false, &["https://console.example"]).check(&p),
            Ok(())
        );
        assert_eq!(
            policy(0, false, &["https://other.example"]).check(&p),
            Err(CrossOriginRefused)
        );
    }

    #[test]
    fn every_origin_header_must_pass() {
        let p = parts(
            "/agent/mint",
            &[
                ("host", "app.example"),
                ("origin", "http://app.example"),
                ("origin", "http://evil.example"),
            ],
        );
        assert_eq!(policy(0, false, &[]).check(&p), Err(CrossOriginRefused));
    }
}
