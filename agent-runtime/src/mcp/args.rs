//! Argument checking (`lap.md` §7.1): the arguments of a call are checked against the tool's
//! declaration before any LAP request. Unknown top-level keys are dropped (so `idempotencyKey`
//! never travels through MCP), a `null` value counts as absent, and `msg` is kept whole.

use serde_json::{Map, Value};

use super::tools::{ArgKind, ToolSpec};

/// Checks `arguments` against `spec`: the declared arguments that are present, in declaration
/// order, or a refusal naming the first problem
/// (`send_message: invalid arguments: waitFor must be one of: drained, idle, none`).
pub fn check_args(
    spec: &ToolSpec,
    arguments: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, String> {
    let empty = Map::new();
    let arguments = arguments.unwrap_or(&empty);
    let mut checked = Map::new();
    for arg in spec.args {
        let value = match arguments.get(arg.name) {
            None | Some(Value::Null) => {
                if arg.required {
                    return Err(refusal(spec, format!("{} is required", arg.name)));
                }
                continue;
            }
            Some(v) => v,
        };
        if let Some(problem) = kind_problem(arg.name, arg.kind, value) {
            return Err(refusal(spec, problem));
        }
        checked.insert(arg.name.to_string(), value.clone());
    }
    Ok(checked)
}

fn refusal(spec: &ToolSpec, problem: String) -> String {
    format!("{}: invalid arguments: {problem}", spec.name)
}

fn kind_problem(name: &str, kind: ArgKind, value: &Value) -> Option<String> {
    let ok = match kind {
        ArgKind::String => value.is_string(),
        ArgKind::Boolean => value.is_boolean(),
        ArgKind::Number => value.is_number(),
        ArgKind::PositiveInteger => value.as_f64().is_some_and(|n| n >= 1.0 && n.fract() == 0.0),
        ArgKind::Msg => value.get("type").is_some_and(Value::is_string),
        ArgKind::OneOf(values) => value.as_str().is_some_and(|s| values.contains(&s)),
    };
    if ok {
        return None;
    }
    Some(match kind {
        ArgKind::String => format!("{name} must be a string"),
        ArgKind::Boolean => format!("{name} must be a boolean"),
        ArgKind::Number => format!("{name} must be a number"),
        ArgKind::PositiveInteger => format!("{name} must be a positive integer"),
        ArgKind::Msg => format!("{name} must be an object with a string type"),
        ArgKind::OneOf(values) => format!("{name} must be one of: {}", values.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tools::{find, Surface};
    use serde_json::json;

    fn check(surface: Surface, tool: &str, args: Value) -> Result<Value, String> {
        let spec = find(surface, tool).unwrap();
        check_args(spec, args.as_object()).map(Value::Object)
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
            json!({"msg":{"type":"delete","id":"42","extra":[1]},"waitFor":"idle"})
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
        assert!(check(Surface::Bridge, "send_message", json!({"msg":{"type":7}})).is_err());
        assert!(check(Surface::Bridge, "would_dispatch", json!({"msg":"inc"})).is_err());
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
        assert!(check(Surface::Server, "describe_recent_actions", json!({"n":0})).is_err());
        assert!(check(Surface::Server, "describe_recent_actions", json!({"n":1.5})).is_err());
        assert!(check(
            Surface::Server,
            "query_dom",
            json!({"name":"inc","multiple":"yes"})
        )
        .is_err());
        assert!(check(Surface::Server, "wait_for_change", json!({"timeoutMs":"5"})).is_err());
        assert!(check(Surface::Server, "wait_for_change", json!({"timeoutMs":500})).is_ok());
    }
}
