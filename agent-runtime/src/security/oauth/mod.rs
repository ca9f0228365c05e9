//! OAuth 2.1 for `/agent/mcp` (feature `oauth`, `docs/authorization.md`): the model the
//! authorization endpoints (`surface/oauth`) and the resource checks of `/agent/mcp` use.
//!
//! - `clients`: configured clients and dynamic registrations (RFC 7591), bounded, expiring
//!   unused;
//! - `redirect`: which redirect URIs may be registered and how one is matched (RFC 8252's
//!   loopback ports);
//! - `pkce`: S256 only (RFC 7636);
//! - `grants`: codes, grants, access and refresh tokens (rotation, reuse detection);
//! - `records`: the records of both, as plain data;
//! - `store`: where those records live ([`OAuthStore`]: `memory` here, the SQL stores in
//!   `engine/store/sql_oauth`);
//! - `secret`: the secrets handed out, kept as hashes;
//! - `metadata_document`: Client ID Metadata Documents, which ids are their URLs and what a
//!   document must hold; `document_fetch`: fetching one within bounds, never from a private
//!   address; `client_documents`: the documents kept;
//! - `resolve`: which client a `client_id` is (configured, registered or a document's).
//!
//! An access token verifies to the grant's agent token record, so everything past the
//! credential (the gate, rate limits, audit, expiry, revocation, the console) treats an OAuth
//! client as any agent.

mod client_documents;
mod clients;
#[cfg(test)]
pub(crate) mod conformance;
mod document_fetch;
mod grants;
mod memory;
mod metadata_document;
pub(crate) mod pkce;
mod records;
pub(crate) mod redirect;
mod resolve;
mod secret;
mod store;

pub(crate) use client_documents::ClientDocuments;
pub use clients::OAuthClient;
pub(crate) use clients::{Clients, RegistrationError, RegistrationRequest};
pub(crate) use document_fetch::FetchOptions;
pub(crate) use grants::{GrantError, Grants, Issued, Limits, Refreshed};
pub(crate) use memory::MemoryOAuthStore;
pub(crate) use records::{AccessRecord, ClientRecord, CodeRecord, CodeTaken, GrantRecord};
pub(crate) use resolve::{resolve_client, ClientRefused, ResolvedClient};
pub(crate) use secret::{hash_of, SecretKind};
pub(crate) use store::{GrantStored, NewGrant, OAuthStore, Rotation};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use store::{ACCESS_PER_GRANT, RETIRED_PER_GRANT};

use super::token_record::TokenRecord;
use super::token_store::TokenStore;
use super::tokens::{check_record, lookup_failed, refused, AuthError};

/// The path of the protected resource (`/agent/mcp`, the MCP surface's `MCP_PATH`: checked
/// equal by a test there), and so the audience of every access token.
pub(crate) const RESOURCE_PATH: &str = "/agent/mcp";

/// The path of its protected resource metadata (RFC 9728 §3.1: the well-known prefix
/// inserted before the resource's path).
pub(crate) const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/agent/mcp";

/// The OAuth state of one server: its clients and its grants.
pub(crate) struct OAuth {
    pub(crate) clients: Clients,
    /// The clients known by their metadata documents (`None`: documents are not accepted).
    pub(crate) documents: Option<ClientDocuments>,
    pub(crate) grants: Grants,
    /// Requests to the token, registration and revocation endpoints and the consent page per
    /// client address.
    pub(crate) limiter: super::GovernorRateLimiter,
}

/// Whether `issuer` can be an issuer: an `http(s)` origin without path, query or fragment
/// (RFC 8414 §2 allows a path; this server's endpoints live at its root).
pub(crate) fn check_issuer(issuer: &str) -> Result<(), String> {
    let url = url::Url::parse(issuer).map_err(|e| format!("OAuth issuer {issuer:?}: {e}"))?;
    let origin_only = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.path() == "/"
        && !issuer.ends_with('/')
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty();
    if !origin_only {
        return Err(format!(
            "OAuth issuer {issuer:?} must be an origin such as https://app.example (no path, \
             no trailing slash)"
        ));
    }
    Ok(())
}

/// Whether an `Authorization` header value carries an OAuth access token (`Bearer oat_…`).
pub(crate) fn is_access_token(authorization: Option<&str>) -> bool {
    authorization
        .and_then(|a| a.strip_prefix("Bearer "))
        .is_some_and(|t| t.starts_with(SecretKind::Access.prefix()))
}

/// Verifies an OAuth access token (`Bearer oat_…`) to the agent token record of its grant:
/// unknown, expired or of a revoked grant → 401 `auth-failed`; then the record's own checks,
/// as for an `agt_` bearer (its hard expiry is the grant's end, a revoke in the console or
/// by the owner ends it too).
pub(crate) async fn verify_access(
    authorization: Option<&str>,
    oauth: &OAuth,
    tokens: &dyn TokenStore,
    now: u64,
    sliding_ttl: Option<u64>,
) -> Result<TokenRecord, AuthError> {
    let token = authorization
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| refused("missing"))?;
    let hash = hash_of(SecretKind::Access, token).ok_or_else(|| refused("malformed"))?;
    let access = oauth
        .grants
        .access(&hash, now)
        .await
        .map_err(lookup_failed)?
        .ok_or_else(|| refused("unknown"))?;
    let record = tokens
        .find_by_tid(&access.tid)
        .await
        .map_err(lookup_failed)?;
    // A revoked grant's token is refused as unknown (401, RFC 6750's `invalid_token`), so the
    // client asks for consent again rather than give up on a 403.
    check_record(record, now, sliding_ttl).map_err(|e| match e {
        AuthError::Revoked => AuthError::AuthFailed,
        other => other,
    })
}
