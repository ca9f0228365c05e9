//! The `Host` allow-list (DNS-rebinding defence): a page on another site that resolves its
//! own name to 127.0.0.1 reaches a loopback server with its own name in `Host`; refusing
//! unknown names stops it. Same rule as rmcp's check on `/agent/mcp`.

use std::future::{ready, Ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{header, uri::Authority, HeaderMap, Request};
use axum::response::Response;
use futures::future::Either;
use tower::{Layer, Service};

/// The loopback names: `localhost`, `127.0.0.1`, `::1` (any port).
pub fn loopback_hosts() -> Vec<String> {
    vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
}

/// Whether the request's `Host` (or, without one, its URI authority) matches an entry of
/// `allowed`. An entry without a port matches any port, `name:port` only that port; names
/// compare case-insensitively, IPv6 literals with or without brackets. An empty list allows
/// every host; a missing or unparsable `Host` is refused otherwise.
///
/// This parses `allowed` on each call; a server checking every request keeps an
/// [`AllowedHosts`] instead.
#[cfg(test)]
pub(super) fn host_allowed(parts: &axum::http::request::Parts, allowed: &[String]) -> bool {
    AllowedHosts::new(allowed).allows(&parts.headers, parts.uri.authority())
}

/// A `Host` allow-list with its entries parsed once (the rule of `host_allowed`).
#[derive(Debug, Clone)]
pub(crate) struct AllowedHosts {
    /// The list was empty: every host is allowed.
    any: bool,
    /// `(lowercase name without brackets, port)`; empty entries are dropped (they match
    /// nothing).
    entries: Arc<[(String, Option<u16>)]>,
}

impl AllowedHosts {
    /// Parses the entries of an allow-list.
    pub(crate) fn new(allowed: &[String]) -> Self {
        let entries = allowed
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
            .map(|entry| match Authority::try_from(entry) {
                Ok(a) => (normalize_host(a.host()), a.port_u16()),
                Err(_) => (normalize_host(entry), None),
            })
            .collect();
        AllowedHosts {
            any: allowed.is_empty(),
            entries,
        }
    }

    /// Whether a request with these headers (and URI authority) may pass.
    pub(crate) fn allows(&self, headers: &HeaderMap, uri_authority: Option<&Authority>) -> bool {
        if self.any {
            return true;
        }
        // The usual `Host` (`name:port` of plain characters) is read in place; anything else
        // is parsed as an authority (which copies it).
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if let Some((host, port)) = host.and_then(plain_host_port) {
            return self.matches(host, port);
        }
        let authority = match headers.get(header::HOST) {
            Some(h) => h.to_str().ok().and_then(|h| Authority::try_from(h).ok()),
            None => uri_authority.cloned(),
        };
        let Some(authority) = authority else {
            return false;
        };
        let host = authority.host().trim_matches(['[', ']']);
        self.matches(host, authority.port_u16())
    }

    /// Whether an entry matches `host` (without brackets) and `port`.
    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        self.entries.iter().any(|(entry_host, entry_port)| {
            entry_host.eq_ignore_ascii_case(host) && entry_port.is_none_or(|p| Some(p) == port)
        })
    }
}

/// `name[:port]` when `host` is only a name of letters, digits, dots and hyphens with an
/// optional decimal port: a valid authority, read without parsing it as one.
fn plain_host_port(host: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = match host.split_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (name, Some(port.parse().ok()?))
        }
        Some(_) => return None,
        None => (host, None),
    };
    let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
    (!name.is_empty() && name.bytes().all(plain)).then_some((name, port))
}

fn normalize_host(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// The detail of the 403 answered to a foreign `Host`.
pub(crate) const HOST_REFUSED_DETAIL: &str = "Host header is not allowed";

/// A tower layer that answers `refuse()` to a request whose `Host` the list does not allow
/// and passes the others on. It runs on every request, so it adds no box and no task: its
/// future is the inner service's, or the ready refusal.
#[derive(Debug, Clone)]
pub(crate) struct HostCheckLayer {
    allowed: AllowedHosts,
    refuse: fn() -> Response,
}

impl HostCheckLayer {
    /// Checks requests against `allowed`; a refused one is answered `refuse()`.
    pub(crate) fn new(allowed: AllowedHosts, refuse: fn() -> Response) -> Self {
        HostCheckLayer { allowed, refuse }
    }
}

impl<S> Layer<S> for HostCheckLayer {
    type Service = HostCheck<S>;

    fn layer(&self, inner: S) -> HostCheck<S> {
        HostCheck {
            inner,
            allowed: self.allowed.clone(),
            refuse: self.refuse,
        }
    }
}

/// The service of [`HostCheckLayer`].
#[derive(Debug, Clone)]
pub(crate) struct HostCheck<S> {
    inner: S,
    allowed: AllowedHosts,
    refuse: fn() -> Response,
}

impl<S, B> Service<Request<B>> for HostCheck<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, Ready<Result<Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if self
            .allowed
            .allows(request.headers(), request.uri().authority())
        {
            Either::Left(self.inner.call(request))
        } else {
            Either::Right(ready(Ok((self.refuse)())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::request::Parts;
    use axum::http::Request;

    fn parts(host: Option<&str>) -> Parts {
        let mut b = Request::builder().uri("/agent/mint");
        if let Some(h) = host {
            b = b.header(header::HOST, h);
        }
        b.body(()).unwrap().into_parts().0
    }

    proptest::proptest! {
        /// The in-place reading of a plain `Host` is the authority's, for any text it takes.
        #[test]
        fn a_plain_host_reads_as_its_authority(host in "[a-zA-Z0-9.:\\-\\[\\]_ ]{0,24}") {
            if let Some((name, port)) = plain_host_port(&host) {
                let authority = Authority::try_from(host.as_str()).expect("a valid authority");
                proptest::prop_assert_eq!(name, authority.host());
                proptest::prop_assert_eq!(port, authority.port_u16());
            }
        }
    }

    #[test]
    fn loopback_names_any_port_and_ports_when_listed() {
        let allowed = loopback_hosts();
        for ok in [
            "localhost",
            "LOCALHOST",
            "LOCALHOST:8787",
            "127.0.0.1:1",
            "[::1]:80",
        ] {
            assert!(host_allowed(&parts(Some(ok)), &allowed), "{ok}");
        }
        for bad in ["evil.example", "evil.example:8787", "127.0.0.2", "", "a b"] {
            assert!(!host_allowed(&parts(Some(bad)), &allowed), "{bad}");
        }
        assert!(!host_allowed(&parts(None), &allowed));
        let pinned = vec!["app.example:443".to_string()];
        assert!(host_allowed(&parts(Some("app.example:443")), &pinned));
        assert!(!host_allowed(&parts(Some("app.example:80")), &pinned));
        assert!(host_allowed(&parts(Some("anything")), &[]));
        // A list of empty entries matches nothing (it is not the empty list).
        assert!(!host_allowed(&parts(Some("localhost")), &[" ".to_string()]));
    }
}
