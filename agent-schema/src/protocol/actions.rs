use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::DispatchMode;

/// Where a `list_actions` entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ActionSource {
    /// The app's current UI bindings.
    Binding,
    /// The affordances hook or `@alwaysAffordable`.
    AlwaysAffordable,
    /// `@agentOnly` from the schema.
    Schema,
}

/// One entry of `list_actions`: a message the agent may send now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// The variant's wire name.
    pub variant: String,
    /// The annotation's intent (null stays null).
    pub intent: Option<String>,
    /// `@requiresConfirm`.
    pub requires_confirm: bool,
    /// `agent-only` when the annotation says so, otherwise `shared`.
    pub dispatch_mode: DispatchMode,
    /// Where the entry comes from.
    pub source: ActionSource,
    /// Always null (there is no DOM).
    pub selector_hint: Option<String>,
    /// An example payload, or null.
    pub payload_hint: Option<Value>,
    /// `false` when a route gate is closed; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// Why the route gate is closed; absent when open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// The annotation's warning.
    pub warning: Option<String>,
    /// The annotation's examples.
    pub examples: Vec<String>,
    /// The annotation's effect names.
    pub emits: Vec<String>,
    /// Field hints of the variant (`{"path","hint"}` entries).
    pub field_hints: Vec<Value>,
}
