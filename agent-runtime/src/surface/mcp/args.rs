//! Argument checking (`docs/lap.md` §7.1): the arguments of a call are checked against the tool's
//! input schema before the operation runs, with checks derived from the schema itself (no
//! second declaration of the shapes). Unknown top-level keys are dropped, a `null` value
//! counts as absent, and an object argument such as `msg` is kept whole.

use serde_json::{Map, Value};

use super::tools::ToolSpec;

/// Checks `arguments` against `schema` (the input schema of `tool`): the declared arguments
/// that are present, in schema order, or a refusal naming the first problem
/// (`send_message: invalid arguments: waitFor must be one of: drained, idle, none`).
pub(crate) fn check_args(
    tool: &ToolSpec,
    schema: &Map<String, Value>,
    arguments: Option<Map<String, Value>>,
) -> Result<Map<String, Value>, String> {
    let refusal = |problem: String| format!("{}: invalid arguments: {problem}", tool.name);
    let empty = Map::new();
    let mut arguments = arguments.unwrap_or_default();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut checked = Map::new();
    for (name, property) in properties {
        let value = match arguments.remove(name) {
            None | Some(Value::Null) => {
                if is_required(schema, name) {
                    return Err(refusal(format!("{name} is required")));
                }
                continue;
            }
            Some(v) => v,
        };
        if let Some(problem) = problem(name, property, &value) {
            return Err(refusal(problem));
        }
        checked.insert(name.clone(), value);
    }
    Ok(checked)
}

fn is_required(schema: &Map<String, Value>, name: &str) -> bool {
    schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(name)))
}

/// What is wrong with `value` as the argument `name` of schema `property`, if anything.
fn problem(name: &str, property: &Value, value: &Value) -> Option<String> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        if values.contains(value) {
            return None;
        }
        let names: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        return Some(format!("{name} must be one of: {}", names.join(", ")));
    }
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    match property.get("type").and_then(Value::as_str)? {
        "string" => {
            let length = value.as_str().map(|s| s.chars().count() as f64);
            match (number("minLength"), number("maxLength")) {
                (Some(min), Some(max)) => (!length.is_some_and(|n| n >= min && n <= max))
                    .then(|| format!("{name} must be a string of {min} to {max} characters")),
                _ => length.is_none().then(|| format!("{name} must be a string")),
            }
        }
        "boolean" => (!value.is_boolean()).then(|| format!("{name} must be a boolean")),
        "number" => (!value.is_number()).then(|| format!("{name} must be a number")),
        "integer" => {
            let min = number("minimum");
            let ok = value
                .as_f64()
                .is_some_and(|n| n.fract() == 0.0 && min.is_none_or(|m| n >= m));
            (!ok).then(|| match min {
                Some(1.0) => format!("{name} must be a positive integer"),
                Some(m) => format!("{name} must be an integer of at least {m}"),
                None => format!("{name} must be an integer"),
            })
        }
        "object" => {
            // An object whose required keys must have their declared JSON type (`msg` and
            // its string `type`).
            let required: Vec<&str> = property
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let keys_ok = required.iter().all(|key| {
                let declared = property
                    .get("properties")
                    .and_then(|p| p.get(*key))
                    .and_then(|p| p.get("type"))
                    .and_then(Value::as_str);
                match (value.get(*key), declared) {
                    (Some(v), Some("string")) => v.is_string(),
                    (Some(v), _) => !v.is_null(),
                    (None, _) => false,
                }
            });
            (!(value.is_object() && keys_ok)).then(|| {
                if required.is_empty() {
                    format!("{name} must be an object")
                } else {
                    format!(
                        "{name} must be an object with a string {}",
                        required.join(", ")
                    )
                }
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::mcp::tools::{find, Surface};
    use serde_json::json;

    fn check(surface: Surface, tool: &str, args: Value) -> Result<Value, String> {
        let spec = find(surface, tool).unwrap();
        check_args(&spec, &spec.input_schema(), args.as_object().cloned()).map(Value::Object)
    }

    #[test]
    fn unknown_keys_are_dropped_and_msg_kept_whole() {
        let out = check(
            Surface::Server,
            "send_message",
            json!({"msg":{"type":"delete","id":"42","extra":[1]},"idempotencyKey":"k","waitFor":"idle","bogus":1}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"msg":{"type":"delete","id":"42","extra":[1]},"waitFor":"idle","idempotencyKey":"k"})
        );
        assert_eq!(
            check(Surface::Server, "observe", json!({"x":1})).unwrap(),
            json!({})
        );
        assert_eq!(
            check(Surface::Server, "get_state", json!({"path":null})).unwrap(),
            json!({})
        );
    }

    #[test]
    fn send_message_wait_for_values() {
        for w in ["drained", "idle", "none"] {
            assert!(check(
                Surface::Bridge,
                "send_message",
                json!({"msg":{"type":"inc"},"waitFor":w})
            )
            .is_ok());
        }
        assert_eq!(
            check(
                Surface::Bridge,
                "send_message",
                json!({"msg":{"type":"inc"},"waitFor":"bogus"})
            )
            .unwrap_err(),
            "send_message: invalid arguments: waitFor must be one of: drained, idle, none"
        );
        assert_eq!(
            check(Surface::Bridge, "send_message", json!({})).unwrap_err(),
            "send_message: invalid arguments: msg is required"
        );
        assert_eq!(
            check(Surface::Bridge, "send_message", json!({"msg":{"type":7}})).unwrap_err(),
            "send_message: invalid arguments: msg must be an object with a string type"
        );
        assert!(check(Surface::Bridge, "would_dispatch", json!({"msg":"inc"})).is_err());
        assert_eq!(
            check(
                Surface::Server,
                "send_message",
                json!({"msg":{"type":"inc"},"idempotencyKey":""})
            )
            .unwrap_err(),
            "send_message: invalid arguments: idempotencyKey must be a string of 1 to 256 characters"
        );
    }

    #[test]
    fn connect_session_arguments_by_surface() {
        assert!(check(
            Surface::Bridge,
            "connect_session",
            json!({"url":"http://a","token":"agt_x"})
        )
        .is_ok());
        assert_eq!(
            check(
                Surface::Bridge,
                "connect_session",
                json!({"url":5,"token":"agt_x"})
            )
            .unwrap_err(),
            "connect_session: invalid arguments: url must be a string"
        );
        assert!(check(
            Surface::Bridge,
            "connect_session",
            json!({"url":"http://a"})
        )
        .is_err());
        assert_eq!(
            check(
                Surface::Server,
                "connect_session",
                json!({"token":"agt_x","url":"x"})
            )
            .unwrap(),
            json!({"token":"agt_x"})
        );
    }

    #[test]
    fn numbers_and_booleans() {
        assert!(check(Surface::Server, "describe_recent_actions", json!({"n":2})).is_ok());
        assert_eq!(
            check(Surface::Server, "describe_recent_actions", json!({"n":0})).unwrap_err(),
            "describe_recent_actions: invalid arguments: n must be a positive integer"
        );
        assert!(check(Surface::Server, "describe_recent_actions", json!({"n":1.5})).is_err());
        assert_eq!(
            check(
                Surface::Server,
                "query_dom",
                json!({"name":"inc","multiple":"yes"})
            )
            .unwrap_err(),
            "query_dom: invalid arguments: multiple must be a boolean"
        );
        assert_eq!(
            check(Surface::Server, "wait_for_change", json!({"timeoutMs":"5"})).unwrap_err(),
            "wait_for_change: invalid arguments: timeoutMs must be a number"
        );
        assert!(check(Surface::Server, "wait_for_change", json!({"timeoutMs":500})).is_ok());
    }
}
