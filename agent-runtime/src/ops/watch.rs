//! Watching a token's session from inside the server, for the surfaces that push (`/agent/mcp`
//! list-changed and resource-updated notifications, `docs/mcp.md` §Notifications).
//!
//! A [`Watched`] session is found as the gate finds it (the token id verified, its backend
//! resolved) but its reads are not calls: no rate limit, no `read` log entry, no audit. They
//! read what the caller may read anyway (its actions and the app description) to tell it that
//! something changed; what it then reads or sends goes through the gate.

use std::time::Duration;

use agent_schema::protocol::Action;
#[cfg(feature = "pairing")]
use agent_schema::protocol::{ActionsResponse, EmptyRequest};
use serde_json::Value;

#[cfg(feature = "pairing")]
use super::call::Resolved;
use super::call::{Backend, Caller};
use super::error::ApiError;
use super::state::ServerState;
#[cfg(feature = "pairing")]
use super::table::Operation;
use crate::app::App;
use crate::engine::session::SessionError;
use crate::security::{verify_tid, TokenRecord};

/// What a change wait saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The state changed.
    Changed,
    /// Nothing changed within the wait.
    Quiet,
}

/// A token's session, watched.
pub(crate) struct Watched<A: App> {
    server: ServerState<A>,
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))] // a paired session's relay reads it
    record: TokenRecord,
    backend: Backend<A>,
}

impl<A: App> Watched<A> {
    /// The session of the token `tid`: errors as the gate's (401/403 for the token, 503
    /// `paused` for a closed or unpaired session), without taking the rate limit.
    pub(crate) async fn open(server: &ServerState<A>, tid: &str) -> Result<Self, ApiError> {
        let record = verify_tid(
            tid,
            &**server.tokens(),
            server.now(),
            server.options().sliding_ttl_ms(),
        )
        .await?;
        let backend = super::gate::backend_of(server, &record).await?;
        Ok(Watched {
            server: server.clone(),
            record,
            backend,
        })
    }

    /// The session of a caller the gate found ([`super::find_caller`]): watched without
    /// finding it again.
    pub(crate) fn of(server: &ServerState<A>, caller: Caller<A>) -> Self {
        Watched {
            server: server.clone(),
            record: caller.record,
            backend: caller.backend,
        }
    }

    /// The caller again, to call the gate's operations with ([`super::take_rate_limit`]
    /// first: watching took none).
    pub(crate) fn into_caller(self) -> Caller<A> {
        Caller {
            record: self.record,
            backend: self.backend,
        }
    }

    /// Whether the session is a paired one (its app runs elsewhere).
    pub(crate) fn is_paired(&self) -> bool {
        !matches!(self.backend, Backend::Hosted(_))
    }

    /// Waits up to `timeout` for the next state change.
    pub(crate) async fn next_change(&self, timeout: Duration) -> Result<Change, ApiError> {
        match &self.backend {
            Backend::Hosted(session) => {
                let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
                match session.wait_for_change(None, ms).await {
                    Ok(w) if w.state_after.is_null() => Ok(Change::Quiet),
                    Ok(_) => Ok(Change::Changed),
                    Err(_) => Err(ApiError::paused()),
                }
            }
            #[cfg(feature = "pairing")]
            Backend::Paired => {
                let hub = &self.server.pairing().hub;
                match hub.wait_change(&self.record.tid, None, timeout).await {
                    Ok(Some(_)) => Ok(Change::Changed),
                    Ok(None) => Ok(Change::Quiet),
                    Err(_) => Err(ApiError::paused()),
                }
            }
        }
    }

    /// The actions available now, as `/actions` answers them.
    pub(crate) async fn actions(&self) -> Result<Vec<Action>, ApiError> {
        match &self.backend {
            Backend::Hosted(session) => session.list_actions().map_err(closed),
            #[cfg(feature = "pairing")]
            Backend::Paired => {
                let call = self.resolved(Operation::Actions);
                let answer = super::paired::actions(&call, EmptyRequest {}).await?;
                serde_json::from_str::<ActionsResponse>(answer.body.get())
                    .map(|r| r.actions)
                    .map_err(|e| ApiError::internal(format!("the app's actions: {e}")))
            }
        }
    }

    /// The app description, as `/describe` answers it.
    pub(crate) async fn describe(&self) -> Result<Value, ApiError> {
        match &self.backend {
            Backend::Hosted(_) => Ok(self.server.host().describe().clone()),
            #[cfg(feature = "pairing")]
            Backend::Paired => {
                let call = self.resolved(Operation::Describe);
                let answer = super::paired::describe(&call, EmptyRequest {}).await?;
                serde_json::from_str(answer.body.get())
                    .map_err(|e| ApiError::internal(format!("the app's description: {e}")))
            }
        }
    }

    #[cfg(feature = "pairing")]
    fn resolved(&self, op: Operation) -> Resolved<'_, A> {
        Resolved {
            server: &self.server,
            record: &self.record,
            backend: &self.backend,
            spec: op.spec(),
            args: Value::Object(Default::default()),
        }
    }
}

fn closed(e: SessionError) -> ApiError {
    match e {
        SessionError::Closed => ApiError::paused(),
        other => ApiError::internal(other.to_string()),
    }
}
