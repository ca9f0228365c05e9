//! MCP sessions that outlive the process: rmcp's session store kept in the durable store's
//! MCP bindings. rmcp writes the client's `initialize` params there when a session is made;
//! after a restart, a request naming an id this server issued (and did not see deleted)
//! rebuilds the session under the same id by replaying that handshake, so the client goes
//! on without initializing again.
//!
//! The binding to a token is kept by token id (`tid`) and the token's stored hash, never the
//! token: a session bound with `connect_session` comes back bound to the same token, its calls
//! admitted by `tid` while the record still has that hash (a claim that rotated the token ends
//! it; the record's expiry and revocation still apply). Since a session id is then a credential
//! of its own, the store keys bindings by the SHA-256 of the id ([`stored_id`]), never the id:
//! like a token, it cannot be read back from the database.
//!
//! The stored bindings are held to the live caps (`docs/mcp.md` §Bounds on disk): a session
//! dropped from the registry has its binding deleted ([`delete`]), and `disk_bounds` trims the
//! rest.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use axum::http::{header, request::Parts};

use super::bound_token::BoundToken;
use super::McpState;
use crate::app::App;
use crate::clock::SharedClock;
use crate::engine::store::{McpBinding, McpBindings, StoreResult};
use crate::security::{
    request_client_address, sha256_hex, verify_bearer, verify_tid, AuthError, RateLimited,
};
use crate::surface::mcp::MCP_PATH;

/// The key of MCP session `id` in the store: lowercase hex SHA-256 of the id.
pub(crate) fn stored_id(id: &str) -> String {
    sha256_hex(id)
}

/// The stored binding of MCP session `id`.
pub(crate) async fn binding(
    store: &Arc<dyn McpBindings>,
    id: &str,
) -> StoreResult<Option<McpBinding>> {
    store.mcp_binding(&stored_id(id)).await
}

/// Deletes MCP session `id` from the store (logged on failure): it is never rebuilt.
pub(crate) async fn delete(store: &Arc<dyn McpBindings>, id: &str) {
    if let Err(e) = store.delete_mcp(&stored_id(id)).await {
        tracing::error!(target: "tea_agent_runtime::store", "deleting MCP session {id} failed: {e}");
    }
}

/// rmcp's [`SessionStore`] over [`McpBindings`].
pub(crate) struct StoredMcpSessions {
    bindings: Arc<dyn McpBindings>,
    clock: SharedClock,
}

impl StoredMcpSessions {
    pub(crate) fn new(bindings: Arc<dyn McpBindings>, clock: SharedClock) -> Self {
        StoredMcpSessions { bindings, clock }
    }
}

#[async_trait::async_trait]
impl SessionStore for StoredMcpSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(binding) = self.bindings.mcp_binding(&stored_id(session_id)).await? else {
            return Ok(None);
        };
        if binding.deleted || binding.init.is_empty() {
            return Ok(None);
        }
        Ok(Some(SessionState::new(serde_json::from_str(
            &binding.init,
        )?)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let binding = McpBinding {
            id: stored_id(session_id),
            tid: String::new(),
            token_hash: String::new(),
            init: serde_json::to_string(&state.initialize_params)?,
            created_at: self.clock.now_ms(),
            deleted: false,
        };
        Ok(self.bindings.bind_mcp(binding).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.bindings.delete_mcp(&stored_id(session_id)).await?)
    }
}

/// Records the token MCP session `id` is bound to, by id and hash (at `initialize` with a
/// bearer, or by `connect_session`); rmcp stored its `initialize` already. A failure is logged
/// and answered (a fleet's replica then refuses the session: its token's cap is counted in
/// the store).
pub(crate) async fn remember(
    store: &Arc<dyn McpBindings>,
    id: &str,
    bound: &BoundToken,
    now: u64,
) -> StoreResult<()> {
    let binding = McpBinding {
        id: stored_id(id),
        tid: bound.tid.clone(),
        token_hash: bound.token_hash.clone(),
        init: String::new(),
        created_at: now,
        deleted: false,
    };
    let stored = store.bind_mcp(binding).await;
    if let Err(e) = &stored {
        tracing::error!(target: "tea_agent_runtime::store", "storing MCP session {id} failed: {e}");
    }
    stored
}

/// Forgets the token MCP session `id` is bound to (`disconnect_session`): after a restart
/// it is not rebuilt bound.
pub(crate) async fn forget(store: &Arc<dyn McpBindings>, id: &str) {
    if let Err(e) = store.unbind_mcp(&stored_id(id)).await {
        tracing::error!(target: "tea_agent_runtime::store", "unbinding MCP session {id} failed: {e}");
    }
}

/// Why a request naming an id this process does not hold is not rebuilt.
pub(crate) enum Refused {
    /// 404 `session not found`.
    NotFound,
    /// The client address failed too often: 429 before any store read.
    Limited(RateLimited),
}

/// What a stored session is rebuilt with.
enum Verdict {
    Rebuild(BoundToken),
    /// Not rebuildable: counts as a failed credential of the client address.
    Refused,
    /// The store could not be read: 404, not counted against the client.
    Unavailable,
}

/// Checks a request naming MCP session `id`, which this process does not hold, against the
/// stored binding, holding no lock: the client address is refused (429) while it is blocked
/// for failed credentials, and an id that is not rebuilt counts as one
/// (`docs/mcp.md` §Restore after a restart). Answers the binding to rebuild the session with.
pub(crate) async fn admit_stored<A: App>(
    server: &McpState<A>,
    store: &Arc<dyn McpBindings>,
    parts: &Parts,
    id: &str,
) -> Result<BoundToken, Refused> {
    let address = request_client_address(parts, server.options().trust_proxy);
    server
        .auth_blocked_by(|| address.clone())
        .map_err(Refused::Limited)?;
    match verdict(server, store, parts, id).await {
        Verdict::Rebuild(binding) => Ok(binding),
        Verdict::Refused => {
            server.auth_failed(&address, MCP_PATH, None).await;
            Err(Refused::NotFound)
        }
        Verdict::Unavailable => Err(Refused::NotFound),
    }
}

/// The stored binding of `id` and the token record it names: rebuilt when the binding is
/// complete and the record still valid; a request with a bearer must carry the bound token
/// itself; without one, the record must still have the hash the session was bound with.
async fn verdict<A: App>(
    server: &McpState<A>,
    store: &Arc<dyn McpBindings>,
    parts: &Parts,
    id: &str,
) -> Verdict {
    let stored = match binding(store, id).await {
        Ok(Some(b)) if !b.deleted && !b.tid.is_empty() && !b.init.is_empty() => b,
        Ok(None) => return Verdict::Refused,
        // Never rebuilt: the row goes.
        Ok(Some(_)) => {
            delete(store, id).await;
            return Verdict::Refused;
        }
        Err(e) => {
            tracing::error!(target: "tea_agent_runtime::store", "loading MCP session {id} failed: {e}");
            return Verdict::Unavailable;
        }
    };
    let (now, ttl) = (server.now(), server.options().sliding_ttl_ms());
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(|a| a.to_str().unwrap_or_default());
    let verified = match authorization {
        Some(authorization) => {
            verify_bearer(Some(authorization), &**server.tokens(), now, ttl).await
        }
        None => verify_tid(&stored.tid, &**server.tokens(), now, ttl).await,
    };
    match verified {
        // The bound token itself, as the bearer: used as before.
        Ok(record) if authorization.is_some() && record.tid == stored.tid => {
            Verdict::Rebuild(BoundToken {
                tid: record.tid,
                token_hash: record.token_hash,
                token: authorization
                    .and_then(|a| a.strip_prefix("Bearer "))
                    .map(str::to_owned),
            })
        }
        // By token id, while the record keeps the hash the session was bound with.
        Ok(record) if authorization.is_none() && !stored.token_hash.is_empty() => {
            if record.token_hash == stored.token_hash {
                Verdict::Rebuild(BoundToken {
                    tid: record.tid,
                    token_hash: record.token_hash,
                    token: None,
                })
            } else {
                // The token was rotated (a claim) since: never rebuilt, the row goes.
                delete(store, id).await;
                Verdict::Refused
            }
        }
        // The bound token is revoked: never rebuilt, the row goes. (A bearer for another
        // token proves nothing about this one; an unknown or expired one cannot be told from
        // a database that failed, and a row without a hash may still be rebuilt with the
        // token as bearer, so those rows wait for the caps to trim them.)
        Err(AuthError::Revoked) if authorization.is_none() => {
            delete(store, id).await;
            Verdict::Refused
        }
        _ => Verdict::Refused,
    }
}

/// Whether a binding rebuilt without its raw token still holds: its token's record is valid
/// and still has the hash the session was bound with (a claim rotates it). A binding with the
/// raw token is checked by each call's bearer.
pub(crate) async fn still_bound<A: App>(server: &McpState<A>, binding: &BoundToken) -> bool {
    if binding.token.is_some() {
        return true;
    }
    let (now, ttl) = (server.now(), server.options().sliding_ttl_ms());
    match verify_tid(&binding.tid, &**server.tokens(), now, ttl).await {
        Ok(record) => !binding.token_hash.is_empty() && record.token_hash == binding.token_hash,
        Err(_) => false,
    }
}
