//! What one call carries once the gate admitted its caller: what a backend's operation receives
//! besides its request ([`Call`]) and what it answers ([`Answered`], its body serialized in
//! [`Serialized`]).

use serde::Serialize;
use serde_json::Value;
use tea_agent_schema::protocol::{LogEntry, WithdrawResponse, WithdrawnStatus};

use std::sync::Arc;

use super::error::ApiError;
use super::reply::Success;
use super::spec::OperationSpec;
use crate::engine::session::activity;
use crate::engine::session::progress::DispatchWatch;
use crate::security::{AuditEvent, TokenRecord};

/// Where a dispatch writes the `confirmId` of the proposal it made, for its call's transcript
/// entry (`super::transcript`).
pub(crate) type ProposalSlot = Arc<std::sync::OnceLock<String>>;

/// What a backend's operation receives besides its typed request: the caller and the
/// operation.
pub(crate) struct Call<'a> {
    /// The caller's token record.
    pub(crate) record: &'a TokenRecord,
    /// The operation's spec.
    pub(crate) spec: &'static OperationSpec,
    /// The request body as it came (an object, or `{}`): a paired session relays it as the
    /// `rpc` arguments; `Value::Null` for a hosted session, which reads only the typed request.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) args: Value,
    /// What the surface follows of the effects a `/message` starts (MCP's progress and
    /// `notifications/cancelled`), if it follows them.
    pub(crate) follow: Option<Arc<DispatchWatch>>,
    /// Where a dispatch that proposes writes the proposal's `confirmId`, when the call is
    /// recorded in a transcript.
    pub(crate) proposed: Option<ProposalSlot>,
}

impl Call<'_> {
    /// The caller's token id.
    pub(crate) fn tid(&self) -> &str {
        &self.record.tid
    }
}

/// What a backend's operation answers, before or after serializing.
pub(crate) type AnswerResult<R> = Result<Answered<R>, ApiError>;

/// An operation's typed answer plus what the success tail writes.
pub(crate) struct Answered<R> {
    /// The response.
    pub(crate) body: R,
    /// The intent of the `read` log entry to write, if the operation logs its reads.
    pub(crate) read: Option<String>,
    /// The audit entry `(event, detail)`.
    pub(crate) audit: (AuditEvent, AuditDetail),
}

/// The detail of a call's audit entry, made into JSON only when the audit sink records
/// ([`AuditDetail::into_value`]): a read's `{"tool": …}` was built on every read before.
#[derive(Debug)]
pub(crate) enum AuditDetail {
    /// `{"tool": tool}`.
    Tool(&'static str),
    /// Any detail.
    Value(Value),
}

impl AuditDetail {
    /// The detail as JSON.
    pub(crate) fn into_value(self) -> Value {
        match self {
            AuditDetail::Tool(tool) => serde_json::json!({ "tool": tool }),
            AuditDetail::Value(value) => value,
        }
    }

    /// Adds `key: value` to the detail.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) fn insert(&mut self, key: &str, value: Value) {
        let mut detail = std::mem::replace(self, AuditDetail::Value(Value::Null)).into_value();
        detail[key] = value;
        *self = AuditDetail::Value(detail);
    }
}

impl From<Value> for AuditDetail {
    fn from(value: Value) -> Self {
        AuditDetail::Value(value)
    }
}

impl Answered<WithdrawResponse> {
    /// `/withdraw`'s answer, hosted or paired: `{status: "withdrawn"}`, audited as
    /// `confirm-withdrawn` with `detail`.
    pub(crate) fn withdrawn(detail: Value) -> Self {
        Answered {
            body: WithdrawResponse {
                status: WithdrawnStatus::Withdrawn,
            },
            read: None,
            audit: (AuditEvent::ConfirmWithdrawn, detail.into()),
        }
    }
}

impl<R: Serialize> Answered<R> {
    /// An answer audited as `lap-call` with `detail`, logging no read.
    pub(crate) fn audited(body: R, detail: Value) -> Self {
        Answered {
            body,
            read: None,
            audit: (AuditEvent::LapCall, detail.into()),
        }
    }

    /// An answer that logs a read with `intent` and is audited as `lap-call {tool}`.
    pub(crate) fn read(body: R, intent: impl Into<String>, tool: &'static str) -> Self {
        Answered {
            body,
            read: Some(intent.into()),
            audit: (AuditEvent::LapCall, AuditDetail::Tool(tool)),
        }
    }

    /// The typed answer, its body serialized to JSON text once; `canonical` when the body was
    /// made in this process (a hosted session's: [`Success::is_canonical`]; a paired session
    /// relays the app's own text).
    pub(crate) fn serialize(self, what: &str, canonical: bool) -> Result<Serialized, ApiError>
    where
        R: Send + Sync + 'static,
    {
        let body = Success::of(self.body, canonical)
            .map_err(|e| ApiError::internal(format!("{what}: {e}")))?;
        Ok(Serialized {
            body,
            read: self.read,
            audit: self.audit,
        })
    }
}

/// An [`Answered`] with its body serialized: the typed [`Success`] plus what the success tail
/// writes.
#[derive(Debug)]
pub(crate) struct Serialized {
    /// The 200 answer.
    pub(crate) body: Success,
    /// The intent of the `read` log entry, if any.
    pub(crate) read: Option<String>,
    /// The audit entry.
    pub(crate) audit: (AuditEvent, AuditDetail),
}

/// A log entry of `kind` for the caller `tid`.
pub(crate) fn log_entry(
    kind: tea_agent_schema::protocol::LogKind,
    intent: String,
    tid: &str,
    at: u64,
) -> LogEntry {
    let mut entry = activity::entry(kind, at);
    entry.intent = Some(intent);
    entry.tid = Some(tid.to_string());
    entry
}
