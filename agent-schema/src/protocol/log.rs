use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::PatchOp;

/// Kind of an activity log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LogKind {
    /// A proposal was stored.
    Proposed,
    /// A message was dispatched.
    Dispatched,
    /// The human approved a proposal and it committed.
    Confirmed,
    /// The human rejected a proposal, or it expired.
    Rejected,
    /// A message was refused before dispatch.
    Blocked,
    /// A read endpoint was called.
    Read,
    /// A handler failed inside the server.
    Error,
    /// The agent narrated.
    Narrate,
    /// The human undid an agent's commit (or every commit back to it).
    Undone,
    /// A running effect was cancelled (`detail` says by whom).
    Cancelled,
}

impl LogKind {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            LogKind::Proposed => "proposed",
            LogKind::Dispatched => "dispatched",
            LogKind::Confirmed => "confirmed",
            LogKind::Rejected => "rejected",
            LogKind::Blocked => "blocked",
            LogKind::Read => "read",
            LogKind::Error => "error",
            LogKind::Narrate => "narrate",
            LogKind::Undone => "undone",
            LogKind::Cancelled => "cancelled",
        }
    }
}

/// One entry of a session's activity log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    /// UUID v4, or `narrate-<at>-<8 chars>` for narrations.
    pub id: String,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
    /// The kind.
    pub kind: LogKind,
    /// The message's wire name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// A human-readable label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Payload summary, narration text or decision detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The commit the entry records: on `dispatched` (when the dispatch waited for its
    /// commit) and `confirmed`, the message's commit; on `undone`, the undo's own commit. The
    /// number the human names to undo it (`lap.md` §6.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// On `undone`: the commits the undo reverted, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undid: Vec<u64>,
    /// On an agent's `dispatched` or `confirmed` entry: why the human cannot undo its commit
    /// (its message starts effects, its inverse is too big, the session keeps no undo
    /// records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_undo: Option<String>,
    /// The diff of the commit, for `dispatched` and `confirmed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_diff: Option<Vec<PatchOp>>,
    /// The token that caused the entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<String>,
    /// The proposal's id, on `proposed` entries and on the entries of its decision
    /// (`confirmed`, `rejected`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_id: Option<String>,
}
