use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Status of a confirmation entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ConfirmStatus {
    /// Waiting for the human.
    Pending,
    /// Approved; the message was enqueued.
    Approved,
    /// Rejected by the human.
    Rejected,
    /// Not decided within the maximum age.
    Expired,
    /// Withdrawn by the agent token that proposed it before the human decided
    /// (`semantics.md` §7).
    Withdrawn,
}

impl ConfirmStatus {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmStatus::Pending => "pending",
            ConfirmStatus::Approved => "approved",
            ConfirmStatus::Rejected => "rejected",
            ConfirmStatus::Expired => "expired",
            ConfirmStatus::Withdrawn => "withdrawn",
        }
    }
}

/// A proposal waiting for (or decided by) the human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmEntry {
    /// UUID v4.
    pub id: String,
    /// The variant's wire name.
    pub variant: String,
    /// The proposed message without `type`.
    pub payload: Value,
    /// The annotation's intent, or the wire name.
    pub intent: String,
    /// The `send_message` reason.
    pub reason: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub proposed_at: u64,
    /// Current status.
    pub status: ConfirmStatus,
    /// The proposing token.
    pub tid: Option<String>,
    /// The human's edited message without `type`, only after an edited approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_payload: Option<Value>,
}
