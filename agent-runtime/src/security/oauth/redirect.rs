//! Redirect URIs (OAuth 2.1 §2.3.1, RFC 8252 §7.3): what a client may register, and how a
//! requested one is matched against the registered ones: exactly, except that the port of a
//! loopback `http` redirect is any (a native app listens on whatever port it got).

use url::{Host, Url};

/// The longest redirect URI accepted, in bytes.
pub(crate) const MAX_REDIRECT_URI_BYTES: usize = 2048;

/// Why a redirect URI cannot be registered.
pub(crate) fn check_registrable(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_REDIRECT_URI_BYTES {
        return Err(format!(
            "a redirect URI is {} bytes, more than the {MAX_REDIRECT_URI_BYTES} accepted",
            uri.len()
        ));
    }
    let url = Url::parse(uri).map_err(|e| format!("redirect URI {uri:?} is not a URL: {e}"))?;
    if url.fragment().is_some() {
        return Err(format!("redirect URI {uri:?} has a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("redirect URI {uri:?} carries credentials"));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(format!(
            "redirect URI {uri:?} is http on a host that is not loopback: use https"
        )),
        other => Err(format!(
            "redirect URI {uri:?} has scheme {other:?}: only https, or http on loopback, is \
             accepted"
        )),
    }
}

/// Whether `url`'s host is the loopback interface (`127.0.0.1`, `[::1]`, `localhost`).
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether `requested` matches one of `registered`: the same string, or, for a loopback
/// `http` redirect, the same URI but for its port.
pub(crate) fn matches(registered: &[String], requested: &str) -> bool {
    if registered.iter().any(|r| r == requested) {
        return true;
    }
    let Ok(requested) = Url::parse(requested) else {
        return false;
    };
    if requested.scheme() != "http" || !is_loopback(&requested) {
        return false;
    }
    registered.iter().any(|r| {
        Url::parse(r).is_ok_and(|r| {
            is_loopback(&r)
                && r.scheme() == "http"
                && r.host() == requested.host()
                && r.path() == requested.path()
                && r.query() == requested.query()
                && r.fragment().is_none()
                && requested.fragment().is_none()
        })
    })
}

/// The host a person is shown on the consent page: where the code will go.
pub(crate) fn host_of(uri: &str) -> String {
    Url::parse(uri)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| uri.chars().take(80).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_may_be_registered() {
        assert!(check_registrable("https://claude.ai/api/mcp/auth_callback").is_ok());
        assert!(check_registrable("http://localhost:3030/callback").is_ok());
        assert!(check_registrable("http://127.0.0.1/cb").is_ok());
        assert!(check_registrable("http://[::1]:8/cb").is_ok());
        assert!(check_registrable("http://example.com/cb").is_err());
        assert!(check_registrable("https://example.com/cb#frag").is_err());
        assert!(check_registrable("https://user:pw@example.com/cb").is_err());
        assert!(check_registrable("javascript:alert(1)").is_err());
        assert!(check_registrable("/relative").is_err());
        assert!(check_registrable(&format!("https://e.com/{}", "a".repeat(2048))).is_err());
    }

    #[test]
    fn matching_is_exact_but_for_a_loopback_port() {
        let registered = vec![
            "https://app.example/cb".to_owned(),
            "http://localhost:3030/callback".to_owned(),
        ];
        assert!(matches(&registered, "https://app.example/cb"));
        assert!(!matches(&registered, "https://app.example/cb/"));
        assert!(!matches(&registered, "https://app.example/cb?x=1"));
        assert!(!matches(&registered, "https://app.example:444/cb"));
        assert!(!matches(&registered, "https://evil.example/cb"));
        assert!(matches(&registered, "http://localhost:3030/callback"));
        assert!(matches(&registered, "http://localhost:61234/callback"));
        assert!(matches(&registered, "http://localhost/callback"));
        assert!(!matches(&registered, "http://localhost:61234/other"));
        assert!(!matches(&registered, "http://127.0.0.1:3030/callback"));
        assert!(!matches(&registered, "https://localhost:3030/callback"));
        assert_eq!(host_of("https://claude.ai/api/cb"), "claude.ai");
    }
}
