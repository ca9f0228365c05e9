//! What changes from one run to the next in an answer, replaced by stable placeholders so a
//! replay's report can be compared and snapshotted: ids (proposals, tokens, sessions, log
//! entries) become `confirm-1`, `agent-1`, … numbered in order of first appearance (so equal
//! ids stay equal), and times become `"<time>"`.

use std::collections::HashMap;

use serde_json::Value;

/// Keys whose number is a time or a duration.
const TIMES: &[&str] = &[
    "at",
    "proposedAt",
    "createdAt",
    "lastSeenAt",
    "expiresAt",
    "decidedAt",
    "startedAt",
    "updatedAt",
    "durationMs",
    "retryAfterMs",
    "lastEventId",
];

/// Keys whose string is an id made at run time, and the prefix of its placeholder.
const IDS: &[(&str, &str)] = &[
    ("confirmId", "confirm"),
    ("tid", "agent"),
    ("sessionId", "session"),
];

/// The placeholders of one run: each id of a kind numbered in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct Normaliser {
    seen: HashMap<(&'static str, String), String>,
    counts: HashMap<&'static str, usize>,
}

impl Normaliser {
    /// The placeholder of the id `value` of `kind`.
    pub(crate) fn id(&mut self, kind: &'static str, value: &str) -> String {
        if let Some(p) = self.seen.get(&(kind, value.to_string())) {
            return p.clone();
        }
        let n = self.counts.entry(kind).or_default();
        *n += 1;
        let placeholder = format!("{kind}-{n}");
        self.seen
            .insert((kind, value.to_string()), placeholder.clone());
        placeholder
    }

    /// `value` with its volatile parts replaced.
    pub(crate) fn value(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), self.field(k, v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.value(v)).collect()),
            other => other.clone(),
        }
    }

    fn field(&mut self, key: &str, v: &Value) -> Value {
        if TIMES.contains(&key) && v.is_number() {
            return Value::String("<time>".into());
        }
        if let Value::String(s) = v {
            if let Some((_, kind)) = IDS.iter().find(|(k, _)| *k == key) {
                return Value::String(self.id(kind, s));
            }
            // Log entries' ids: a UUID, or `narrate-<time>-<random>`.
            if key == "id" && (is_uuid(s) || s.starts_with("narrate-")) {
                return Value::String(self.id("entry", s));
            }
        }
        self.value(v)
    }
}

/// Whether `s` reads as a UUID (`8-4-4-4-12` hexadecimal digits).
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_keep_their_equalities_and_times_go() {
        let mut n = Normaliser::default();
        let v = json!({
            "confirmId": "c-9f", "at": 1234, "tid": "x",
            "entries": [
                {"id": "0b7f3c2e-1d4a-4c1b-9a7e-3f2d1c0b9a8e", "tid": "x"},
                {"id": "t1", "confirmId": "c-9f", "at": "not a number"},
                {"confirmId": "c-77"}
            ]
        });
        assert_eq!(
            n.value(&v),
            json!({
                "confirmId": "confirm-1", "at": "<time>", "tid": "agent-1",
                "entries": [
                    {"id": "entry-1", "tid": "agent-1"},
                    {"id": "t1", "confirmId": "confirm-1", "at": "not a number"},
                    {"confirmId": "confirm-2"}
                ]
            })
        );
    }
}
