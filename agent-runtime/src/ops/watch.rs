//! Watching a token's session from inside the server, for the surfaces that push (`/agent/mcp`
//! list-changed and resource-updated notifications, `docs/mcp.md` §Notifications).
//!
//! A [`Watched`] session is found as the gate finds it (the token id verified, its backend
//! resolved) but its reads are not calls: no rate limit, no `read` log entry, no audit. They
//! read what the caller may read anyway (its actions and the app description) to tell it that
//! something changed; what it then reads or sends goes through the gate.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tea_agent_schema::protocol::Action;

pub(crate) use super::backend::Change;
use super::backend::{Caller, SessionBackend};
use super::error::ApiError;
use super::state::ServerState;
use crate::app::App;
use crate::security::{verify_tid, TokenRecord};

/// A token's session, watched.
#[derive(Clone)]
pub(crate) struct Watched {
    record: TokenRecord,
    backend: Arc<dyn SessionBackend>,
}

impl Watched {
    /// The session of the token `tid`: errors as the gate's (401/403 for the token, 503
    /// `paused` for a closed or unpaired session), without taking the rate limit.
    pub(crate) async fn open<A: App>(server: &ServerState<A>, tid: &str) -> Result<Self, ApiError> {
        let record = verify_tid(
            tid,
            &**server.tokens(),
            server.now(),
            server.options().sliding_ttl_ms(),
        )
        .await?;
        let backend = super::gate::backend_of(server, &record).await?;
        Ok(Watched { record, backend })
    }

    /// The session of a caller the gate found ([`super::find_caller`]): watched without
    /// finding it again.
    pub(crate) fn of(caller: Caller) -> Self {
        Watched {
            record: caller.record,
            backend: caller.backend,
        }
    }

    /// The caller again, to call the gate's operations with ([`super::take_rate_limit`]
    /// first: watching took none).
    pub(crate) fn into_caller(self) -> Caller {
        Caller {
            record: self.record,
            backend: self.backend,
            follow: None,
            proposed: None,
        }
    }

    /// The scopes the token was granted (`None`: every scope, `docs/authorization.md` §Scopes).
    pub(crate) fn scope(&self) -> Option<&str> {
        self.record.scope.as_deref()
    }

    /// Whether the session's app runs elsewhere (a paired session, its operations relayed).
    pub(crate) fn is_relayed(&self) -> bool {
        self.backend.is_relay()
    }

    /// Waits up to `timeout` for the next state change.
    pub(crate) async fn next_change(&self, timeout: Duration) -> Result<Change, ApiError> {
        self.backend.next_change(&self.record, timeout).await
    }

    /// The actions available now, as `/actions` answers them.
    pub(crate) async fn actions(&self) -> Result<Vec<Action>, ApiError> {
        self.backend.available_actions(&self.record).await
    }

    /// The app description, as `/describe` answers it.
    pub(crate) async fn describe(&self) -> Result<Value, ApiError> {
        self.backend.description(&self.record).await
    }
}
