//! CORS for the agent routes (`ServerOptions::cors_origins`, `docs/security.md`): pages served
//! from the listed origins (an LLui app on its own dev server, say) may call mint, resume,
//! revoke, the sessions list, LAP and MCP from the browser. Preflights are answered; an allowed
//! origin is echoed in `Access-Control-Allow-Origin` with credentials allowed (the identity
//! cookie); any other origin gets no CORS header, so the browser keeps the answer from it.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::security::ConfigError;

/// How long a browser may cache a preflight answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// The request headers a page may send: JSON bodies, bearer tokens, MCP's session headers.
const ALLOWED_HEADERS: [&str; 5] = [
    "content-type",
    "authorization",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// The answer headers a page may read beyond the safelisted ones.
const EXPOSED_HEADERS: [&str; 4] = [
    "retry-after",
    "x-llui-reconnect",
    "idempotent-replayed",
    "mcp-session-id",
];

/// `origin` as `Origin` header values carry it: `scheme://host[:port]`, nothing after.
fn parse_origin(origin: &str) -> Result<HeaderValue, ConfigError> {
    let invalid = || ConfigError::InvalidCorsOrigin(origin.to_owned());
    let (scheme, rest) = origin.split_once("://").ok_or_else(invalid)?;
    let well_formed = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', ' '])
        && rest.parse::<axum::http::uri::Authority>().is_ok();
    if !well_formed {
        return Err(invalid());
    }
    HeaderValue::from_str(origin).map_err(|_| invalid())
}

/// The CORS layer for `origins`, or none when the list is empty; an origin that is not
/// `scheme://host[:port]` is a configuration error.
pub(crate) fn cors_layer(origins: &[String]) -> Result<Option<CorsLayer>, ConfigError> {
    if origins.is_empty() {
        return Ok(None);
    }
    let origins: Vec<HeaderValue> = origins
        .iter()
        .map(|o| parse_origin(o.trim()))
        .collect::<Result<_, _>>()?;
    let headers = |names: &[&'static str]| -> Vec<HeaderName> {
        names.iter().map(|n| HeaderName::from_static(n)).collect()
    };
    Ok(Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_credentials(true)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers(headers(&ALLOWED_HEADERS))
            .expose_headers(headers(&EXPOSED_HEADERS))
            .max_age(PREFLIGHT_MAX_AGE),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        for ok in [
            "http://localhost:5173",
            "https://app.example",
            "http://127.0.0.1:8080",
            "http://[::1]:3000",
        ] {
            assert!(parse_origin(ok).is_ok(), "{ok}");
        }
        for bad in [
            "localhost:5173",
            "http://",
            "http://app.example/",
            "http://app.example/path",
            "https://app.example?x=1",
            "://app",
            "http://a b",
        ] {
            assert_eq!(
                parse_origin(bad),
                Err(ConfigError::InvalidCorsOrigin(bad.to_owned())),
                "{bad}"
            );
        }
        assert!(cors_layer(&[]).unwrap().is_none());
        assert!(cors_layer(&["http://localhost:5173".into()])
            .unwrap()
            .is_some());
    }
}
