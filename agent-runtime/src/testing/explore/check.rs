//! The checks of the properties (`Property`) on what one step saw: the gate's answer
//! against what the list said, a `stateDiff` applied (by a JSON Patch applier of its own, not
//! the runtime's), the secrets an agent must never read.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

/// What the agent expected of the gate when it sent a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Listed available, its payload inside the schema: accepted, or refused `invalid` by a
    /// `@validates` or by serde (an integer too wide for its Rust type), any `invalid` when
    /// the payload is not `exact`.
    Accepted { exact: bool },
    /// Listed with `available: false` and this reason, or not listed (`None`).
    Unavailable { reason: Option<String> },
    /// `@humanOnly`.
    HumanOnly,
    /// A payload outside the schema (`what` broke it).
    Invalid { what: String },
}

impl Expect {
    /// What the agent expected, as the report's lines say it.
    pub(crate) fn described(&self) -> String {
        match self {
            Expect::Accepted { .. } => "listed available".into(),
            Expect::Unavailable { reason: Some(r) } => format!("listed unavailable: {r}"),
            Expect::Unavailable { reason: None } => "not listed".into(),
            Expect::HumanOnly => "@humanOnly".into(),
            Expect::Invalid { what } => format!("outside its schema: {what}"),
        }
    }
}

/// Checks the gate's `answer` (status, body) to a message sent expecting `expect`: why it
/// broke [`Property::GateTellsTheTruth`](super::report::Property::GateTellsTheTruth), if it
/// did.
pub(crate) fn gate(expect: &Expect, status: u16, answer: &Value) -> Result<(), String> {
    let outcome = answer.get("status").and_then(Value::as_str).unwrap_or("");
    let reason = answer.get("reason").and_then(Value::as_str).unwrap_or("");
    let detail = answer.get("detail").and_then(Value::as_str).unwrap_or("");
    let accepted = status == 200 && matches!(outcome, "dispatched" | "pending-confirmation");
    let refused = |r: &str| status == 200 && outcome == "rejected" && reason == r;
    match expect {
        Expect::Accepted { exact } => {
            // The schema does not say an integer's width: one past a narrower Rust integer
            // passes validation and is refused by serde (`docs/semantics.md` §2.3).
            let validates =
                detail.contains("@validates(") || detail.starts_with("msg does not deserialize");
            if accepted || refused("invalid") && (!exact || validates) {
                return Ok(());
            }
            Err(format!(
                "listed available, sent inside its schema, and answered {status} {outcome} \
                 {reason}: {detail}"
            ))
        }
        Expect::Unavailable { reason: listed } => {
            if !refused("unavailable") {
                return Err(format!(
                    "listed {}, and answered {status} {outcome} {reason} instead of \
                     rejected/unavailable",
                    match listed {
                        Some(r) => format!("unavailable ({r})"),
                        None => "nowhere (not offered now)".to_string(),
                    }
                ));
            }
            match listed {
                Some(r) if !detail.contains(r.as_str()) => Err(format!(
                    "listed unavailable because \"{r}\", refused saying otherwise: {detail}"
                )),
                _ => Ok(()),
            }
        }
        Expect::HumanOnly => match refused("human-only") {
            true => Ok(()),
            false => Err(format!(
                "a @humanOnly action sent by an agent was answered {status} {outcome} {reason}"
            )),
        },
        Expect::Invalid { what } => {
            // An unknown variant is not listed: the action gate refuses it first.
            if refused("invalid") || what == "an unknown variant" && refused("unavailable") {
                return Ok(());
            }
            Err(format!(
                "a payload outside the schema ({what}) was answered {status} {outcome} {reason}"
            ))
        }
    }
}

/// The `update panicked` errors in an answer's `drain.errors`.
pub(crate) fn panics(answer: &Value) -> Option<String> {
    let errors = answer.pointer("/drain/errors")?.as_array()?;
    errors
        .iter()
        .filter_map(|e| e.get("message").and_then(Value::as_str))
        .find(|m| m.starts_with("update panicked"))
        .map(str::to_string)
}

/// The shortest string taken for a secret.
const MIN_SECRET_CHARS: usize = 8;

/// The strings of `whole` (the state as the owner sees it) that `agent` (the agent's view)
/// does not hold anywhere: the values redaction hides. Short strings are left out (they
/// would be found by chance in any answer).
pub(crate) fn hidden(whole: &Value, agent: &Value) -> BTreeSet<String> {
    // Borrowed: only the hidden strings are copied.
    let mut seen = HashSet::new();
    strings(agent, &mut seen);
    let mut all = HashSet::new();
    strings(whole, &mut all);
    all.into_iter()
        .filter(|s| hides(s, &seen))
        .map(str::to_string)
        .collect()
}

/// The strings of the JSON `text` that hold `needle` and that `agent` (the agent's view) does
/// not hold anywhere: what [`hidden`] finds of them, read from the text without building its
/// value (only the strings holding `needle` are copied; object keys are not values, left out
/// as [`hidden`] leaves them).
pub(crate) fn hidden_containing(text: &str, needle: &str, agent: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    if serde::de::DeserializeSeed::deserialize(
        Containing {
            needle,
            found: &mut found,
        },
        &mut de,
    )
    .is_err()
    {
        return Vec::new();
    }
    if found.is_empty() {
        return found;
    }
    let mut seen = HashSet::new();
    strings(agent, &mut seen);
    found.retain(|s| hides(s, &seen));
    found
}

/// Whether `s`, a string of the whole state, is one redaction hides: not among the agent's
/// strings `seen`, and long enough not to be found by chance.
fn hides(s: &str, seen: &HashSet<&str>) -> bool {
    !seen.contains(s) && s.chars().count() >= MIN_SECRET_CHARS
}

/// Collects the strings holding `needle` of what it reads (serde's `IgnoredAny`, keeping some
/// strings).
struct Containing<'n, 'f> {
    needle: &'n str,
    found: &'f mut Vec<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Containing<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Containing<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        if v.contains(self.needle) {
            self.found.push(v.to_owned());
        }
        Ok(())
    }
    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        let (needle, found) = (self.needle, self.found);
        while seq
            .next_element_seed(Containing {
                needle,
                found: &mut *found,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let (needle, found) = (self.needle, self.found);
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(Containing {
                needle,
                found: &mut *found,
            })?;
        }
        Ok(())
    }
}

fn strings<'v>(v: &'v Value, out: &mut HashSet<&'v str>) {
    match v {
        Value::String(s) => {
            out.insert(s);
        }
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The first secret `text` (an answer as JSON text) holds.
pub(crate) fn leaked<'a>(secrets: &'a BTreeSet<String>, text: &str) -> Option<&'a str> {
    secrets
        .iter()
        .find(|s| {
            text.contains(s.as_str())
                || serde_json::to_string(s).is_ok_and(|quoted| {
                    text.contains(quoted.trim_start_matches('"').trim_end_matches('"'))
                })
        })
        .map(String::as_str)
}

/// `doc` with the JSON Patch `ops` applied (`add`, `remove`, `replace`, `move`, `copy`,
/// `test`), or why it does not apply. `doc` is taken (the previous state is not copied); a
/// `replace` changes the value where it stands (an object's member keeps its place, as in
/// the document the server serialized).
pub(crate) fn apply_patch(mut doc: Value, ops: &Value) -> Result<Value, String> {
    let ops = ops.as_array().ok_or("stateDiff is not an array")?;
    for op in ops {
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or("op without path")?;
        match op.get("op").and_then(Value::as_str) {
            Some("add") => add(&mut doc, path, value_of(op)?)?,
            Some("replace") => {
                // An array index is digits without a leading zero (`-` names nothing).
                let target = doc.pointer_mut(path).ok_or(format!("nothing at {path}"))?;
                *target = value_of(op)?;
            }
            Some("remove") => {
                remove(&mut doc, path)?;
            }
            Some("move") => {
                let from = op
                    .get("from")
                    .and_then(Value::as_str)
                    .ok_or("move without from")?;
                let v = remove(&mut doc, from)?;
                add(&mut doc, path, v)?;
            }
            Some("copy") => {
                let from = op
                    .get("from")
                    .and_then(Value::as_str)
                    .ok_or("copy without from")?;
                let v = doc.pointer(from).cloned().ok_or(format!("no {from}"))?;
                add(&mut doc, path, v)?;
            }
            Some("test") => {
                if doc.pointer(path) != Some(value_of(op)?).as_ref() {
                    return Err(format!("test failed at {path}"));
                }
            }
            other => return Err(format!("unknown op {other:?}")),
        }
    }
    Ok(doc)
}

/// Whether `value` serializes (serde_json's compact text) to exactly `text`, compared as it
/// is written: no second text is allocated.
pub(crate) fn writes_as<T: serde::Serialize + ?Sized>(value: &T, text: &str) -> bool {
    struct Against<'t> {
        rest: &'t [u8],
        same: bool,
    }
    impl std::io::Write for Against<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.rest.strip_prefix(buf) {
                Some(rest) if self.same => self.rest = rest,
                _ => self.same = false,
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Against {
        rest: text.as_bytes(),
        same: true,
    };
    serde_json::to_writer(&mut w, value).is_ok() && w.same && w.rest.is_empty()
}

fn value_of(op: &Value) -> Result<Value, String> {
    op.get("value")
        .cloned()
        .ok_or_else(|| format!("op without value: {op}"))
}

/// `path` split into its parent pointer and its last token (unescaped).
fn split(path: &str) -> Result<(&str, String), String> {
    let at = path.rfind('/').ok_or(format!("bad pointer {path:?}"))?;
    let last = path[at + 1..].replace("~1", "/").replace("~0", "~");
    Ok((&path[..at], last))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    match doc.pointer_mut(parent) {
        Some(Value::Object(o)) => {
            o.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .map_err(|_| format!("bad index {path}"))?
            };
            if i > a.len() {
                return Err(format!("index out of bounds at {path}"));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("no parent for {path}")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    if path.is_empty() {
        return Ok(std::mem::take(doc));
    }
    let (parent, last) = split(path)?;
    match doc.pointer_mut(parent) {
        Some(Value::Object(o)) => o.shift_remove(&last).ok_or(format!("nothing at {path}")),
        Some(Value::Array(a)) => {
            let i: usize = last.parse().map_err(|_| format!("bad index {path}"))?;
            (i < a.len())
                .then(|| a.remove(i))
                .ok_or(format!("index out of bounds at {path}"))
        }
        _ => Err(format!("nothing at {path}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_applies_like_rfc_6902() {
        let doc = json!({"a": [1, 2], "b": {"c~/": 1}});
        let ops = json!([
            {"op": "add", "path": "/a/1", "value": 9},
            {"op": "remove", "path": "/b/c~0~1"},
            {"op": "replace", "path": "/a/0", "value": "x"},
            {"op": "add", "path": "/a/-", "value": 3},
            {"op": "move", "from": "/a/0", "path": "/b/m"}
        ]);
        assert_eq!(
            apply_patch(doc.clone(), &ops).unwrap(),
            json!({"a": [9, 2, 3], "b": {"m": "x"}})
        );
        assert!(apply_patch(doc.clone(), &json!([{"op": "remove", "path": "/z"}])).is_err());
        let replace = |path: &str| json!([{"op": "replace", "path": path, "value": 0}]);
        assert!(apply_patch(doc.clone(), &replace("/a/2")).is_err());
        assert!(apply_patch(doc.clone(), &replace("/a/-")).is_err());
        assert!(apply_patch(doc.clone(), &replace("/a/01")).is_err());
        assert!(apply_patch(doc.clone(), &replace("/q")).is_err());
        // A replaced member keeps its place among the object's members.
        let first = json!({"x": 1, "y": 2});
        let replaced = apply_patch(first, &json!([{"op": "replace", "path": "/x", "value": 3}]));
        assert_eq!(replaced.unwrap().to_string(), r#"{"x":3,"y":2}"#);
    }

    #[test]
    fn writes_as_compares_the_text_as_written() {
        let v = json!({"a": [1, "é"], "b": null});
        assert!(writes_as(&v, r#"{"a":[1,"é"],"b":null}"#));
        assert!(!writes_as(&v, r#"{"a":[1,"é"],"b":null} "#));
        assert!(!writes_as(&v, r#"{"a":[1,"é"]"#));
        assert!(!writes_as(&v, r#"{"a":[1,"e"],"b":null}"#));
    }

    #[test]
    fn the_gate_is_held_to_what_the_list_said() {
        let unavailable = json!({"status": "rejected", "reason": "unavailable",
            "detail": "\"clear\" is not available now: nothing to clear (routeGate: x)"});
        let listed = Expect::Unavailable {
            reason: Some("nothing to clear".into()),
        };
        assert!(gate(&listed, 200, &unavailable).is_ok());
        let dispatched = json!({"status": "dispatched", "stateDiff": []});
        assert!(gate(&listed, 200, &dispatched).is_err());
        assert!(gate(&Expect::Accepted { exact: true }, 200, &dispatched).is_ok());
        let invalid = json!({"status": "rejected", "reason": "invalid",
            "detail": "title: value violates `@validates(\"size(v) > 0\")`"});
        assert!(gate(&Expect::Accepted { exact: true }, 200, &invalid).is_ok());
        let wrong = json!({"status": "rejected", "reason": "invalid", "detail": "x: missing"});
        assert!(gate(&Expect::Accepted { exact: true }, 200, &wrong).is_err());
        assert!(gate(&Expect::HumanOnly, 200, &dispatched).is_err());
    }

    #[test]
    fn hidden_strings_are_what_only_the_owner_sees() {
        let whole = json!({"k": "sk-secret-1", "t": "visible title", "s": "short"});
        let agent = json!({"t": "visible title", "s": "short"});
        let secrets = hidden(&whole, &agent);
        assert_eq!(secrets.into_iter().collect::<Vec<_>>(), vec!["sk-secret-1"]);
    }

    #[test]
    fn hidden_strings_holding_a_needle_are_read_from_the_text() {
        let whole = json!({
            "todos": [{"title": "a ⟦x-secret-1⟧ b", "note": "⟦x-secret-2⟧"}, {"title": "plain", "n": 3.5}],
            "⟦x-secret-key⟧": null, "short": "⟦x-5⟧", "seen": "⟦x-secret-3⟧", "deep": {"k": [["⟦x-secret-4⟧", true]]}
        });
        let agent = json!({"todos": [{"title": "a ⟦x-secret-1⟧ b"}], "seen": "⟦x-secret-3⟧"});
        let text = whole.to_string();
        let mut found = hidden_containing(&text, "⟦x-", &agent);
        found.sort();
        assert_eq!(found, vec!["⟦x-secret-2⟧", "⟦x-secret-4⟧"]);
        // The same as `hidden` keeps of them.
        let mut kept: Vec<String> = hidden(&whole, &agent)
            .into_iter()
            .filter(|s| s.contains("⟦x-"))
            .collect();
        kept.sort();
        assert_eq!(found, kept);
        assert!(hidden_containing("not json", "⟦x-", &agent).is_empty());
    }
}
