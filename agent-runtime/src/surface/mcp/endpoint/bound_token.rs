//! The agent token an MCP session is bound to: its id, its stored hash and, when known, the token.

/// The agent token an MCP session is bound to.
#[derive(Clone, PartialEq, Eq)]
pub struct BoundToken {
    /// The token's id.
    pub tid: String,
    /// The stored hash of the token the session was bound with (never the token): a record
    /// whose hash changed since (a claim rotated the token) no longer admits the binding.
    pub token_hash: String,
    /// The token itself (sent as the bearer of forwarded calls; never logged). `None` for a
    /// session bound with `connect_session` and rebuilt after a restart: the raw token is
    /// never stored, so its calls are admitted by `tid` (expiry and revocation still apply).
    pub token: Option<String>,
}

impl std::fmt::Debug for BoundToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundToken")
            .field("tid", &self.tid)
            .finish_non_exhaustive()
    }
}
