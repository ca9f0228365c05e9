//! MCP sessions that outlive the process: rmcp's session store kept in the durable store's
//! MCP bindings. rmcp writes the client's `initialize` params there when a session is made;
//! after a restart, a request naming an id this server issued (and did not see deleted)
//! rebuilds the session under the same id by replaying that handshake, so the client goes
//! on without initializing again.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::clock::SharedClock;
use crate::store::{McpBinding, McpBindings};

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
        let Some(binding) = self.bindings.mcp_binding(session_id).await? else {
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
            id: session_id.to_owned(),
            tid: String::new(),
            init: serde_json::to_string(&state.initialize_params)?,
            created_at: self.clock.now_ms(),
            deleted: false,
        };
        Ok(self.bindings.bind_mcp(binding).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.bindings.delete_mcp(session_id).await?)
    }
}
