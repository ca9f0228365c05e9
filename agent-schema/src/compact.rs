//! Compact JSON Schemas for what agents read.
//!
//! Everything in an answer lands in the model's context on every call, so the state schema in
//! the describe document drops what schemars adds for tools rather than readers: the
//! `$schema` dialect URL, titles that only repeat a type or property name, and empty
//! descriptions. Nothing that constrains a value is removed.

use serde_json::{Map, Value};

/// Keywords whose value is data (an instance), never a schema: left untouched.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples", "example"];

/// Keywords whose value maps names to schemas (the name is what a title would repeat).
const NAMED_SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions", "patternProperties"];

/// Where a schema sits, for deciding whether its `title` says anything new.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// The root schema: its title is the Rust type's name.
    Root,
    /// Under a property or definition named so.
    Named(&'a str),
    /// Anywhere else (items, `oneOf` branches, …).
    Anonymous,
}

/// Returns `schema` without `$schema`, redundant titles and empty descriptions.
///
/// ```
/// use serde_json::json;
/// let schema = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "title": "State",
///     "type": "object",
///     "properties": {"count": {"title": "count", "description": "", "type": "integer"}},
/// });
/// assert_eq!(
///     tea_agent_schema::compact::compact_schema(schema),
///     json!({"type": "object", "properties": {"count": {"type": "integer"}}}),
/// );
/// ```
pub fn compact_schema(mut schema: Value) -> Value {
    if let Some(root) = schema.as_object_mut() {
        root.shift_remove("$schema");
    }
    compact_in_place(&mut schema, Place::Root);
    schema
}

fn compact_in_place(schema: &mut Value, place: Place<'_>) {
    match schema {
        Value::Object(map) => compact_object(map, place),
        Value::Array(items) => {
            for item in items {
                compact_in_place(item, Place::Anonymous);
            }
        }
        _ => {}
    }
}

fn compact_object(map: &mut Map<String, Value>, place: Place<'_>) {
    let redundant_title = match (place, map.get("title")) {
        (_, Some(Value::String(t))) if t.is_empty() => true,
        (Place::Root, Some(Value::String(_))) => true,
        (Place::Named(name), Some(Value::String(t))) => t == name,
        _ => false,
    };
    if redundant_title {
        map.shift_remove("title");
    }
    if matches!(map.get("description"), Some(Value::String(d)) if d.trim().is_empty()) {
        map.shift_remove("description");
    }
    for (keyword, value) in map.iter_mut() {
        if DATA_KEYWORDS.contains(&keyword.as_str()) {
            continue;
        }
        if NAMED_SCHEMA_MAPS.contains(&keyword.as_str()) {
            if let Value::Object(named) = value {
                for (name, child) in named.iter_mut() {
                    compact_in_place(child, Place::Named(name));
                }
                continue;
            }
        }
        compact_in_place(value, Place::Anonymous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_dialect_root_title_and_repeated_names() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "State",
            "description": "The state.",
            "type": "object",
            "properties": {
                "view": {"title": "view", "$ref": "#/$defs/View"},
                "label": {"title": "A label", "description": " ", "type": "string"}
            },
            "$defs": {"View": {"title": "View", "oneOf": [{"title": "", "const": "home"}]}}
        });
        assert_eq!(
            compact_schema(schema),
            json!({
                "description": "The state.",
                "type": "object",
                "properties": {
                    "view": {"$ref": "#/$defs/View"},
                    "label": {"title": "A label", "type": "string"}
                },
                "$defs": {"View": {"oneOf": [{"const": "home"}]}}
            })
        );
    }

    #[test]
    fn data_values_and_constraints_are_untouched() {
        let schema = json!({
            "type": "object",
            "default": {"title": "x", "description": ""},
            "properties": {"n": {"type": "integer", "format": "int64", "minimum": 0}},
            "required": ["n"]
        });
        assert_eq!(compact_schema(schema.clone()), schema);
    }

    #[test]
    fn a_property_named_like_a_keyword_is_a_property() {
        let schema =
            json!({"properties": {"properties": {"title": "properties", "type": "string"}}});
        assert_eq!(
            compact_schema(schema),
            json!({"properties": {"properties": {"type": "string"}}})
        );
    }
}
