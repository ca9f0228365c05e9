//! The texts of validation issues (`docs/semantics.md` §2.1) and the formatting of the values they
//! quote.
//!
//! - `<v>`: a string as itself, anything else as compact JSON ([`value_text`]);
//! - numbers print without a fraction when they are integral with magnitude below 2^53 (`5`, not
//!   `5.0`), otherwise as serde_json prints them ([`number_text`]);
//! - lists of legal values single-quote strings and print numbers and booleans bare, joined by
//!   `, ` ([`literal_list`], [`quoted_list`]).

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// 2^53: below this magnitude an integral `f64` prints as an integer.
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;

/// M1.
pub(crate) const MSG_NOT_OBJECT: &str = "msg must be a plain object";
/// M2.
pub(crate) const TYPE_MISSING: &str = "msg.type must be a string variant tag";
/// M4.
pub(crate) const FIELD_MISSING: &str = "required field is missing";
/// M14.
pub(crate) const UNTYPED_FIELD: &str = "value accepted but field schema is 'unknown' — the \
                                        validator could not structurally check it.";

/// The JSON kind of a value as the messages name it.
pub(crate) fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A number as the messages print it: integral `f64`s below 2^53 without a fraction.
pub(crate) fn number_text(n: &Number) -> String {
    if n.is_f64() {
        if let Some(f) = n.as_f64() {
            if f.fract() == 0.0 && f.abs() < EXACT_INTEGER_LIMIT {
                // Exact: |f| < 2^53 fits an i64 without rounding.
                return (f as i64).to_string();
            }
        }
    }
    n.to_string()
}

/// `<v>`: a string as itself, anything else as compact JSON (numbers by [`number_text`]).
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            write_compact(other, &mut out);
            out
        }
    }
}

/// A legal-values list of literals: `'a', 'b'` for strings, `1, 2` for numbers and booleans.
pub(crate) fn literal_list(values: &[Value]) -> String {
    let mut out = String::new();
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match value {
            Value::String(s) => {
                out.push('\'');
                out.push_str(s);
                out.push('\'');
            }
            other => write_compact(other, &mut out),
        }
    }
    out
}

/// Names single-quoted and joined by `, `: `'a', 'b'`.
pub(crate) fn quoted_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, name) in names.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('\'');
        out.push_str(name);
        out.push('\'');
    }
    out
}

/// M3.
pub(crate) fn unknown_variant(name: &str, legal: &str) -> String {
    format!("'{name}' is not a known variant. Legal values: {legal}.")
}

/// M5.
pub(crate) fn wrong_type(expected: &str, got: &Value) -> String {
    format!("expected {expected}, got {}", kind_name(got))
}

/// M6.
pub(crate) fn not_in_enum(value: &Value, legal: &str) -> String {
    format!(
        "'{}' is not in the enum. Legal values: {legal}.",
        value_text(value)
    )
}

/// M7.
pub(crate) fn not_object(got: &Value) -> String {
    format!("expected object, got {}", kind_name(got))
}

/// M8.
pub(crate) fn not_union_object(got: &Value) -> String {
    format!(
        "expected discriminated-union object, got {}",
        kind_name(got)
    )
}

/// M9.
pub(crate) fn not_array(got: &Value) -> String {
    format!("expected array, got {}", kind_name(got))
}

/// M10.
pub(crate) fn missing_discriminant(disc: &str, legal: &str) -> String {
    format!("discriminant '{disc}' must be one of: {legal}")
}

/// M11.
pub(crate) fn unknown_discriminant(value: &str, disc: &str, legal: &str) -> String {
    format!("'{value}' is not a legal '{disc}'. Legal values: {legal}.")
}

/// M12 / M12n (`legal` is `(none)` when the object has no fields).
pub(crate) fn unexpected_field(key: &str, legal: &str) -> String {
    format!("field '{key}' is not in the schema. Legal fields: {legal}.")
}

/// M13.
pub(crate) fn validates_failed(src: &str) -> String {
    format!("value violates `@validates(\"{src}\")`")
}

/// M13e: the predicate could not be evaluated on the value (an evaluation error, not the
/// predicate's answer).
pub(crate) fn validates_unevaluable(src: &str) -> String {
    format!(
        "`@validates(\"{src}\")` could not be evaluated on this value (an evaluation error, \
         not the predicate's answer): the message is refused"
    )
}

/// Writes `value` as compact JSON with the number rule, without recursion (the value may be
/// nested arbitrarily deep).
fn write_compact(value: &Value, out: &mut String) {
    enum Frame<'a> {
        Array(std::slice::Iter<'a, Value>, bool),
        Object(serde_json::map::Iter<'a>, bool),
    }
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Array(items) => {
                    out.push('[');
                    stack.push(Frame::Array(items.iter(), true));
                }
                Value::Object(map) => {
                    out.push('{');
                    stack.push(Frame::Object(map.iter(), true));
                }
                Value::Null => out.push_str("null"),
                Value::Bool(b) => {
                    let _ = write!(out, "{b}");
                }
                Value::Number(n) => out.push_str(&number_text(n)),
                Value::String(s) => write_json_string(s, out),
            }
        }
        let Some(top) = stack.last_mut() else {
            break;
        };
        match top {
            Frame::Array(items, first) => match items.next() {
                Some(item) => {
                    if !std::mem::take(first) {
                        out.push(',');
                    }
                    next = Some(item);
                }
                None => {
                    out.push(']');
                    stack.pop();
                }
            },
            Frame::Object(entries, first) => match entries.next() {
                Some((key, item)) => {
                    if !std::mem::take(first) {
                        out.push(',');
                    }
                    write_json_string(key, out);
                    out.push(':');
                    next = Some(item);
                }
                None => {
                    out.push('}');
                    stack.pop();
                }
            },
        }
    }
}

/// A JSON string literal, escaped as serde_json escapes it.
fn write_json_string(s: &str, out: &mut String) {
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        // Serializing a `str` cannot fail; keep the raw text rather than panic.
        Err(_) => out.push_str(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(v: Value) -> String {
        match v {
            Value::Number(n) => number_text(&n),
            _ => unreachable!("a number"),
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(num(json!(5)), "5");
        assert_eq!(num(json!(5.0)), "5");
        assert_eq!(num(json!(-5.0)), "-5");
        assert_eq!(num(json!(-0.0)), "0");
        assert_eq!(num(json!(1.5)), "1.5");
        assert_eq!(num(json!(u64::MAX)), "18446744073709551615");
        assert_eq!(num(json!(i64::MIN)), "-9223372036854775808");
        assert_eq!(num(json!(9_007_199_254_740_991.0)), "9007199254740991");
        // 2^53 and beyond: as serde_json prints the f64.
        assert_eq!(num(json!(9_007_199_254_740_992.0)), "9007199254740992.0");
        assert_eq!(num(json!(1e300)), "1e+300");
    }

    #[test]
    fn values() {
        assert_eq!(value_text(&json!("a \"b\"")), "a \"b\"");
        assert_eq!(value_text(&json!(6)), "6");
        assert_eq!(value_text(&json!(null)), "null");
        assert_eq!(value_text(&json!(true)), "true");
        assert_eq!(value_text(&json!([])), "[]");
        assert_eq!(value_text(&json!({})), "{}");
        assert_eq!(
            value_text(&json!({"a": [1.0, "x\"y", null, {"b": false}], "c": 2.5})),
            r#"{"a":[1,"x\"y",null,{"b":false}],"c":2.5}"#
        );
    }

    #[test]
    fn deep_value_does_not_recurse() {
        const DEPTH: usize = 100_000;
        let mut v = json!(1);
        for _ in 0..DEPTH {
            v = Value::Array(vec![v]);
        }
        let text = value_text(&v);
        // Dropping a value this deep recurses in serde_json: take it apart iteratively before
        // asserting anything.
        let mut cur = v;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
        let expected = format!("{}1{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
        assert!(text == expected);
    }

    #[test]
    fn lists() {
        assert_eq!(literal_list(&[json!(1), json!(2), json!(3.0)]), "1, 2, 3");
        assert_eq!(literal_list(&[json!("a"), json!("b")]), "'a', 'b'");
        assert_eq!(literal_list(&[json!(true), json!(false)]), "true, false");
        assert_eq!(literal_list(&[]), "");
        assert_eq!(quoted_list(["x", "y"]), "'x', 'y'");
    }

    #[test]
    fn templates() {
        assert_eq!(
            not_in_enum(&json!(6), "1, 2, 3, 4, 5"),
            "'6' is not in the enum. Legal values: 1, 2, 3, 4, 5."
        );
        assert_eq!(
            unknown_variant("Bogus", "'a', 'b'"),
            "'Bogus' is not a known variant. Legal values: 'a', 'b'."
        );
        assert_eq!(
            wrong_type("number", &json!("x")),
            "expected number, got string"
        );
        assert_eq!(not_object(&json!([])), "expected object, got array");
        assert_eq!(
            not_union_object(&json!(1)),
            "expected discriminated-union object, got number"
        );
        assert_eq!(not_array(&json!(null)), "expected array, got null");
        assert_eq!(
            missing_discriminant("kind", "'a', 'b'"),
            "discriminant 'kind' must be one of: 'a', 'b'"
        );
        assert_eq!(
            unknown_discriminant("z", "kind", "'a'"),
            "'z' is not a legal 'kind'. Legal values: 'a'."
        );
        assert_eq!(
            unexpected_field("tilte", "(none)"),
            "field 'tilte' is not in the schema. Legal fields: (none)."
        );
        assert_eq!(
            validates_failed("v > 0"),
            "value violates `@validates(\"v > 0\")`"
        );
    }
}
