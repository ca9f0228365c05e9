//! The OAuth records as the stores keep them: plain data, shared by the model (`clients`,
//! `grants`) and every [`OAuthStore`](super::OAuthStore) implementation.

use serde::{Deserialize, Serialize};

/// A client as the server keeps it (a registration in its [`OAuthStore`](super::OAuthStore)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClientRecord {
    pub(crate) client_id: String,
    pub(crate) client_name: String,
    pub(crate) redirect_uris: Vec<String>,
    /// When it registered (ms); 0 for a configured client.
    pub(crate) registered_at: u64,
    /// When it expires (ms): `registration_ttl` after it registered, then `grant_ttl` after
    /// its last use; never (`u64::MAX`) for a configured client.
    pub(crate) expires_at: u64,
}

/// A code waiting to be exchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CodeRecord {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    /// The S256 PKCE challenge.
    pub(crate) challenge: String,
    /// The scopes granted (space-separated).
    pub(crate) scope: String,
    /// The person who consented.
    pub(crate) uid: String,
    /// The session granted.
    pub(crate) session_id: String,
    /// The resource the tokens are for (this server's MCP URL).
    pub(crate) resource: String,
    pub(crate) expires_at: u64,
}

/// A grant: a client's access to one session, as one person consented.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GrantRecord {
    pub(crate) id: String,
    pub(crate) client_id: String,
    /// The agent token record (`tid`) that stands for the grant in the token store.
    pub(crate) tid: String,
    pub(crate) uid: String,
    pub(crate) session_id: String,
    pub(crate) scope: String,
    pub(crate) resource: String,
    pub(crate) created_at: u64,
    /// The grant's end: no refresh after it.
    pub(crate) expires_at: u64,
    /// The hash of the current refresh token.
    pub(crate) refresh_hash: String,
    /// How many times the refresh token was rotated.
    pub(crate) generation: u64,
    pub(crate) revoked: bool,
}

/// An access token, by its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AccessRecord {
    pub(crate) grant_id: String,
    pub(crate) tid: String,
    pub(crate) expires_at: u64,
}

/// What presenting a code found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CodeTaken {
    /// A pending code, now spent.
    Fresh(CodeRecord),
    /// Past its lifetime.
    Expired,
    /// Spent before: the grant it made (if it still exists) is revoked by the caller.
    Reused(Option<String>),
    /// Never made here.
    Unknown,
}
