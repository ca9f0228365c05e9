//! The 200 answer of every LAP operation (`lap.md` §5.3, `semantics.md` §8), one type each,
//! and the error body every surface shares (`lap.md` §10).
//!
//! `/message` answers a [`SendResult`](super::SendResult) and `/would-dispatch` a
//! [`WouldDispatchResult`](super::WouldDispatchResult).

use std::sync::Arc;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{ActionList, LogEntry, PatchOp, RejectReason};
use crate::AgentContext;

fn any_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!(true)
}

/// The app description (`lap.md` §5.4), kept as the JSON text it was serialized to once.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Description(pub Arc<RawValue>);

impl JsonSchema for Description {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Description".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "The app: name, version, message schemas, state schema, docs, conventions and schemaHash.",
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "stateSchema": true,
                "messages": {"type": "object"},
                "annotations": {"type": "object"},
                "docs": {"type": ["object", "null"]},
                "conventions": {"type": "object"},
                "schemaHash": {"type": "string"}
            },
            "required": ["name", "version", "stateSchema", "messages", "schemaHash"]
        })
    }
}

/// `/observe`: everything an agent needs to act, in one answer (`semantics.md` §8.3).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ObserveResponse {
    /// The agent-visible state, as the JSON text of the session's snapshot (embedded as is).
    #[schemars(schema_with = "any_schema")]
    pub state: Arc<RawValue>,
    /// The actions available now.
    pub actions: ActionList,
    /// The app description, lean: `annotations` are left out (each action carries its own;
    /// `/describe` has them).
    pub description: Description,
    /// The app's context for this state, or null.
    pub context: Option<AgentContext>,
    /// The version of `state`: the session's commit count (`semantics.md` §8.7). Absent only
    /// from a paired app that does not count its commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The effects in flight, with their progress, only when there are any
    /// (`semantics.md` §5.6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work: Vec<super::Work>,
}

/// `/state`: `{"state": V, "seq": N}`, `{"seq": N}` when the path misses; with `sinceSeq`,
/// `{"stateDiff": [...], "seq": N}` or the whole state flagged `"full": true`
/// (`semantics.md` §8.1, §8.7).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateResponse {
    /// The state or the slice at the path, as JSON text (the whole state is the session's
    /// snapshot text, embedded as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_schema")]
    pub state: Option<Arc<RawValue>>,
    /// With `sinceSeq`: the JSON Patch from the state at `sinceSeq` to the state at `seq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_diff: Option<Vec<PatchOp>>,
    /// The version of the state read: the session's commit count. Absent only from a
    /// paired app that does not count its commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// With `sinceSeq`: the patch since then is no longer held (or `sinceSeq` is not a
    /// version of this session), so `state` is the whole state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full: bool,
}

/// `/query-state`: `{"found":true,"value"}` or `{"found":false,"detail"}`; a page (`offset`
/// or `limit` asked) adds `total`, `offset` and, when the page ends before the value does,
/// `nextOffset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryStateResponse {
    /// Whether the pointer names a value.
    pub found: bool,
    /// The value, when found (a page of it, when one was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_schema")]
    pub value: Option<Value>,
    /// Why nothing was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A page: the size of the whole array, object or string (elements, entries, characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// A page: the position of its first element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// A page that ends before the value does: the `offset` of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

impl QueryStateResponse {
    /// The answer for a lookup result.
    pub fn new(lookup: Result<&Value, String>) -> Self {
        match lookup {
            Ok(value) => QueryStateResponse {
                found: true,
                value: Some(value.clone()),
                detail: None,
                total: None,
                offset: None,
                next_offset: None,
            },
            Err(detail) => QueryStateResponse {
                found: false,
                value: None,
                detail: Some(detail),
                total: None,
                offset: None,
                next_offset: None,
            },
        }
    }
}

/// `/actions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActionsResponse {
    /// The actions available now.
    pub actions: ActionList,
}

/// One element of a `/query-dom` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DomElement {
    /// Its text content.
    pub text: String,
    /// Its attributes.
    pub attrs: std::collections::BTreeMap<String, String>,
    /// Its position among the app's regions.
    pub path: Vec<usize>,
}

/// `/query-dom`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryDomResponse {
    /// The matching regions (at most one unless `multiple`).
    pub elements: Vec<DomElement>,
}

/// `/describe-visible`: the outline of what the app shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DescribeVisibleResponse {
    /// The app's current route, or null.
    pub url: Option<String>,
    /// Outline nodes, top to bottom (each tagged by `kind`).
    pub outline: Vec<Value>,
    /// `data-agent` from the app's outline hook, `fallback` without one.
    pub source: String,
}

/// `/context`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextResponse {
    /// The context, with the last-dispatch hint first.
    pub context: AgentContext,
}

/// `/recent-actions`: log entries, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecentActionsResponse {
    /// The entries.
    pub entries: Vec<LogEntry>,
}

/// `/confirm-result` (`lap.md` §5.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum ConfirmResultResponse {
    /// Approved and committed.
    #[serde(rename_all = "camelCase")]
    Confirmed {
        /// The state right after the commit.
        #[schemars(schema_with = "any_schema")]
        state_after: Value,
        /// The applied message, only after an edited approval.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        msg: Option<Value>,
        /// The version of `stateAfter` (absent from a paired app).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
    /// Rejected by the human (`user-cancelled`) or expired (`timeout`).
    Rejected {
        /// `user-cancelled` or `timeout`.
        reason: RejectReason,
    },
    /// Not decided yet.
    StillPending,
    /// Withdrawn by the proposing token (`/withdraw`) before the human decided.
    Withdrawn,
}

/// One of the caller's undecided proposals, as `/pending` lists it (`lap.md` §5.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingProposal {
    /// The proposal's id (for `/confirm-result` and `/withdraw`).
    pub confirm_id: String,
    /// The variant's wire name.
    pub variant: String,
    /// The proposed message, `{"type": variant, ...payload}`.
    #[schemars(schema_with = "any_schema")]
    pub msg: Value,
    /// The reason given with it, or null.
    pub reason: Option<String>,
    /// When it was proposed (ms since the Unix epoch).
    pub proposed_at: u64,
}

/// `/pending`: the caller's own proposals the human has not decided yet, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingResponse {
    /// The proposals.
    pub pending: Vec<PendingProposal>,
}

/// `/withdraw`: `{"status":"withdrawn"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WithdrawResponse {
    /// Always `withdrawn`.
    pub status: WithdrawnStatus,
}

/// The one status of a [`WithdrawResponse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WithdrawnStatus {
    /// The proposal is withdrawn.
    Withdrawn,
}

/// Whether `/wait` saw a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitStatus {
    /// The watched value changed.
    Changed,
    /// The timeout passed first.
    Timeout,
    /// Asked with `progress: true`: running work started, ended or reported progress (see
    /// `work`) before the state changed.
    Progress,
}

impl WaitStatus {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitStatus::Changed => "changed",
            WaitStatus::Timeout => "timeout",
            WaitStatus::Progress => "progress",
        }
    }
}

/// `/wait` (`semantics.md` §8.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitResponse {
    /// `changed` or `timeout`.
    pub status: WaitStatus,
    /// The state after the change, null on timeout.
    #[schemars(schema_with = "any_schema")]
    pub state_after: Value,
    /// The version of `stateAfter`, on `changed` (absent from a paired app).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The effects in flight at the answer, with their progress, only when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work: Vec<super::Work>,
}

/// `/narrate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NarrateResponse {
    /// Always true.
    pub ok: bool,
}

/// The `error` object of every non-200 answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    /// The error code (`lap.md` §10).
    pub code: String,
    /// `expired`, `pending`, `revoked` or `unknown` on a 503 `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconnect: Option<String>,
    /// `expired` (past its hard expiry) or `idle` (unused past the sliding TTL) on a 401
    /// `auth-failed` for a token that verified once; absent for an unknown or malformed one.
    /// On a refused undo, which refusal (`lap.md` §6.4): `unknown-commit`, `not-agents`,
    /// `already-undone`, `not-undoable`, `later-commits`, `invalid-result`, `no-undo-records`,
    /// `paired`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The later commits in the way of an undo, on a 409 `conflict` with reason
    /// `later-commits` (`lap.md` §6.4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<u64>,
    /// How long to wait before retrying, on a 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// `{"error": {...}}`: the body of every non-200 answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorResponse {
    /// The error.
    pub error: ErrorDetail,
}
