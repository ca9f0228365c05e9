//! The `Host` allow-list (DNS-rebinding defence): a page on another site that resolves its
//! own name to 127.0.0.1 reaches a loopback server with its own name in `Host`; refusing
//! unknown names stops it. Same rule as rmcp's check on `/agent/mcp`.

use std::sync::Arc;

use axum::http::{header, uri::Authority, HeaderMap};

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
        let authority = match headers.get(header::HOST) {
            Some(h) => h.to_str().ok().and_then(|h| Authority::try_from(h).ok()),
            None => uri_authority.cloned(),
        };
        let Some(authority) = authority else {
            return false;
        };
        let host = authority.host().trim_matches(['[', ']']);
        let port = authority.port_u16();
        self.entries.iter().any(|(entry_host, entry_port)| {
            entry_host.eq_ignore_ascii_case(host) && entry_port.is_none_or(|p| Some(p) == port)
        })
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// The detail of the 403 answered to a foreign `Host`.
pub(crate) const HOST_REFUSED_DETAIL: &str = "Host header is not allowed";

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
