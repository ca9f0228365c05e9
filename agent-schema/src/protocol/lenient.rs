//! LAP's lenient reading of request bodies (`lap.md` §5.1 step 6, §5.3): a body that is not an
//! object reads as an object with no keys, a `null` value counts as absent, unknown keys are
//! ignored, and numbers like `timeoutMs` are floored and clamped. The request types (in
//! `requests.rs`, which depends on this module, not the other way round) deserialize through
//! [`Fields`] and answer the spec's 400 detail texts as their deserialization errors.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A request body as an object without `null` values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(Map<String, Value>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Fields::from_body(Value::deserialize(deserializer)?))
    }
}

impl Fields {
    /// Normalizes a parsed body.
    pub fn from_body(body: Value) -> Self {
        match body {
            Value::Object(mut m) => {
                m.retain(|_, v| !v.is_null());
                Fields(m)
            }
            _ => Fields(Map::new()),
        }
    }

    /// The value of `key` (never `null`).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Takes the value of `key` out (never `null`).
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    /// `key` as a string: `Ok(None)` when absent, `Err(problem)` when present and not a string.
    pub fn opt_string(&mut self, key: &str, problem: &str) -> Result<Option<String>, String> {
        match self.0.remove(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(problem.to_string()),
        }
    }

    /// `key` as a string, or `Err(problem)` when absent or not a string.
    pub fn string(&mut self, key: &str, problem: &str) -> Result<String, String> {
        self.opt_string(key, problem)?
            .ok_or_else(|| problem.to_string())
    }

    /// `key` as a string, only when it is one (anything else reads as absent).
    pub fn string_or_none(&mut self, key: &str) -> Option<String> {
        match self.0.remove(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// A `timeoutMs`-like number: floored and clamped at 0; anything else reads as absent.
    pub fn millis(&self, key: &str) -> Option<u64> {
        Self::millis_of(self.0.get(key))
    }

    /// A `timeoutMs`-like value read as [`Fields::millis`] reads it.
    pub fn millis_of(value: Option<&Value>) -> Option<u64> {
        match value.and_then(Value::as_f64) {
            // `as` saturates at u64::MAX; a caller clamps to its own maximum.
            Some(n) if n.is_finite() => Some(n.floor().max(0.0) as u64),
            _ => None,
        }
    }

    /// A count: used when it is a number ≥ 1 (floored); anything else reads as absent.
    pub fn count(&self, key: &str) -> Option<u64> {
        match self.0.get(key).and_then(Value::as_f64) {
            Some(n) if n >= 1.0 => Some(n.floor().min(u64::MAX as f64) as u64),
            _ => None,
        }
    }

    /// A sequence number (`sinceSeq`): `Ok(None)` when absent, `Err(problem)` when present
    /// and not a non-negative integer that fits 64 bits (`5.0` reads as 5; `5.5`, `-1`, `"5"`
    /// do not read).
    pub fn seq(&mut self, key: &str, problem: &str) -> Result<Option<u64>, String> {
        match self.0.remove(key) {
            None => Ok(None),
            Some(v) => match (v.as_u64(), v.as_f64()) {
                (Some(n), _) => Ok(Some(n)),
                (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => {
                    Ok(Some(f as u64))
                }
                _ => Err(problem.to_string()),
            },
        }
    }

    /// Whether `key` is JSON `true` (anything else is `false`).
    pub fn is_true(&self, key: &str) -> bool {
        self.0.get(key) == Some(&Value::Bool(true))
    }
}

/// Implements `from_body` (the reading of a parsed body) and `Deserialize` for a request type
/// through [`Fields`] and a reading function that answers the spec's 400 detail as its error.
macro_rules! lenient_request {
    ($ty:ty, |$fields:ident| $body:expr) => {
        impl $ty {
            /// Reads an already parsed body as LAP reads bodies (`lap.md` §5.1): the same
            /// reading as `Deserialize`, without going through a deserializer (which would
            /// rebuild the parsed object first).
            pub fn from_body(body: serde_json::Value) -> Result<Self, String> {
                fn read($fields: &mut $crate::protocol::Fields) -> Result<$ty, String> {
                    $body
                }
                read(&mut $crate::protocol::Fields::from_body(body))
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let body = serde_json::Value::deserialize(deserializer)?;
                Self::from_body(body).map_err(<D::Error as serde::de::Error>::custom)
            }
        }
    };
}

pub(crate) use lenient_request;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_objects_and_nulls_read_as_absent() {
        let f: Fields = serde_json::from_value(json!([1, 2])).unwrap();
        assert_eq!(f, Fields::default());
        let mut f: Fields = serde_json::from_value(json!({"a": null, "b": "x"})).unwrap();
        assert!(f.get("a").is_none());
        assert_eq!(f.string_or_none("b").as_deref(), Some("x"));
    }

    #[test]
    fn numbers_are_floored_and_clamped() {
        let f = Fields::from_body(json!({"t": 12.9, "neg": -5, "s": "5", "big": 1e300}));
        assert_eq!(f.millis("t"), Some(12));
        assert_eq!(f.millis("neg"), Some(0));
        assert_eq!(f.millis("s"), None);
        assert_eq!(f.millis("big"), Some(u64::MAX));
        assert_eq!(f.count("t"), Some(12));
        assert_eq!(f.count("neg"), None);
    }

    #[test]
    fn sequence_numbers_are_exact() {
        let mut f = Fields::from_body(json!({"a": 5, "b": 5.0, "c": 5.5, "d": -1, "e": "5"}));
        assert_eq!(f.seq("a", "bad"), Ok(Some(5)));
        assert_eq!(f.seq("b", "bad"), Ok(Some(5)));
        assert_eq!(f.seq("missing", "bad"), Ok(None));
        for key in ["c", "d", "e"] {
            assert_eq!(f.seq(key, "bad"), Err("bad".to_string()), "{key}");
        }
    }
}
