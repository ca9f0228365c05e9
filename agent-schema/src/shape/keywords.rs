//! Schema keyword helpers shared by the resolution rules: borrowed-or-synthetic schemas,
//! annotation keywords, union members, and the nullable wrappers of rule R3.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Keywords allowed beside a `$ref` (or a one-member `allOf`) without changing its meaning:
/// the annotation keywords of R2, plus the root-level bookkeeping keys schemars writes.
pub(crate) const ANNOTATION_KEYS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$comment",
    "$defs",
    "definitions",
];

/// A schema being resolved: borrowed from the root, or a synthetic part built while
/// unwrapping (a nullable wrapper without its `null`, the siblings of a `$ref`).
pub(crate) type Src<'a> = Cow<'a, Value>;

/// A schema together with its JSON Pointer in the root.
pub(crate) type Located<'a> = (Src<'a>, String);

/// Takes a sub-value of `parent`, keeping the borrow from the root when there is one.
pub(crate) fn sub<'a>(
    parent: &Src<'a>,
    pick: impl Fn(&Value) -> Option<&Value>,
) -> Option<Src<'a>> {
    match parent {
        Cow::Borrowed(v) => pick(v).map(Cow::Borrowed),
        Cow::Owned(v) => pick(v).cloned().map(Cow::Owned),
    }
}

pub(crate) fn only_annotations(map: &Map<String, Value>, except: &[&str]) -> bool {
    map.keys()
        .all(|k| except.contains(&k.as_str()) || ANNOTATION_KEYS.contains(&k.as_str()))
}

/// `{"type":"null"}`, `{"const":null}` or `{"enum":[null]}`.
pub(crate) fn is_null_schema(v: &Value) -> bool {
    let Some(map) = v.as_object() else {
        return false;
    };
    map.get("type") == Some(&Value::from("null"))
        || map.get("const") == Some(&Value::Null)
        || map.get("enum") == Some(&Value::Array(vec![Value::Null]))
}

/// The `type` keyword as a single name (`"string"` or `["string"]`).
pub(crate) fn single_type(map: &Map<String, Value>) -> Option<&str> {
    match map.get("type")? {
        Value::String(s) => Some(s),
        Value::Array(a) if a.len() == 1 => a[0].as_str(),
        _ => None,
    }
}

/// What R3 found in a nullable wrapper.
pub(crate) enum Nullable<'a> {
    /// `anyOf`/`oneOf` with null members: the remaining members.
    Members(Vec<Located<'a>>),
    /// The schema without its null part.
    Stripped(Map<String, Value>),
}

/// The members of `anyOf`/`oneOf` (the first present), with their pointers.
pub(crate) fn union_members<'a>(s: &Src<'a>, pointer: &str) -> Option<Vec<Located<'a>>> {
    let map = s.as_object()?;
    let key = ["oneOf", "anyOf"]
        .into_iter()
        .find(|k| map.get(*k).is_some_and(Value::is_array))?;
    let len = map.get(key)?.as_array()?.len();
    let members = (0..len)
        .filter_map(|i| {
            let m = sub(s, |v| v.get(key)?.get(i))?;
            Some((m, format!("{pointer}/{key}/{i}")))
        })
        .collect();
    Some(members)
}

/// R3: recognises a nullable wrapper and removes its null part.
pub(crate) fn nullable_part<'a>(s: &Src<'a>, pointer: &str) -> Option<Nullable<'a>> {
    let map = s.as_object()?;
    if let Some(Value::Array(types)) = map.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() < types.len() && !rest.is_empty() {
            let mut m = map.clone();
            let ty = match <[Value; 1]>::try_from(rest) {
                Ok([one]) => one,
                Err(rest) => Value::Array(rest),
            };
            m.insert("type".into(), ty);
            if let Some(Value::Array(values)) = m.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            return Some(Nullable::Stripped(m));
        }
    }
    if let Some(members) = union_members(s, pointer) {
        if members.iter().any(|(m, _)| is_null_schema(m)) {
            let rest: Vec<_> = members
                .into_iter()
                .filter(|(m, _)| !is_null_schema(m))
                .collect();
            if !rest.is_empty() {
                return Some(Nullable::Members(rest));
            }
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        if values.iter().any(Value::is_null) && values.iter().any(|v| !v.is_null()) {
            let mut m = map.clone();
            m.insert(
                "enum".into(),
                Value::Array(values.iter().filter(|v| !v.is_null()).cloned().collect()),
            );
            return Some(Nullable::Stripped(m));
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        let mut m = map.clone();
        m.remove("nullable");
        return Some(Nullable::Stripped(m));
    }
    None
}

/// All strings, all numbers, or all booleans (vacuously true for no values).
pub(crate) fn same_literal_kind<'v>(values: impl Iterator<Item = &'v Value>) -> bool {
    let mut kind = None;
    for v in values {
        let k = match v {
            Value::String(_) => 0,
            Value::Number(_) => 1,
            Value::Bool(_) => 2,
            _ => return false,
        };
        if *kind.get_or_insert(k) != k {
            return false;
        }
    }
    true
}
