use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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

/// A `list_actions` answer as the JSON array text it serializes to: made once per distinct
/// list (a session renders a list when it changes, not at each read) and embedded as is in
/// `/observe`, `/actions` and `send_message` answers. Its schema is that of `[Action]`.
#[derive(Debug, Clone)]
pub struct ActionList(Arc<RawValue>);

impl ActionList {
    /// The list of `actions`, serialized once.
    pub fn new(actions: &[Action]) -> Self {
        // An `Action` always serializes: its maps have string keys.
        let text = serde_json::to_string(actions).unwrap_or_else(|_| "[]".into());
        Self::from_serialized(text)
    }

    /// `text`, written by serde_json from an array.
    fn from_serialized(text: String) -> Self {
        // SAFETY: every caller passes text serde_json wrote from one array value
        // (`from_string` would parse it all again to check that).
        ActionList(Arc::from(unsafe { RawValue::from_string_unchecked(text) }))
    }

    /// The actions, parsed from the text (entries that do not parse as an [`Action`] are
    /// left out: a paired app may send fields of its own).
    pub fn actions(&self) -> Vec<Action> {
        let entries: Vec<Value> = serde_json::from_str(self.0.get()).unwrap_or_default();
        entries
            .into_iter()
            .filter_map(|entry| serde_json::from_value(entry).ok())
            .collect()
    }

    /// The JSON array text.
    pub fn json(&self) -> &RawValue {
        &self.0
    }

    /// Whether the list has no entry.
    pub fn is_empty(&self) -> bool {
        self.0
            .get()
            .trim_start_matches('[')
            .trim_start()
            .starts_with(']')
    }
}

impl Default for ActionList {
    fn default() -> Self {
        Self::from_serialized("[]".into())
    }
}

impl From<Vec<Action>> for ActionList {
    fn from(actions: Vec<Action>) -> Self {
        Self::new(&actions)
    }
}

impl PartialEq for ActionList {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.get() == other.0.get()
    }
}

impl Serialize for ActionList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ActionList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if !raw.get().trim_start().starts_with('[') {
            return Err(serde::de::Error::custom("actions: expected an array"));
        }
        Ok(ActionList(Arc::from(raw)))
    }
}

impl JsonSchema for ActionList {
    fn inline_schema() -> bool {
        <Vec<Action>>::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Vec<Action>>::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        <Vec<Action>>::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<Action>>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action(variant: &str) -> Action {
        Action {
            variant: variant.into(),
            intent: Some("do it".into()),
            requires_confirm: false,
            dispatch_mode: DispatchMode::Shared,
            source: ActionSource::Binding,
            selector_hint: None,
            payload_hint: Some(json!({"n": 1})),
            available: None,
            unavailable_reason: None,
            warning: None,
            examples: vec!["{\"n\":1}".into()],
            emits: Vec::new(),
            field_hints: Vec::new(),
        }
    }

    #[test]
    fn a_list_serializes_as_its_actions_do_and_parses_back() {
        let actions = vec![action("inc"), action("dec")];
        let list = ActionList::new(&actions);
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            serde_json::to_string(&actions).unwrap()
        );
        assert_eq!(list.actions(), actions);
        let back: ActionList = serde_json::from_str(list.json().get()).unwrap();
        assert_eq!(back, list);
        assert!(!list.is_empty());
        assert!(ActionList::default().is_empty());
        assert!(ActionList::new(&[]).is_empty());
    }

    #[test]
    fn a_list_is_an_array_or_an_error() {
        let err = serde_json::from_str::<ActionList>("{\"variant\":\"inc\"}").unwrap_err();
        assert!(err.to_string().contains("expected an array"), "{err}");
    }

    #[test]
    fn its_schema_is_the_schema_of_a_list_of_actions() {
        assert_eq!(
            schemars::schema_for!(ActionList),
            schemars::schema_for!(Vec<Action>)
        );
    }
}
