//! The security building blocks of the LAP server (lap.md §2, §3): agent tokens and their
//! store, caller identity, the client address, rate limiting, the audit trail and the
//! cross-origin and `Host` checks.
//!
//! Request-time refusals ([`AuthError`], [`RateLimited`], [`CrossOriginRefused`]) implement
//! [`WireError`] (HTTP status, error code, body) and axum's `IntoResponse`; start-up problems
//! are [`ConfigError`]s.

mod audit;
mod client_addr;
mod error;
mod host_header;
mod identity;
mod origin;
mod rate_limit;
mod token_store;
mod tokens;

pub use audit::{
    AuditEntry, AuditEvent, AuditSink, JsonLinesAuditSink, MemoryAuditSink, TracingAuditSink,
    AUDIT_TARGET,
};
pub use client_addr::{
    client_address, forwarded_for_chain, peer_address, request_client_address, InvalidTrustProxy,
    TrustProxy, ANONYMOUS_CLIENT_ADDR,
};
pub use error::{insert_retry_after, wire_error_response, ConfigError, WireError};
pub use host_header::{
    host_allowed, host_allowed_in, loopback_hosts, AllowedHosts, HOST_REFUSED_DETAIL,
};
pub use identity::{
    anonymous_identity, Identity, IdentityCookie, IdentityKey, IdentityResolver, IssuedIdentity,
    ANONYMOUS_PREFIX, DEFAULT_IDENTITY_COOKIE_NAME, IDENTITY_COOKIE_MAX_AGE_S,
    MIN_IDENTITY_KEY_LEN,
};
pub use origin::{
    request_origin, CrossOriginRefused, OriginPolicy, RequestOrigin, CROSS_ORIGIN_DETAIL,
};
pub use rate_limit::{
    Bucket, GovernorRateLimiter, RateLimitSpec, RateLimited, RateLimiter, RateUnit,
    RuntimeGovernorClock,
};
pub use token_store::{InMemoryTokenStore, TokenStore};
pub use tokens::{
    mint_token, token_hash_of, verify_bearer, AgentSession, AuthError, SecretToken, TokenRecord,
    TokenStatus, DEFAULT_ACTIVE_LABEL, SWEEP_RETENTION_MS, TOKEN_PREFIX, TOKEN_TTL_MS,
    UNKNOWN_LABEL,
};
#[cfg(feature = "mcp")]
pub(crate) use tokens::{sha256_hex, verify_tid};
