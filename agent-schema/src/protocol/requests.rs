//! The request of every LAP operation (`lap.md` §5.3), one type each.
//!
//! Each type serializes as the wire body and describes it with schemars (the field docs are
//! the descriptions the model reads in the MCP input schemas). Deserializing is LAP's lenient
//! reading ([`Fields`](super::Fields)): `null` is absent, unknown keys are ignored, numbers are
//! floored and clamped, and a body the operation cannot use fails with the spec's 400 detail
//! (`path must be a string`, …) as the error text.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lenient::lenient_request;
use super::WaitFor;

/// A request that carries nothing (`/observe`, `/describe`, `/actions`, `/context`,
/// `/describe-visible`): whatever body arrives is ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct EmptyRequest {}

lenient_request!(EmptyRequest, |fields| {
    let _ = fields;
    Ok(EmptyRequest {})
});

/// A message `{"type": <variant>, …payload}`, kept whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MsgValue(pub Value);

impl MsgValue {
    /// The variant's wire name.
    pub fn variant(&self) -> &str {
        self.0
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Reads a `msg` key: an object with a string `type`, or the spec's 400 detail.
    fn read(value: Option<Value>) -> Result<MsgValue, String> {
        match value {
            Some(m) if m.get("type").is_some_and(Value::is_string) => Ok(MsgValue(m)),
            _ => Err("msg.type must be a string".into()),
        }
    }
}

impl JsonSchema for MsgValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Msg".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {"type": {"type": "string", "description": "The message variant."}},
            "required": ["type"]
        })
    }
}

fn wait_for_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": ["drained", "idle", "none"]})
}

fn millis_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "number"})
}

fn string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string"})
}

fn non_empty_string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1})
}

fn boolean_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "boolean"})
}

fn idempotency_key_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": 256})
}

fn seq_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 0})
}

/// The 400 detail of a `sinceSeq` that does not read.
const SINCE_SEQ_PROBLEM: &str = "sinceSeq must be a non-negative integer";

fn count_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1})
}

/// `/state {path?, sinceSeq?}` (`lap.md` §5.3, `semantics.md` §8.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateRequest {
    /// JSON Pointer into the state, e.g. "/count"; omit for the whole state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub path: Option<String>,
    /// The seq of the state you hold (from an earlier answer): answers only the stateDiff since then when the app still has it, else the whole state with full: true. Not with path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "seq_schema")]
    pub since_seq: Option<u64>,
}

lenient_request!(StateRequest, |fields| {
    let path = fields.opt_string("path", "path must be a string")?;
    let since_seq = fields.seq("sinceSeq", SINCE_SEQ_PROBLEM)?;
    if path.is_some() && since_seq.is_some() {
        return Err("sinceSeq reads the whole state: leave out path".into());
    }
    Ok(StateRequest { path, since_seq })
});

/// `/query-state {path, offset?, limit?}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct QueryStateRequest {
    /// JSON Pointer, e.g. "/user/name".
    #[schemars(schema_with = "string_schema")]
    pub path: String,
    /// Read a page of the array, object or string at path, from this element (entry, character); the answer then says total and offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "seq_schema")]
    pub offset: Option<u64>,
    /// At most this many elements (entries, characters) from offset; without it, up to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "seq_schema")]
    pub limit: Option<u64>,
}

impl QueryStateRequest {
    /// A whole read of `path` (no page).
    pub fn of(path: impl Into<String>) -> Self {
        QueryStateRequest {
            path: path.into(),
            offset: None,
            limit: None,
        }
    }

    /// Whether a page is asked for (`offset` or `limit`).
    pub fn is_page(&self) -> bool {
        self.offset.is_some() || self.limit.is_some()
    }
}

lenient_request!(QueryStateRequest, |fields| {
    Ok(QueryStateRequest {
        path: fields.string("path", "path must be a string")?,
        offset: fields.seq("offset", "offset must be a non-negative integer")?,
        limit: fields.seq("limit", "limit must be a non-negative integer")?,
    })
});

/// `/recent-actions {n?, kind?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct RecentActionsRequest {
    /// How many entries (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "count_schema")]
    pub n: Option<u64>,
    /// Only entries of this kind, e.g. "dispatched", "read", "error".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub kind: Option<String>,
}

impl RecentActionsRequest {
    /// Entries asked for: `n`, else 10.
    pub fn count(&self) -> usize {
        self.n
            .map_or(10, |n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

lenient_request!(RecentActionsRequest, |fields| {
    Ok(RecentActionsRequest {
        n: fields.count("n"),
        kind: fields.string_or_none("kind"),
    })
});

/// `/would-dispatch {msg}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WouldDispatchRequest {
    /// The message: {"type": <variant>, ...payload fields}. Copy the shape from an action's payloadHint or from the app's examples.
    // The text is the schema's description, which the model reads: `<variant>` is meant, not HTML.
    #[allow(rustdoc::invalid_html_tags)]
    pub msg: MsgValue,
}

lenient_request!(WouldDispatchRequest, |fields| {
    Ok(WouldDispatchRequest {
        msg: MsgValue::read(fields.take("msg"))?,
    })
});

/// What a dispatch carries (`/message` and the human dispatch route, `lap.md` §5.5, §6.4).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRequest {
    /// The message: {"type": <variant>, ...payload fields}. Copy the shape from an action's payloadHint or from the app's examples.
    // The text is the schema's description, which the model reads: `<variant>` is meant, not HTML.
    #[allow(rustdoc::invalid_html_tags)]
    pub msg: MsgValue,
    /// Why you send it; shown to the user, especially when approval is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub reason: Option<String>,
    /// "drained" (default): wait until the effects settle; "idle": until the queue is idle; "none": answer right after the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "wait_for_schema")]
    pub wait_for: Option<WaitFor>,
    /// Quiet time that counts as settled, in milliseconds (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "millis_schema")]
    pub drain_quiet_ms: Option<u64>,
    /// Upper bound of the wait, including a user's approval (default 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "millis_schema")]
    pub timeout_ms: Option<u64>,
    /// Also return the whole state after the message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(schema_with = "boolean_schema")]
    pub include_state: bool,
}

impl DispatchRequest {
    /// A request for `msg` with every option at its default.
    pub fn new(msg: Value) -> Self {
        DispatchRequest {
            msg: MsgValue(msg),
            reason: None,
            wait_for: None,
            drain_quiet_ms: None,
            timeout_ms: None,
            include_state: false,
        }
    }

    /// Reads the dispatch keys in the spec's order (`msg`, then `waitFor`).
    fn read(fields: &mut super::Fields) -> Result<Self, String> {
        let msg = MsgValue::read(fields.take("msg"))?;
        let wait_for = match fields.take("waitFor") {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(WaitFor::parse)
                    .ok_or("waitFor must be one of: drained, idle, none")?,
            ),
        };
        Ok(DispatchRequest {
            msg,
            reason: fields.string_or_none("reason"),
            wait_for,
            drain_quiet_ms: fields.millis("drainQuietMs"),
            timeout_ms: fields.millis("timeoutMs"),
            include_state: fields.is_true("includeState"),
        })
    }
}

lenient_request!(DispatchRequest, |fields| DispatchRequest::read(fields));

/// `/message` (`lap.md` §5.5): a dispatch plus an optional idempotency key (§5.7).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageRequest {
    /// The dispatch.
    #[serde(flatten)]
    pub dispatch: DispatchRequest,
    /// Makes a retry safe: a repeat with the same key within 10 minutes answers what the first call answered instead of dispatching again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "idempotency_key_schema")]
    pub idempotency_key: Option<String>,
}

lenient_request!(MessageRequest, |fields| {
    let dispatch = DispatchRequest::read(fields)?;
    let idempotency_key = match fields.take("idempotencyKey") {
        None => None,
        Some(Value::String(k)) if (1..=256).contains(&k.chars().count()) => Some(k),
        Some(_) => return Err("idempotencyKey must be a string of 1 to 256 characters".into()),
    };
    Ok(MessageRequest {
        dispatch,
        idempotency_key,
    })
});

/// `/confirm-result {confirmId, timeoutMs?}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmResultRequest {
    /// The confirmId from send_message.
    #[schemars(schema_with = "string_schema")]
    pub confirm_id: String,
    /// How long to wait, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "millis_schema")]
    pub timeout_ms: Option<u64>,
}

lenient_request!(ConfirmResultRequest, |fields| {
    Ok(ConfirmResultRequest {
        confirm_id: fields.string("confirmId", "confirmId must be a string")?,
        timeout_ms: fields.millis("timeoutMs"),
    })
});

/// `/withdraw {confirmId}` (`lap.md` §5.8).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WithdrawRequest {
    /// The confirmId of one of your own proposals the user has not decided yet (see list_pending).
    #[schemars(schema_with = "string_schema")]
    pub confirm_id: String,
}

lenient_request!(WithdrawRequest, |fields| {
    Ok(WithdrawRequest {
        confirm_id: fields.string("confirmId", "confirmId must be a string")?,
    })
});

/// `/cancel {seq?, idempotencyKey?, work?, all?, reason?}` (`lap.md` §5.9): which of the
/// caller's running effects to stop. Exactly one of `seq`, `idempotencyKey`, `work` or
/// `all: true` names them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequest {
    /// The seq of your dispatch (its answer's `seq`): the effects its commit started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "seq_schema")]
    pub seq: Option<u64>,
    /// The idempotencyKey of your keyed dispatch: the effects its commit started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub idempotency_key: Option<String>,
    /// One running effect by its id (the `id` of an entry of observe's `work`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "seq_schema")]
    pub work: Option<u64>,
    /// true: every running effect your messages started.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(schema_with = "boolean_schema")]
    pub all: bool,
    /// Why, for the user's activity log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub reason: Option<String>,
}

lenient_request!(CancelRequest, |fields| {
    let request = CancelRequest {
        seq: fields.seq("seq", "seq must be a non-negative integer")?,
        idempotency_key: fields.opt_string("idempotencyKey", "idempotencyKey must be a string")?,
        work: fields.seq("work", "work must be a non-negative integer")?,
        all: fields.is_true("all"),
        reason: fields.string_or_none("reason"),
    };
    let named = usize::from(request.seq.is_some())
        + usize::from(request.idempotency_key.is_some())
        + usize::from(request.work.is_some())
        + usize::from(request.all);
    if named != 1 {
        return Err("name exactly one of seq, idempotencyKey, work or all: true".into());
    }
    Ok(request)
});

/// `/wait {path?, sinceSeq?, timeoutMs?}` (`lap.md` §5.3, `semantics.md` §8.5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitRequest {
    /// Only changes below this JSON Pointer count ("" or starting with "/").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub path: Option<String>,
    /// The seq of the state you hold: when the app is already past it (and, with path, the value there changed since), answers "changed" at once instead of waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "seq_schema")]
    pub since_seq: Option<u64>,
    /// How long to wait, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "millis_schema")]
    pub timeout_ms: Option<u64>,
    /// true: also answer (status "progress") when running work starts, ends or reports progress.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(schema_with = "boolean_schema")]
    pub progress: bool,
}

lenient_request!(WaitRequest, |fields| {
    let problem = "path must be empty or start with '/'";
    let path = fields.opt_string("path", problem)?;
    if path
        .as_deref()
        .is_some_and(|p| !p.is_empty() && !p.starts_with('/'))
    {
        return Err(problem.into());
    }
    Ok(WaitRequest {
        path,
        since_seq: fields.seq("sinceSeq", SINCE_SEQ_PROBLEM)?,
        timeout_ms: fields.millis("timeoutMs"),
        progress: fields.is_true("progress"),
    })
});

/// `/narrate {text, intent?}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NarrateRequest {
    /// What to tell the user (not empty).
    #[schemars(schema_with = "non_empty_string_schema")]
    pub text: String,
    /// A short label for the entry (default "Agent narrated").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "string_schema")]
    pub intent: Option<String>,
}

lenient_request!(NarrateRequest, |fields| {
    let text = fields
        .string_or_none("text")
        .filter(|t| !t.is_empty())
        .ok_or("text required")?;
    Ok(NarrateRequest {
        text,
        intent: fields.string_or_none("intent"),
    })
});

/// `/query-dom {name, multiple?}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct QueryDomRequest {
    /// The region name.
    #[schemars(schema_with = "string_schema")]
    pub name: String,
    /// Return every matching element instead of the first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(schema_with = "boolean_schema")]
    pub multiple: bool,
}

lenient_request!(QueryDomRequest, |fields| {
    Ok(QueryDomRequest {
        name: fields.string("name", "name must be a string")?,
        multiple: fields.is_true("multiple"),
    })
});

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read<T: for<'de> Deserialize<'de>>(body: Value) -> Result<T, String> {
        serde_json::from_value(body).map_err(|e| e.to_string())
    }

    #[test]
    fn message_checks_run_in_the_spec_order() {
        assert_eq!(
            read::<MessageRequest>(json!({"waitFor": "x"})).unwrap_err(),
            "msg.type must be a string"
        );
        assert_eq!(
            read::<MessageRequest>(
                json!({"msg": {"type": "a"}, "waitFor": "x", "idempotencyKey": 1})
            )
            .unwrap_err(),
            "waitFor must be one of: drained, idle, none"
        );
        assert_eq!(
            read::<MessageRequest>(json!({"msg": {"type": "a"}, "idempotencyKey": ""}))
                .unwrap_err(),
            "idempotencyKey must be a string of 1 to 256 characters"
        );
        let m: MessageRequest = read(json!({
            "msg": {"type": "a", "x": 1}, "reason": 5, "waitFor": null, "timeoutMs": 12.7,
            "drainQuietMs": "x", "includeState": "yes", "idempotencyKey": "k", "other": 1
        }))
        .unwrap();
        assert_eq!(m.dispatch.msg.0, json!({"type": "a", "x": 1}));
        assert_eq!(m.dispatch.reason, None);
        assert_eq!(m.dispatch.wait_for, None);
        assert_eq!(m.dispatch.timeout_ms, Some(12));
        assert_eq!(m.dispatch.drain_quiet_ms, None);
        assert!(!m.dispatch.include_state);
        assert_eq!(m.idempotency_key.as_deref(), Some("k"));
    }

    #[test]
    fn reads_answer_the_spec_details() {
        assert_eq!(
            read::<StateRequest>(json!({"path": 1})).unwrap_err(),
            "path must be a string"
        );
        assert_eq!(
            read::<StateRequest>(json!("junk")).unwrap(),
            StateRequest::default()
        );
        assert_eq!(
            read::<QueryStateRequest>(json!({})).unwrap_err(),
            "path must be a string"
        );
        assert_eq!(
            read::<QueryStateRequest>(json!({"path": "", "offset": -1})).unwrap_err(),
            "offset must be a non-negative integer"
        );
        assert_eq!(
            read::<QueryStateRequest>(json!({"path": "", "limit": "5"})).unwrap_err(),
            "limit must be a non-negative integer"
        );
        assert_eq!(
            read::<QueryStateRequest>(json!({"path": "/a", "offset": 5, "limit": 2.0})).unwrap(),
            QueryStateRequest {
                path: "/a".into(),
                offset: Some(5),
                limit: Some(2)
            }
        );
        assert_eq!(
            read::<WaitRequest>(json!({"path": "x"})).unwrap_err(),
            "path must be empty or start with '/'"
        );
        assert!(read::<WaitRequest>(json!({"path": ""})).is_ok());
        assert_eq!(
            read::<WaitRequest>(json!({"sinceSeq": -1})).unwrap_err(),
            "sinceSeq must be a non-negative integer"
        );
        assert_eq!(
            read::<StateRequest>(json!({"sinceSeq": "3"})).unwrap_err(),
            "sinceSeq must be a non-negative integer"
        );
        assert_eq!(
            read::<StateRequest>(json!({"sinceSeq": 3, "path": "/x"})).unwrap_err(),
            "sinceSeq reads the whole state: leave out path"
        );
        assert_eq!(
            read::<StateRequest>(json!({"sinceSeq": 3}))
                .unwrap()
                .since_seq,
            Some(3)
        );
        assert_eq!(
            read::<NarrateRequest>(json!({"text": ""})).unwrap_err(),
            "text required"
        );
        assert_eq!(
            read::<ConfirmResultRequest>(json!({"confirmId": 3})).unwrap_err(),
            "confirmId must be a string"
        );
        assert_eq!(
            read::<RecentActionsRequest>(json!({"n": 0, "kind": 3})).unwrap(),
            RecentActionsRequest::default()
        );
        assert_eq!(
            read::<RecentActionsRequest>(json!({"n": 2.5}))
                .unwrap()
                .count(),
            2
        );
    }

    #[test]
    fn schemas_describe_the_wire() {
        let schema = serde_json::to_value(schemars::schema_for!(MessageRequest)).unwrap();
        let props = schema["properties"].as_object().unwrap();
        let keys: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "msg",
                "reason",
                "waitFor",
                "drainQuietMs",
                "timeoutMs",
                "includeState",
                "idempotencyKey"
            ]
        );
        assert_eq!(schema["required"], json!(["msg"]));
        assert_eq!(props["waitFor"]["enum"], json!(["drained", "idle", "none"]));
        let observe = serde_json::to_value(schemars::schema_for!(EmptyRequest)).unwrap();
        assert_eq!(observe["type"], "object");
        assert!(observe.get("required").is_none());
    }
}
