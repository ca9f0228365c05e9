//! How the explorer's agent reads the answers it gets: the actions listed (with what each
//! promises), a `/message` answer apart from its `actions` and `stateAfter`, any answer as a
//! value.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::algo::tree::Node;

/// An action as the agent reads it from `/actions`.
#[derive(Debug, Clone)]
pub(super) struct Listed {
    pub(super) variant: String,
    /// Not listed with `available: false`.
    pub(super) open: bool,
    pub(super) reason: Option<String>,
}

/// The actions the agent read, and the snapshot it read them on.
pub(super) struct ActionsRead {
    pub(super) seq: u64,
    pub(super) tree: Arc<Node>,
    /// The answer's text.
    pub(super) text: Arc<str>,
    pub(super) listed: Arc<[Listed]>,
}

/// The named entries of the `actions` of an `/actions` answer's text (none when it has none).
pub(super) fn listed_in(text: &str) -> Vec<Listed> {
    #[derive(Deserialize)]
    struct Answer {
        actions: Vec<Entry>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        variant: String,
        available: Option<bool>,
        unavailable_reason: Option<String>,
    }
    let entry = |variant, available: Option<&Value>, reason: Option<&str>| Listed {
        variant,
        open: available != Some(&Value::Bool(false)),
        reason: reason.map(str::to_string),
    };
    if let Ok(answer) = serde_json::from_str::<Answer>(text) {
        let listed = answer.actions.into_iter().map(|e| Listed {
            variant: e.variant,
            open: e.available != Some(false),
            reason: e.unavailable_reason,
        });
        return listed.collect();
    }
    // Any other shape read as a value: entries without a variant's name are left out.
    let answer: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let Some(actions) = answer.get("actions").and_then(Value::as_array) else {
        return Vec::new();
    };
    actions
        .iter()
        .filter_map(|a| {
            let name = a.get("variant").and_then(Value::as_str)?;
            let reason = a.get("unavailableReason").and_then(Value::as_str);
            Some(entry(name.to_string(), a.get("available"), reason))
        })
        .collect()
}

/// A `/message` answer's text as a value (as [`read_answer`]) without its `actions` (the
/// agent reads them from `/actions`) and its `stateAfter`, whose text is given apart (compared
/// with the `stateDiff` applied, as text first).
pub(super) fn read_message(text: &str) -> (Value, Option<&str>) {
    let Ok(mut members) = serde_json::from_str::<IndexMap<String, &RawValue>>(text) else {
        // Not an object: not an answer that dispatched.
        return (read_answer(text), None);
    };
    let after = members.shift_remove("stateAfter").map(RawValue::get);
    let mut out = Map::new();
    for (key, raw) in members {
        if key == "actions" {
            continue;
        }
        match serde_json::from_str(raw.get()) {
            Ok(v) => out.insert(key, v),
            Err(_) => return (Value::Null, None),
        };
    }
    (Value::Object(out), after)
}

/// An answer's text as a value (as `Reply::recorded` reads it: `null` when it is not JSON).
pub(super) fn read_answer(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}
