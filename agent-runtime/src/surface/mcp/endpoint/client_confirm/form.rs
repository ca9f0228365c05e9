//! The confirmation form a client shows its user (`elicitation/create`, form mode) and what its
//! answer decides (`docs/mcp.md` §Confirmation in the client): the message shows the intent,
//! the variant's `@warning`, the agent's reason and the payload; the form asks for a decision
//! (approve or reject) and the payload as JSON text, the proposed one by default.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{json, Map, Value};
use tea_agent_schema::protocol::ConfirmEntry;

/// The form's fields.
const DECISION: &str = "decision";
const PAYLOAD: &str = "payload";

/// The `elicitation/create` parameters asking the user about `entry`, whose variant warns
/// `warning` (`None` only if rmcp refused the form's schema, which the tests rule out).
pub(super) fn params(entry: &ConfirmEntry, warning: Option<&str>) -> Option<ElicitRequestParams> {
    let payload = payload_text(&entry.payload);
    let mut message = format!("An agent asks to {} ({}).", entry.intent, entry.variant);
    if let Some(warning) = warning {
        message.push_str(&format!("\nWarning: {warning}"));
    }
    if let Some(reason) = &entry.reason {
        message.push_str(&format!("\nThe agent's reason: {reason}"));
    }
    message.push_str(&format!(
        "\nPayload: {payload}\nApprove or reject it; to approve a changed message, edit the \
         payload (JSON). The app's console shows this request too: the first decision counts."
    ));
    let schema = json!({
        "type": "object",
        "properties": {
            DECISION: {
                "type": "string",
                "title": "Decision",
                "enum": ["approve", "reject"],
            },
            PAYLOAD: {
                "type": "string",
                "title": "Payload (JSON)",
                "description": "The message's payload; an edit is checked as the app's console checks one.",
                "default": payload,
            },
        },
        "required": [DECISION],
    });
    let Value::Object(schema) = schema else {
        return None;
    };
    let requested_schema = ElicitationSchema::from_json_schema(schema).ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// A payload as the form shows it: compact JSON.
fn payload_text(payload: &Value) -> String {
    serde_json::to_string(payload).unwrap_or_else(|_| "{}".into())
}

/// What the user answered.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Answer {
    /// Approve: as proposed (`None`) or the edited message (`type` included).
    Approve(Option<Value>),
    /// Reject (the form's decision, or declined).
    Reject,
    /// Cancelled: no decision; the proposal stays pending for the console.
    Undecided,
    /// An answer that cannot be read (why); nothing is decided.
    Unreadable(String),
}

/// Reads `result` as an answer about `entry`. A payload equal to the proposed one (or absent)
/// approves as proposed; another JSON object approves that edit, which the session checks as
/// the console's edits are checked.
pub(super) fn read(result: &ElicitResult, entry: &ConfirmEntry) -> Answer {
    match result.action {
        ElicitationAction::Decline => return Answer::Reject,
        ElicitationAction::Cancel => return Answer::Undecided,
        _ => {}
    }
    let content = result.content.as_ref().and_then(Value::as_object);
    let decision = content
        .and_then(|c| c.get(DECISION))
        .and_then(Value::as_str);
    match decision {
        Some("approve") => {}
        Some("reject") => return Answer::Reject,
        _ => {
            return Answer::Unreadable(
                r#"the form's decision must be "approve" or "reject""#.into(),
            )
        }
    }
    let text = content
        .and_then(|c| c.get(PAYLOAD))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(text) = text else {
        return Answer::Approve(None);
    };
    let edited = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields,
        Ok(_) => return Answer::Unreadable("the edited payload is not a JSON object".into()),
        Err(e) => {
            return Answer::Unreadable(format!("the edited payload is not JSON: {e}"));
        }
    };
    if Value::Object(edited.clone()) == entry.payload {
        return Answer::Approve(None);
    }
    let mut msg = Map::with_capacity(edited.len() + 1);
    msg.insert("type".into(), Value::String(entry.variant.clone()));
    // A `type` in the edit is the console's concern too: it is checked, not overwritten.
    for (k, v) in edited {
        msg.insert(k, v);
    }
    Answer::Approve(Some(Value::Object(msg)))
}

/// `result` read from an `inputResponses` value (2026-07-28), `None` when it is not an
/// elicitation result.
pub(super) fn result_of(value: &Value) -> Option<ElicitResult> {
    serde_json::from_value(value.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tea_agent_schema::protocol::ConfirmStatus;

    fn entry() -> ConfirmEntry {
        ConfirmEntry {
            id: "c".into(),
            variant: "delete".into(),
            payload: json!({"id": "42"}),
            intent: "delete a row".into(),
            reason: Some("cleanup".into()),
            proposed_at: 0,
            status: ConfirmStatus::Pending,
            tid: Some("t".into()),
            edited_payload: None,
        }
    }

    fn accept(content: Value) -> ElicitResult {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        r.content = Some(content);
        r
    }

    #[test]
    fn form_shows_the_proposal() {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = params(&entry(), Some("gone for good")).expect("schema reads")
        else {
            panic!("form mode")
        };
        for part in ["delete a row", "gone for good", "cleanup", r#"{"id":"42"}"#] {
            assert!(message.contains(part), "{message}");
        }
        let schema = serde_json::to_value(requested_schema).expect("schema");
        assert_eq!(schema["properties"]["payload"]["default"], r#"{"id":"42"}"#);
        assert_eq!(
            schema["properties"]["decision"]["enum"],
            json!(["approve", "reject"])
        );
    }

    #[test]
    fn answers() {
        let e = entry();
        let read_ = |c: Value| read(&accept(c), &e);
        assert_eq!(read_(json!({"decision": "approve"})), Answer::Approve(None));
        assert_eq!(
            read_(json!({"decision": "approve", "payload": "{\"id\": \"42\"}"})),
            Answer::Approve(None)
        );
        assert_eq!(
            read_(json!({"decision": "approve", "payload": "{\"id\":\"7\"}"})),
            Answer::Approve(Some(json!({"type": "delete", "id": "7"})))
        );
        assert_eq!(read_(json!({"decision": "reject"})), Answer::Reject);
        assert!(matches!(
            read_(json!({"decision": "approve", "payload": "{"})),
            Answer::Unreadable(_)
        ));
        assert!(matches!(read_(json!({})), Answer::Unreadable(_)));
        let declined = ElicitResult::new(ElicitationAction::Decline);
        assert_eq!(read(&declined, &e), Answer::Reject);
        let cancelled = ElicitResult::new(ElicitationAction::Cancel);
        assert_eq!(read(&cancelled, &e), Answer::Undecided);
    }
}
