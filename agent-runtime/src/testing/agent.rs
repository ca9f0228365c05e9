//! An agent in the test's process ([`Agent`]): a token minted for a session of an
//! [`AgentServer`], calling operations through the same table and gate as LAP and MCP, with no
//! socket. A test records a run with it; a replay calls through it.

use serde_json::Value;

use super::report::ReplayError;
use crate::app::App;
use crate::ops::{find_caller, perform, Credential, Operation, Reply, ServerState};
use crate::security::{mint_token, TokenRecord};
use crate::server::AgentServer;

/// An agent token of one session, calling its operations in this process.
pub struct Agent<A: App> {
    server: ServerState<A>,
    bearer: String,
    tid: String,
}

impl<A: App> std::fmt::Debug for Agent<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("tid", &self.tid)
            .finish_non_exhaustive()
    }
}

impl<A: App> Agent<A> {
    /// Mints a token for the session `session_id` of `server`, owned by the session's owner.
    /// [`ReplayError::Setup`] when the session is unknown or the token store fails.
    pub async fn mint(server: &AgentServer<A>, session_id: &str) -> Result<Self, ReplayError> {
        Self::mint_on(server.state(), session_id).await
    }

    pub(super) async fn mint_on(
        server: &ServerState<A>,
        session_id: &str,
    ) -> Result<Self, ReplayError> {
        let session = server
            .host()
            .load_session(session_id)
            .await
            .ok_or_else(|| ReplayError::Setup(format!("no session {session_id}")))?;
        let (token, hash) = mint_token();
        let record = TokenRecord::minted(
            hash,
            session.owner().map(str::to_string),
            session_id.to_string(),
            "http://in-process.invalid".to_string(),
            server.now(),
        );
        let tid = record.tid.clone();
        server
            .tokens()
            .create(record)
            .await
            .map_err(|e| ReplayError::Setup(format!("the token store: {e}")))?;
        Ok(Agent {
            server: server.clone(),
            bearer: format!("Bearer {}", token.expose()),
            tid,
        })
    }

    /// The token's id.
    pub fn tid(&self) -> &str {
        &self.tid
    }

    /// Calls `op` with `body` as a LAP or MCP call would (the gate without the rate limit):
    /// the answer's status and body (an error's body for an error).
    pub async fn call(&self, op: Operation, body: Value) -> (u16, Value) {
        self.reply(op, body).await.recorded()
    }

    pub(super) async fn reply(&self, op: Operation, body: Value) -> Reply {
        match find_caller(&self.server, Credential::Bearer(Some(&self.bearer))).await {
            Ok(caller) => perform(&self.server, caller, op, body).await,
            Err(e) => Reply::error(e),
        }
    }
}
