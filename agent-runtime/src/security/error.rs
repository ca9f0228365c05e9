//! Error plumbing shared by the security building blocks.
//!
//! Request-time refusals (a bad bearer, a throttled caller, a cross-origin POST, a life-cycle
//! step that did not happen) are answered as the operation core's one error type, `ApiError`,
//! which converts each of them and renders every error body and its headers. Start-up
//! failures (a short identity key, a bad rate-limit spec) are [`ConfigError`]s and never reach
//! the wire.

/// The `retry-after` header's seconds for a wait of `ms`: `max(1, ceil(ms / 1000))`.
pub(crate) fn retry_after_secs(ms: u64) -> u64 {
    ms.div_ceil(1000).max(1)
}

/// A configuration value the server refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The identity cookie signing key is shorter than 32 bytes (or empty).
    #[error("the identity cookie key must be at least 32 bytes, got {0}")]
    IdentityKeyTooShort(usize),
    /// The identity cookie name is empty or not a valid cookie name.
    #[error("invalid identity cookie name {0:?}")]
    InvalidCookieName(String),
    /// A rate-limit spec that is not `<count>/(second|minute|hour)` with a count of at least 1.
    #[error("invalid rate limit {0:?}: expected <count>/second, <count>/minute or <count>/hour with a count of at least 1")]
    InvalidRateLimit(String),
    /// A CORS origin that is not `scheme://host[:port]` (no path, no trailing slash).
    #[error(
        "invalid CORS origin {0:?}: expected scheme://host[:port], e.g. http://localhost:5173"
    )]
    InvalidCorsOrigin(String),
    /// OAuth options that do not check (feature `oauth`): an issuer that is not an origin, a
    /// configured client with a bad redirect URI.
    #[error("invalid OAuth options: {0}")]
    InvalidOAuth(String),
}
