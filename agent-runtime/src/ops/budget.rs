//! Answers within a budget (`docs/mcp.md` §Answers within a budget, `docs/lap.md`
//! `budgetChars`): what an answer over a budget of characters (an MCP tool result or resource
//! text over `McpOptions::result_budget_chars`, a LAP answer over its request's
//! `budgetChars`) answers instead.
//!
//! An answer that carries a patch (`stateDiff`) drops it and names the `get_state` call that
//! reads the state instead; anything still over the budget is the bounded view of
//! [`crate::algo::bounded`], where the parts of the state it elides are named as the
//! `query_state` pages that read them. An answer within the budget is not touched.

use serde_json::{json, Map, Value};

use super::error::ApiError;
use super::Operation;
use crate::algo::bounded::{shortened, size_within, Place};

/// What a call asked, as far as the bounded view needs it: where its answer holds the state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    op: Option<Operation>,
    /// `get_state`'s and `query_state`'s `path`.
    path: Option<String>,
    /// `query_state`'s `offset`.
    offset: u64,
    /// `get_state`'s and `wait_for_change`'s `sinceSeq`.
    since_seq: Option<u64>,
}

impl Asked {
    /// `op` called with `args` (its checked arguments).
    pub(crate) fn of(op: Operation, args: &Map<String, Value>) -> Asked {
        Asked {
            op: Some(op),
            path: args.get("path").and_then(Value::as_str).map(str::to_owned),
            offset: args.get("offset").and_then(Value::as_u64).unwrap_or(0),
            since_seq: args.get("sinceSeq").and_then(Value::as_u64),
        }
    }

    /// Where the answer of the call holds the state (or the value it read).
    fn place(&self) -> Option<Place> {
        let at = |answer: &str, state: String, offset: u64| Place {
            answer: answer.into(),
            state,
            offset: usize::try_from(offset).unwrap_or(usize::MAX),
        };
        match self.op? {
            Operation::Observe => Some(at("/state", String::new(), 0)),
            Operation::State => Some(at("/state", lenient_pointer(self.path.as_deref()), 0)),
            Operation::QueryState => Some(at("/value", self.path.clone()?, self.offset)),
            Operation::Message | Operation::ConfirmResult | Operation::Wait => {
                Some(at("/stateAfter", String::new(), 0))
            }
            _ => None,
        }
    }

    /// The call that reads what a dropped `stateDiff` held, seen the answer.
    fn state_read(&self, answer: &Map<String, Value>) -> Option<Value> {
        let since = match self.op? {
            // The whole state (itself bounded).
            Operation::State => None,
            // The diff runs from the state at enqueue, `effectsObserved` commits before `seq`.
            Operation::Message => {
                let seq = answer.get("seq").and_then(Value::as_u64);
                let seen = answer
                    .get("drain")
                    .and_then(|d| d.get("effectsObserved"))
                    .and_then(Value::as_u64);
                seq.zip(seen).map(|(seq, seen)| seq.saturating_sub(seen))
            }
            Operation::Wait => self.since_seq,
            _ => return None,
        };
        let arguments = match since {
            Some(since) => json!({ "sinceSeq": since }),
            None => json!({}),
        };
        Some(json!({"tool": "get_state", "arguments": arguments}))
    }
}

/// The operations whose LAP requests take `budgetChars` (`docs/lap.md` §5.3).
pub(crate) fn takes_budget(lap_path: &str) -> bool {
    matches!(
        lap_path,
        "/observe" | "/state" | "/query-state" | "/message"
    )
}

/// The JSON Schema of `budgetChars`, as the OpenAPI document adds it to those requests.
pub(crate) fn budget_schema() -> Value {
    json!({
        "type": "integer",
        "minimum": 1,
        "description": "Answer within this many characters: large arrays, objects and strings \
            are shortened to their first elements, the answer says truncated: true and names \
            the query_state call that reads each elided part (at least 2000 is honoured). \
            Without it the answer is whole."
    })
}

/// The schema of an answer cut to a budget (the 200 answer of an operation that takes
/// `budgetChars` is its own schema or this): the answer's own keys, shortened, or whatever of
/// them fit, always with `truncated: true`; `elided` lists what was cut and the call that reads
/// each part, `read` the call that reads a dropped `stateDiff`.
pub(crate) fn bounded_answer_schema() -> Value {
    json!({
        "type": "object",
        "description": "The answer shortened to the request's budgetChars: its large arrays, \
            objects and strings cut to their first elements (keys that do not fit are left \
            out), truncated: true, and the calls that read what was cut.",
        "required": ["truncated"],
        "properties": {
            "truncated": {"const": true},
            "elided": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "kind": {"type": "string", "enum": ["array", "object", "string"]},
                        "size": {"type": "integer", "minimum": 0},
                        "shown": {"type": "integer", "minimum": 0},
                        "read": {"type": "object"},
                        "note": {"type": "string"}
                    }
                }
            },
            "read": {"type": "object"},
            "note": {"type": "string"}
        }
    })
}

/// A LAP request's `budgetChars` (`body` as it came, of `op`): `Ok(None)` when absent or
/// `null` (or the operation takes none), else a positive integer, with what the call asked.
pub(crate) fn lap_budget(op: Operation, body: &Value) -> Result<Option<(Asked, usize)>, ApiError> {
    if !takes_budget(op.lap_path()) {
        return Ok(None);
    }
    let Some(args) = body.as_object() else {
        return Ok(None);
    };
    let budget = match args.get("budgetChars") {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => match (v.as_u64(), v.as_f64()) {
            (Some(n), _) if n >= 1 => n,
            (None, Some(f)) if f >= 1.0 && f.fract() == 0.0 && f < u64::MAX as f64 => f as u64,
            _ => return Err(ApiError::invalid("budgetChars must be a positive integer")),
        },
    };
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    Ok(Some((Asked::of(op, args), budget)))
}

/// `get_state`'s lenient path as a JSON Pointer (`""` for the whole state).
fn lenient_pointer(path: Option<&str>) -> String {
    path.unwrap_or("")
        .split('/')
        .filter(|s| !s.is_empty())
        .fold(String::new(), |mut pointer, segment| {
            pointer.push('/');
            pointer.push_str(segment);
            pointer
        })
}

/// The answer of `asked`, `body`, whose text is over `budget`, as it is answered instead.
pub(crate) fn bound(asked: &Asked, body: Value, budget: usize) -> Value {
    let mut body = match body {
        Value::Object(map) => map,
        other => return shortened(other, budget, None),
    };
    if let Some(diff) = body.remove("stateDiff") {
        let size = diff.as_array().map_or(0, Vec::len);
        body.insert("truncated".into(), Value::Bool(true));
        body.insert(
            "stateDiffLeftOut".into(),
            Value::from(format!(
                "the stateDiff ({size} operations) is over the answer's budget of {budget} \
                 characters"
            )),
        );
        if let Some(read) = asked.state_read(&body) {
            body.insert("read".into(), read);
        }
        let value = Value::Object(body);
        if size_within(&value, budget).is_some() {
            return value;
        }
        return shortened(value, budget, asked.place().as_ref());
    }
    shortened(Value::Object(body), budget, asked.place().as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_paths_read_as_pointers() {
        assert_eq!(lenient_pointer(None), "");
        assert_eq!(lenient_pointer(Some("/")), "");
        assert_eq!(lenient_pointer(Some("todos//0/")), "/todos/0");
    }

    #[test]
    fn a_dispatch_over_budget_drops_its_diff_and_names_the_read() {
        let diff: Vec<Value> = (0..5_000)
            .map(|i| json!({"op": "add", "path": format!("/todos/{i}"), "value": i}))
            .collect();
        let answer = json!({"status": "dispatched", "stateDiff": diff, "actions": [],
                            "drain": {"effectsObserved": 2}, "seq": 9});
        let out = bound(&Asked::of(Operation::Message, &Map::new()), answer, 4_000);
        assert!(out.to_string().len() <= 4_000);
        assert_eq!(out["truncated"], true);
        assert_eq!(out["seq"], 9);
        assert!(out.get("stateDiff").is_none());
        assert_eq!(
            out["read"],
            json!({"tool": "get_state", "arguments": {"sinceSeq": 7}})
        );
    }

    #[test]
    fn a_page_is_named_from_its_offset() {
        let mut args = Map::new();
        args.insert("path".into(), json!("/todos"));
        args.insert("offset".into(), json!(1_000));
        let page: Vec<Value> = (0..5_000).map(|i| json!({"id": i})).collect();
        let answer = json!({"found": true, "value": page, "total": 50_000, "offset": 1_000});
        let out = bound(&Asked::of(Operation::QueryState, &args), answer, 4_000);
        assert!(out.to_string().len() <= 4_000);
        let shown = out["value"].as_array().unwrap().len() as u64;
        let read = &out["elided"][0]["read"]["arguments"];
        assert_eq!(read["path"], "/todos");
        assert_eq!(read["offset"], 1_000 + shown);
    }
}
