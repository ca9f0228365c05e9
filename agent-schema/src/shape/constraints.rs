//! Constraint keywords kept on a node (`docs/annotations.md` §7.5, checked as in `docs/semantics.md` §2.4).

use serde_json::{Map, Number, Value};

/// The constraint keywords of one node. A keyword is kept only on a node of the type it applies
/// to: the numeric ones on numbers, the length/pattern/format ones on strings, the item ones on
/// arrays. Every other node has the default (empty) value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Constraints {
    /// `minimum` (numbers).
    pub minimum: Option<Number>,
    /// `maximum` (numbers).
    pub maximum: Option<Number>,
    /// `exclusiveMinimum` (numbers; the numeric draft-06+ form).
    pub exclusive_minimum: Option<Number>,
    /// `exclusiveMaximum` (numbers; the numeric draft-06+ form).
    pub exclusive_maximum: Option<Number>,
    /// `multipleOf` (numbers).
    pub multiple_of: Option<Number>,
    /// `minLength` (strings, counted in chars).
    pub min_length: Option<u64>,
    /// `maxLength` (strings, counted in chars).
    pub max_length: Option<u64>,
    /// `pattern` (strings; an unanchored regular expression).
    pub pattern: Option<String>,
    /// `format` (strings; the validator checks only the formats `docs/semantics.md` §2.4 lists).
    pub format: Option<String>,
    /// `minItems` (arrays).
    pub min_items: Option<u64>,
    /// `maxItems` (arrays).
    pub max_items: Option<u64>,
    /// `uniqueItems: true` (arrays).
    pub unique_items: bool,
}

impl Constraints {
    /// True when no keyword is set.
    pub fn is_empty(&self) -> bool {
        *self == Constraints::default()
    }

    /// The numeric keywords of a `type: "integer"`/`"number"` schema.
    pub(crate) fn for_number(schema: &Map<String, Value>) -> Constraints {
        let num = |key: &str| match schema.get(key) {
            Some(Value::Number(n)) => Some(n.clone()),
            _ => None,
        };
        Constraints {
            minimum: num("minimum"),
            maximum: num("maximum"),
            exclusive_minimum: num("exclusiveMinimum"),
            exclusive_maximum: num("exclusiveMaximum"),
            multiple_of: num("multipleOf"),
            ..Constraints::default()
        }
    }

    /// The string keywords of a `type: "string"` schema.
    pub(crate) fn for_string(schema: &Map<String, Value>) -> Constraints {
        let text = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
        Constraints {
            min_length: count(schema, "minLength"),
            max_length: count(schema, "maxLength"),
            pattern: text("pattern"),
            format: text("format"),
            ..Constraints::default()
        }
    }

    /// The item keywords of a `type: "array"` schema.
    pub(crate) fn for_array(schema: &Map<String, Value>) -> Constraints {
        Constraints {
            min_items: count(schema, "minItems"),
            max_items: count(schema, "maxItems"),
            unique_items: schema.get("uniqueItems") == Some(&Value::Bool(true)),
            ..Constraints::default()
        }
    }

    /// A JSON Schema object holding exactly these keywords, in the order of `docs/semantics.md`
    /// §2.4 (`"type": "integer"` first when `integer`). `None` when there is nothing to check.
    pub fn to_json_schema(&self, integer: bool) -> Option<Value> {
        let mut out = Map::new();
        if integer {
            out.insert("type".into(), Value::from("integer"));
        }
        let numbers = [
            ("minimum", &self.minimum),
            ("maximum", &self.maximum),
            ("exclusiveMinimum", &self.exclusive_minimum),
            ("exclusiveMaximum", &self.exclusive_maximum),
            ("multipleOf", &self.multiple_of),
        ];
        for (key, value) in numbers {
            if let Some(n) = value {
                out.insert(key.into(), Value::Number(n.clone()));
            }
        }
        let counts = [
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
        ];
        for (key, value) in counts {
            if let Some(n) = value {
                out.insert(key.into(), Value::from(n));
            }
        }
        if let Some(p) = &self.pattern {
            out.insert("pattern".into(), Value::from(p.as_str()));
        }
        if let Some(f) = &self.format {
            out.insert("format".into(), Value::from(f.as_str()));
        }
        for (key, value) in [("minItems", self.min_items), ("maxItems", self.max_items)] {
            if let Some(n) = value {
                out.insert(key.into(), Value::from(n));
            }
        }
        if self.unique_items {
            out.insert("uniqueItems".into(), Value::Bool(true));
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}

/// A non-negative integer keyword (`3` or `3.0`).
fn count(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    let n = schema.get(key)?.as_number()?;
    n.as_u64().or_else(|| {
        let f = n.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test input is an object"),
        }
    }

    #[test]
    fn number_keywords_only_on_numbers() {
        let s = obj(
            json!({"type":"integer","format":"uint8","minimum":0,"maximum":255,
            "minLength":3,"multipleOf":0.5}),
        );
        let c = Constraints::for_number(&s);
        assert_eq!(c.minimum, Some(0.into()));
        assert_eq!(c.maximum, Some(255.into()));
        assert_eq!(c.min_length, None);
        assert_eq!(c.format, None);
        assert_eq!(
            c.to_json_schema(true),
            Some(json!({"type":"integer","minimum":0,"maximum":255,"multipleOf":0.5}))
        );
    }

    #[test]
    fn string_and_array_keywords() {
        let s = obj(
            json!({"type":"string","minLength":1,"maxLength":1.0,"pattern":"^a",
            "format":"email","minimum":3}),
        );
        let c = Constraints::for_string(&s);
        assert_eq!((c.min_length, c.max_length), (Some(1), Some(1)));
        assert_eq!(c.minimum, None);
        assert_eq!(
            c.to_json_schema(false),
            Some(json!({"minLength":1,"maxLength":1,"pattern":"^a","format":"email"}))
        );
        let a = obj(
            json!({"type":"array","minItems":2,"maxItems":2,"uniqueItems":true,
            "minLength":-1}),
        );
        let c = Constraints::for_array(&a);
        assert_eq!(
            c.to_json_schema(false),
            Some(json!({"minItems":2,"maxItems":2,"uniqueItems":true}))
        );
        let bad = obj(json!({"minLength":-1,"maxLength":1.5,"uniqueItems":false}));
        assert!(Constraints::for_string(&bad).is_empty());
        assert!(Constraints::for_array(&bad).is_empty());
        assert_eq!(Constraints::default().to_json_schema(false), None);
    }
}
