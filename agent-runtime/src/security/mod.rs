//! The security building blocks of the LAP server (docs/lap.md §2, §3): agent tokens and their
//! store, caller identity, the client address, rate limiting, the audit trail and the
//! cross-origin and `Host` checks.
//!
//! Request-time refusals (`AuthError`, [`RateLimited`], `CrossOriginRefused`, `LifecycleError`)
//! are answered as the operation core's one error type, `ApiError`, which converts each of them
//! (its `From` impls); start-up problems are [`ConfigError`]s.

mod audit;
mod auth_throttle;
mod client_addr;
mod error;
mod fleet_limit;
mod host_header;
mod identity;
#[cfg(feature = "oauth")]
pub(crate) mod oauth;
mod origin;
mod rate_limit;
mod scope;
#[cfg(feature = "mcp")]
mod sealed;
pub(crate) mod store_error;
mod token_lifecycle;
mod token_record;
pub(crate) mod token_store;
mod tokens;

// What an embedder uses: the extension points (tokens, identities, rate limits, audit) and
// the types their signatures and the server's options name.
pub use audit::{
    AuditEntry, AuditEvent, AuditSink, JsonLinesAuditSink, MemoryAuditSink, StderrAuditSink,
    TracingAuditSink,
};
pub use client_addr::{InvalidTrustProxy, TrustProxy};
pub use error::ConfigError;
pub use host_header::loopback_hosts;
pub use identity::{IdentityKey, IdentityResolver};
pub use rate_limit::{
    Bucket, GovernorRateLimiter, RateLimitSpec, RateLimited, RateLimiter, RateUnit,
};
// Storage errors and the token store are named under `store` (one path per item).
pub(crate) use store_error::StoreError;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use store_error::StoreResult;
pub use token_record::{
    AgentSession, SessionKind, TokenRecord, TokenStatus, UnknownSessionKind, UnknownTokenStatus,
};
pub use token_store::TokenChange;
pub(crate) use token_store::TokenStore;

// The rest is the server's own.
pub(crate) use auth_throttle::{AuthThrottle, Failure};
pub(crate) use client_addr::request_client_address;
pub(crate) use error::retry_after_secs;
#[cfg(feature = "postgres")]
pub(crate) use fleet_limit::Lease;
pub(crate) use fleet_limit::{FleetLimiter, RateBudgets, Refusal};
pub(crate) use host_header::{AllowedHosts, HostCheckLayer, HOST_REFUSED_DETAIL};
pub(crate) use identity::is_anonymous;
pub(crate) use identity::{Identity, IdentityCookie, DEFAULT_IDENTITY_COOKIE_NAME};
pub(crate) use origin::{CrossOriginRefused, OriginPolicy, RequestOrigin};
pub(crate) use scope::Scope;
#[cfg(feature = "mcp")]
pub(crate) use sealed::Sealer;
pub(crate) mod scopes {
    //! Scope lists (`scope`), called as `scopes::allows` etc.
    pub(crate) use super::scope::allows;
    pub(crate) use super::scope::{parse_list, to_text};
}
pub(crate) use token_lifecycle::LifecycleError;
pub(crate) mod lifecycle {
    //! The token life cycle's steps (`token_lifecycle`), called as `lifecycle::activate` etc.
    pub(crate) use super::token_lifecycle::{activate, revoke, store_minted, sweep_expired, touch};
    #[cfg(feature = "pairing")]
    pub(crate) use super::token_lifecycle::{claim, socket_closed, socket_opened};
}
pub(crate) use token_record::{MAX_TOKENS_PER_SESSION, SWEEP_RETENTION_MS};
pub(crate) use tokens::AuthError;
#[cfg(test)]
pub(crate) use tokens::Lapse;
pub(crate) use tokens::{mint_token, verify_bearer};
#[cfg(feature = "mcp")]
pub(crate) use tokens::{sha256_hex, verify_tid};
