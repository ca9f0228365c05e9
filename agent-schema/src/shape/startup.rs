//! Start-up checks against the real types (run by `describe` and by host construction,
//! through [`crate::startup`]); every error is reported, not only the first:
//!
//! - every `@example` deserializes as the `Msg` type and passes the `@validates` of the
//!   variant's own fields;
//! - every field path a `@routeGated` expression reads from `state` exists in the state's
//!   JSON Schema, and every path a `@validates` expression reads from `v` exists in the
//!   field's type; `.length` on a list or a string is reported with "use size(…)";
//! - every `@validates`, nested ones included, passes the compile-time CEL checks (syntax,
//!   depth, only `v` in scope).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::model::{FieldModel, MsgModel, ObjectModel, TypeKind, TypeNode, VariantModel};
use super::SchemaError;
use crate::tags::cel::{analyze, check_expression, evaluate};
use crate::tags::Tag;

impl MsgModel {
    /// Runs the start-up checks of this module for the message type `M` whose model this
    /// is, with `state_schema` the schemars JSON Schema of the app's state (the stripped one
    /// agents see). Returns every error found, in variant order (examples, then the route
    /// gate, then the `@validates` of the fields); empty when all pass.
    pub fn startup_errors<M: DeserializeOwned>(&self, state_schema: &Value) -> Vec<SchemaError> {
        let mut errors = Vec::new();
        for variant in &self.variants {
            check_examples::<M>(variant, &mut errors);
            if let Some(gate) = &variant.annotations.route_gate {
                for (root, path) in reads_of(gate, "state") {
                    if let Err(problem) = schema_path(state_schema, state_schema, &path) {
                        let at = Site {
                            variant,
                            field: None,
                            tag: Tag::RouteGated,
                        };
                        errors.push(path_error(&at, gate, &root, &path, problem));
                    }
                }
            }
            check_field_paths(variant, &variant.payload, "", &mut errors);
        }
        errors
    }
}

/// Where a start-up error is: the variant, the field (if any: its path from the variant's
/// payload, `limits.low` for a nested one) and the tag.
struct Site<'m> {
    variant: &'m VariantModel,
    field: Option<String>,
    tag: Tag,
}

impl Site<'_> {
    /// The error at this site.
    fn error(&self, problem: String, fix: String) -> SchemaError {
        SchemaError::Startup {
            variant: self.variant.wire_name.clone(),
            field: self.field.clone(),
            tag: self.tag,
            problem,
            fix,
        }
    }
}

/// The paths an expression reads from `var` (empty when it does not parse: syntax is
/// checked elsewhere).
fn reads_of(source: &str, var: &str) -> Vec<(String, Vec<String>)> {
    analyze(source)
        .map(|reads| {
            reads
                .paths
                .into_iter()
                .filter(|(root, _)| root == var)
                .collect()
        })
        .unwrap_or_default()
}

/// Every `@example` of `variant`: it deserializes as `M` and passes the fields'
/// `@validates`. An example's first problem is reported; the other examples are still
/// checked.
fn check_examples<M: DeserializeOwned>(variant: &VariantModel, errors: &mut Vec<SchemaError>) {
    for (index, example) in variant.annotations.examples.iter().enumerate() {
        if let Err(error) = check_example::<M>(variant, index, example) {
            errors.push(error);
        }
    }
}

/// Example number `index + 1` of `variant`; see [`check_examples`].
fn check_example<M: DeserializeOwned>(
    variant: &VariantModel,
    index: usize,
    example: &str,
) -> Result<(), SchemaError> {
    let site = |field: Option<&str>, problem: String, fix: String| {
        let at = Site {
            variant,
            field: field.map(str::to_owned),
            tag: Tag::Example,
        };
        at.error(format!("#{} {problem}", index + 1), fix)
    };
    let parsed: Value = serde_json::from_str(example).map_err(|e| {
        site(
            None,
            format!("is not JSON: {e}"),
            "write the example as JSON".into(),
        )
    })?;
    let payloads = match parsed {
        Value::Array(items) => items,
        other => vec![other],
    };
    for payload in payloads {
        let Value::Object(object) = payload else {
            return Err(site(
                None,
                "is not a JSON object".into(),
                "write the message as an object, e.g. {\"type\": …}".into(),
            ));
        };
        let message = with_type(object, &variant.wire_name);
        if let Err(e) = serde_json::from_value::<M>(Value::Object(message.clone())) {
            return Err(site(
                None,
                format!("does not deserialize as the message: {e}"),
                "make the example match the variant's fields, or remove it".into(),
            ));
        }
        for field in &variant.payload.fields {
            let (Some(src), Some(value)) = (&field.validates, message.get(&field.name)) else {
                continue;
            };
            if !evaluate(src, "v", value) {
                return Err(site(
                    Some(&field.name),
                    format!(
                        "fails `@validates(\"{src}\")` of field `{}` with {value}",
                        field.name
                    ),
                    format!("change the example's `{}` or the predicate", field.name),
                ));
            }
        }
    }
    Ok(())
}

/// `object` with `"type": wire_name` first when it has no `"type"` (a payload-only example).
fn with_type(object: Map<String, Value>, wire_name: &str) -> Map<String, Value> {
    if object.contains_key("type") {
        return object;
    }
    let mut message = Map::new();
    message.insert("type".into(), Value::String(wire_name.to_owned()));
    message.extend(object);
    message
}

/// The `v` paths of every `@validates` in `object` (nested objects, arrays and unions
/// included) exist in the field's type; `prefix` is the path of `object` in the payload
/// (`""` or `limits.`).
fn check_field_paths(
    variant: &VariantModel,
    object: &ObjectModel,
    prefix: &str,
    errors: &mut Vec<SchemaError>,
) {
    for field in &object.fields {
        let path = format!("{prefix}{}", field.name);
        if let Some(src) = &field.validates {
            let at = Site {
                variant,
                field: Some(path.clone()),
                tag: Tag::Validates,
            };
            // Nested fields' tags come from schemars docs, unseen by the derive: same checks.
            if let Some(kind) = check_expression(Tag::Validates, src) {
                errors.push(at.error(
                    format!("on `{path}`: {}", kind.summary()),
                    kind.help().unwrap_or_default(),
                ));
            } else {
                for (root, read) in reads_of(src, "v") {
                    if let Err(problem) = node_path(&field.ty, &read, 0) {
                        errors.push(path_error(&at, src, &root, &read, problem));
                    }
                }
            }
        }
        for nested in objects_in(field) {
            check_field_paths(variant, nested, &format!("{path}."), errors);
        }
    }
}

/// The objects directly inside a field's type.
fn objects_in(field: &FieldModel) -> Vec<&ObjectModel> {
    let mut node = &field.ty;
    while let TypeKind::Array(element) = &node.kind {
        node = element;
    }
    match &node.kind {
        TypeKind::Object(object) => vec![object],
        TypeKind::Union(union) => union.branches.iter().map(|b| &b.payload).collect(),
        _ => Vec::new(),
    }
}

/// What is wrong with a path, at segment `at`.
#[derive(Debug)]
enum PathProblem {
    /// `.length` (or `.size`) on a list or a string.
    Length { at: usize, what: &'static str },
    /// A field that does not exist; `known` are the fields there.
    NoField { at: usize, known: Vec<String> },
    /// A field read from a value that has none.
    NotAnObject { at: usize, what: &'static str },
}

/// The start-up error for `problem` in `source` of the tag at `site` (a `@validates` names
/// its field).
fn path_error(
    site: &Site<'_>,
    source: &str,
    root: &str,
    path: &[String],
    problem: PathProblem,
) -> SchemaError {
    let upto = |at: usize| format!("{root}.{}", path[..at].join("."));
    let whole = |at: usize| format!("{root}.{}", path[..=at].join("."));
    let (problem, fix) = match problem {
        PathProblem::Length { at, what } => (
            format!("`{source}` reads `{}` of {what}", whole(at)),
            format!("CEL has no `.{}`: use size({})", path[at], upto(at)),
        ),
        PathProblem::NoField { at, known } => (
            format!(
                "`{source}` reads `{}`, which is not in the schema",
                whole(at)
            ),
            if known.is_empty() {
                format!("`{}` has no fields", upto(at).trim_end_matches('.'))
            } else {
                format!(
                    "the fields of `{}` are: {}",
                    upto(at).trim_end_matches('.'),
                    known.join(", ")
                )
            },
        ),
        PathProblem::NotAnObject { at, what } => (
            format!(
                "`{source}` reads `{}`, but `{}` is {what}",
                whole(at),
                upto(at).trim_end_matches('.')
            ),
            "read fields only from objects".into(),
        ),
    };
    let problem = match &site.field {
        Some(field) => format!("on `{field}`: {problem}"),
        None => problem,
    };
    site.error(problem, fix)
}

/// Checks `path[at..]` against a model node. Unknown nodes accept any path.
fn node_path(node: &TypeNode, path: &[String], at: usize) -> Result<(), PathProblem> {
    let Some(segment) = path.get(at) else {
        return Ok(());
    };
    match &node.kind {
        TypeKind::Unknown => Ok(()),
        TypeKind::Array(_) => Err(list_problem(segment, at, "a list")),
        TypeKind::String => Err(list_problem(segment, at, "a string")),
        TypeKind::Number { .. } => Err(PathProblem::NotAnObject {
            at,
            what: "a number",
        }),
        TypeKind::Boolean => Err(PathProblem::NotAnObject {
            at,
            what: "a boolean",
        }),
        TypeKind::Enum(_) => Err(PathProblem::NotAnObject {
            at,
            what: "an enum value",
        }),
        TypeKind::Object(object) => object_path(object, path, at),
        TypeKind::Union(union) => {
            if segment == &union.discriminant {
                return Ok(());
            }
            let mut first = None;
            for branch in &union.branches {
                match object_path(&branch.payload, path, at) {
                    Ok(()) => return Ok(()),
                    Err(problem) => {
                        first.get_or_insert(problem);
                    }
                }
            }
            first.map_or(Ok(()), Err)
        }
    }
}

/// [`node_path`] on an object's fields.
fn object_path(object: &ObjectModel, path: &[String], at: usize) -> Result<(), PathProblem> {
    match object.fields.iter().find(|f| f.name == path[at]) {
        Some(field) => node_path(&field.ty, path, at + 1),
        None => Err(PathProblem::NoField {
            at,
            known: object.fields.iter().map(|f| f.name.clone()).collect(),
        }),
    }
}

/// `.length`/`.size` on a list or string is the JavaScript habit; any other field is none.
fn list_problem(segment: &str, at: usize, what: &'static str) -> PathProblem {
    if segment == "length" || segment == "size" {
        PathProblem::Length { at, what }
    } else {
        PathProblem::NotAnObject { at, what }
    }
}

/// Checks `path` against a raw JSON Schema node (the state schema). Anything this does not
/// understand accepts the path; `$ref` hops are bounded.
fn schema_path(root: &Value, node: &Value, path: &[String]) -> Result<(), PathProblem> {
    schema_at(root, node, path, 0, 0)
}

/// See [`schema_path`].
fn schema_at(
    root: &Value,
    node: &Value,
    path: &[String],
    at: usize,
    hops: usize,
) -> Result<(), PathProblem> {
    let Some(segment) = path.get(at) else {
        return Ok(());
    };
    let Value::Object(schema) = node else {
        return Ok(());
    };
    if hops > 16 {
        return Ok(());
    }
    if let Some(Value::String(reference)) = schema.get("$ref") {
        let name = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"));
        let target = name.and_then(|n| root.get("$defs").or(root.get("definitions"))?.get(n));
        return match target {
            Some(target) => schema_at(root, target, path, at, hops + 1),
            None => Ok(()),
        };
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = schema.get(key) {
            let members: Vec<&Value> = members.iter().filter(|m| !is_null_schema(m)).collect();
            let mut first = None;
            for member in &members {
                match schema_at(root, member, path, at, hops + 1) {
                    Ok(()) => return Ok(()),
                    Err(problem) => {
                        first.get_or_insert(problem);
                    }
                }
            }
            return first.map_or(Ok(()), Err);
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(properties)) = schema.get("properties") {
        if let Some(property) = properties.get(segment) {
            return schema_at(root, property, path, at + 1, hops);
        }
        let open = schema.contains_key("patternProperties")
            || schema
                .get("additionalProperties")
                .is_some_and(|a| a != &Value::Bool(false));
        if open {
            return Ok(());
        }
        return Err(PathProblem::NoField {
            at,
            known: properties.keys().cloned().collect(),
        });
    }
    match types.as_slice() {
        ["array"] => Err(list_problem(segment, at, "a list")),
        ["string"] => Err(list_problem(segment, at, "a string")),
        ["integer"] | ["number"] => Err(PathProblem::NotAnObject {
            at,
            what: "a number",
        }),
        ["boolean"] => Err(PathProblem::NotAnObject {
            at,
            what: "a boolean",
        }),
        ["object"] => match schema.get("additionalProperties") {
            Some(values @ Value::Object(_)) => schema_at(root, values, path, at + 1, hops),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `{"type":"null"}` (a nullable wrapper's null part).
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type") == Some(&Value::String("null".into()))
}
