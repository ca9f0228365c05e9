use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ActionList, ValidationIssue};

/// One JSON Patch operation (the RFC 6902 subset the state diff produces).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOp {
    /// Adds `value` at `path`.
    Add {
        /// RFC 6901 pointer.
        path: String,
        /// The new value.
        value: Value,
    },
    /// Removes the value at `path`.
    Remove {
        /// RFC 6901 pointer.
        path: String,
    },
    /// Replaces the value at `path`.
    Replace {
        /// RFC 6901 pointer.
        path: String,
        /// The new value.
        value: Value,
    },
}

impl PatchOp {
    /// The op's path.
    pub fn path(&self) -> &str {
        match self {
            PatchOp::Add { path, .. }
            | PatchOp::Remove { path }
            | PatchOp::Replace { path, .. } => path,
        }
    }
}

/// How long `send_message` waits before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitFor {
    /// Enqueue and answer at once.
    None,
    /// Wait for the message's own commit.
    Idle,
    /// Wait until no commit happened for `drainQuietMs` (capped by `timeoutMs`).
    #[default]
    Drained,
}

impl WaitFor {
    /// Parses the wire string.
    pub fn parse(s: &str) -> Option<WaitFor> {
        match s {
            "none" => Some(WaitFor::None),
            "idle" => Some(WaitFor::Idle),
            "drained" => Some(WaitFor::Drained),
            _ => None,
        }
    }
}

/// Kind of a drain error entry (the reference's wire names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DrainErrorKind {
    /// `update` panicked.
    Error,
    /// An effect task failed or panicked.
    Unhandledrejection,
}

/// An error reported by the session during a drain window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DrainError {
    /// What failed.
    pub kind: DrainErrorKind,
    /// `update panicked: …`, `effect failed: …` or `effect panicked: …`.
    pub message: String,
}

/// What happened while `send_message` waited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrainReport {
    /// Commits seen between enqueue and return, the message's own included.
    pub effects_observed: u64,
    /// Whole milliseconds waited.
    pub duration_ms: u64,
    /// The cap passed before the session went quiet.
    pub timed_out: bool,
    /// Update panics and effect failures reported during the window.
    pub errors: Vec<DrainError>,
    /// Validation warnings (strict policy), only when non-empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<ValidationIssue>,
    /// Effects of this dispatch that were cancelled during the wait, only when non-empty
    /// (`semantics.md` §5.6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<super::CancelledWork>,
}

/// Why a message was refused: the `reason` of a `rejected` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RejectReason {
    /// The payload failed validation (or `type` names no variant).
    Invalid,
    /// A `@humanOnly` message from an agent.
    HumanOnly,
    /// The human rejected the proposal.
    UserCancelled,
    /// The proposal expired before a decision.
    Timeout,
    /// The action is not offered to agents in the current state: its `@routeGated` gate is
    /// closed, or `list_actions` does not list it now (`docs/semantics.md` §5.1). Not in the
    /// reference protocol's list; its clients treat it as any other refusal.
    Unavailable,
}

impl RejectReason {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            RejectReason::Invalid => "invalid",
            RejectReason::HumanOnly => "human-only",
            RejectReason::UserCancelled => "user-cancelled",
            RejectReason::Timeout => "timeout",
            RejectReason::Unavailable => "unavailable",
        }
    }
}

/// The answer of `send_message` (and of the human dispatch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum SendResult {
    /// The message was applied.
    #[serde(rename_all = "camelCase")]
    Dispatched {
        /// Diff from the state at enqueue to the state at return.
        state_diff: Vec<PatchOp>,
        /// `list_actions` after the drain.
        actions: ActionList,
        /// The drain report.
        drain: DrainReport,
        /// The redacted state at return, only with `includeState: true`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state_after: Option<Value>,
        /// The version of the state at return: the session's commit count (absent from a
        /// paired app that does not count commits).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
    /// A `@requiresConfirm` message is waiting for the human.
    #[serde(rename_all = "camelCase")]
    PendingConfirmation {
        /// The proposal's id.
        confirm_id: String,
    },
    /// The human approved and the message committed.
    #[serde(rename_all = "camelCase")]
    Confirmed {
        /// The redacted state right after the approved message's commit.
        state_after: Value,
        /// The applied message, only when the human edited it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        msg: Option<Value>,
        /// The version of `stateAfter` (absent from a paired app).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
    /// Refused.
    Rejected {
        /// Why.
        reason: RejectReason,
        /// Details, when there are any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The proposal this call waited on was withdrawn by its token (`/withdraw`) before the
    /// human decided.
    Withdrawn,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The answer of `would_dispatch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum WouldDispatchResult {
    /// The predicted diff and effects (not run).
    #[serde(rename_all = "camelCase")]
    Predicted {
        /// Diff of the redacted state before and after.
        state_diff: Vec<PatchOp>,
        /// The effects `update` returned, as JSON without their `@redact` fields, when the
        /// app shows its effects; empty otherwise.
        effects: Vec<Value>,
        /// How many effects `update` returned that the app does not show agents (absent
        /// when none): an effect may carry a value agents must not see.
        #[serde(default, skip_serializing_if = "is_zero")]
        effects_hidden: usize,
    },
    /// Lenient validation failed.
    SchemaMismatch {
        /// The validation errors.
        errors: Vec<ValidationIssue>,
    },
    /// `update` panicked on the clone.
    ReducerThrew {
        /// `update panicked: …`.
        message: String,
    },
    /// Refused before validation.
    Rejected {
        /// `invalid`, `human-only` or `unavailable`.
        reason: RejectReason,
        /// Details.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}
