//! What a call is once the gate admitted it: the caller ([`Caller`]: token record and
//! [`Backend`]), what a handler receives ([`Resolved`], and [`Call`] for a hosted session) and
//! what it answers ([`Answer`], made a typed [`Success`] in [`Handled`]).

use agent_schema::protocol::{LogEntry, WithdrawResponse, WithdrawnStatus};
use serde::Serialize;
use serde_json::Value;

use super::error::ApiError;
use super::reply::Success;
use super::spec::OperationSpec;
use super::state::ServerState;
use crate::app::App;
use crate::engine::session::{activity, Session};
use crate::security::{AuditEvent, TokenRecord};

/// What answers an admitted caller's operations: the two kinds of session behind the table.
pub(crate) enum Backend<A: App> {
    /// A session hosted in this process.
    Hosted(Session<A>),
    /// A paired session (`docs/pairing.md`): its app runs elsewhere and answers `rpc` frames over
    /// `/agent/ws` (`super::paired`).
    #[cfg(feature = "pairing")]
    Paired,
}

/// A caller the gate admitted: its token record and what answers for the token's session.
pub(crate) struct Caller<A: App> {
    /// The token record, as verified.
    pub(crate) record: TokenRecord,
    /// The session's backend.
    pub(crate) backend: Backend<A>,
}

/// What a handler receives: the state, the caller and, for a paired session, the request
/// body as it came (relayed as the `rpc` arguments).
pub(crate) struct Resolved<'a, A: App> {
    /// The shared state.
    pub(crate) server: &'a ServerState<A>,
    /// The caller's token record.
    pub(crate) record: &'a TokenRecord,
    /// The caller's backend.
    pub(crate) backend: &'a Backend<A>,
    /// The operation's spec.
    pub(crate) spec: &'static OperationSpec,
    /// The request body (an object, or `{}`), for a paired session's `rpc` arguments.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) args: Value,
}

impl<'a, A: App> Resolved<'a, A> {
    /// The hosted call, when the backend is a hosted session.
    pub(crate) fn hosted(&self) -> Option<Call<'a, A>> {
        match self.backend {
            Backend::Hosted(session) => Some(Call {
                server: self.server,
                record: self.record,
                session,
                spec: self.spec,
            }),
            #[cfg(feature = "pairing")]
            Backend::Paired => None,
        }
    }
}

/// What a handler sees: the server, and the caller the gate resolved.
pub(crate) struct Call<'a, A: App> {
    /// The server.
    pub(crate) server: &'a ServerState<A>,
    /// The caller's token record.
    pub(crate) record: &'a TokenRecord,
    /// The token's session.
    pub(crate) session: &'a Session<A>,
    /// The operation's spec.
    pub(crate) spec: &'static OperationSpec,
}

impl<A: App> Call<'_, A> {
    /// The caller's token id.
    pub(crate) fn tid(&self) -> &str {
        &self.record.tid
    }

    /// `timeoutMs` with the operation's default, clamped to the server's `maxWaitMs`.
    pub(crate) fn wait_ms(&self, requested: Option<u64>) -> u64 {
        self.spec
            .wait_ms(requested, self.server.options().max_wait_ms())
    }
}

/// A handler's typed answer plus what the success tail writes.
pub(crate) struct Answer<R> {
    pub(crate) body: R,
    /// The intent of the `read` log entry to write, if the operation logs its reads.
    pub(crate) read: Option<String>,
    /// The audit entry `(event, detail)`.
    pub(crate) audit: (AuditEvent, Value),
}

impl Answer<WithdrawResponse> {
    /// `/withdraw`'s answer, hosted or paired: `{status: "withdrawn"}`, audited as
    /// `confirm-withdrawn` with `detail`.
    pub(crate) fn withdrawn(detail: Value) -> Self {
        Answer {
            body: WithdrawResponse {
                status: WithdrawnStatus::Withdrawn,
            },
            read: None,
            audit: (AuditEvent::ConfirmWithdrawn, detail),
        }
    }
}

impl<R: Serialize> Answer<R> {
    /// An answer audited as `lap-call` with `detail`, logging no read.
    pub(crate) fn audited(body: R, detail: Value) -> Self {
        Answer {
            body,
            read: None,
            audit: (AuditEvent::LapCall, detail),
        }
    }

    /// An answer that logs a read with `intent` and is audited as `lap-call {tool}`.
    pub(crate) fn read(body: R, intent: impl Into<String>, tool: &str) -> Self {
        Answer {
            body,
            read: Some(intent.into()),
            audit: (AuditEvent::LapCall, serde_json::json!({ "tool": tool })),
        }
    }

    /// The typed answer, its body serialized to JSON text once; `canonical` when the body was
    /// made in this process (a hosted handler's: [`Success::is_canonical`]; a paired session
    /// relays the app's own text).
    pub(crate) fn serialize(self, what: &str, canonical: bool) -> Result<Handled, ApiError>
    where
        R: Send + Sync + 'static,
    {
        let body = Success::of(self.body, canonical)
            .map_err(|e| ApiError::internal(format!("{what}: {e}")))?;
        Ok(Handled {
            body,
            read: self.read,
            audit: self.audit,
        })
    }
}

/// A typed answer plus what the success tail writes.
#[derive(Debug)]
pub(crate) struct Handled {
    /// The 200 answer.
    pub(crate) body: Success,
    /// The intent of the `read` log entry, if any.
    pub(crate) read: Option<String>,
    /// The audit entry.
    pub(crate) audit: (AuditEvent, Value),
}

/// A log entry of `kind` for the caller `tid`.
pub(crate) fn log_entry(
    kind: agent_schema::protocol::LogKind,
    intent: String,
    tid: &str,
    at: u64,
) -> LogEntry {
    let mut entry = activity::entry(kind, at);
    entry.intent = Some(intent);
    entry.tid = Some(tid.to_string());
    entry
}
