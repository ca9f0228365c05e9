//! MCP sessions that outlive the process: rmcp's session store kept in the durable store's
//! MCP bindings. rmcp writes the client's `initialize` params there when a session is made;
//! after a restart, a request naming an id this server issued (and did not see deleted)
//! rebuilds the session under the same id by replaying that handshake, so the client goes
//! on without initializing again.
//!
//! The binding to a token is kept by token id (`tid`), never the token: a session bound with
//! `connect_session` comes back bound to the same token, its calls admitted by `tid`
//! (the record's expiry and revocation still apply). Since a session id is then a credential
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

use crate::clock::SharedClock;
use crate::engine::store::{McpBinding, McpBindings, StoreResult};
use crate::security::sha256_hex;

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
        tracing::error!(target: "agent_runtime::store", "deleting MCP session {id} failed: {e}");
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

/// Records the token MCP session `id` is bound to (at `initialize` with a bearer, or by
/// `connect_session`); rmcp stored its `initialize` already.
pub(crate) async fn remember(store: &Arc<dyn McpBindings>, id: &str, tid: &str, now: u64) {
    let binding = McpBinding {
        id: stored_id(id),
        tid: tid.to_owned(),
        init: String::new(),
        created_at: now,
        deleted: false,
    };
    if let Err(e) = store.bind_mcp(binding).await {
        tracing::error!(target: "agent_runtime::store", "storing MCP session {id} failed: {e}");
    }
}

/// Forgets the token MCP session `id` is bound to (`disconnect_session`): after a restart
/// it is not rebuilt bound.
pub(crate) async fn forget(store: &Arc<dyn McpBindings>, id: &str) {
    if let Err(e) = store.unbind_mcp(&stored_id(id)).await {
        tracing::error!(target: "agent_runtime::store", "unbinding MCP session {id} failed: {e}");
    }
}
