//! Start-up checks against the real types (run by `describe` and by host construction,
//! through [`crate::startup`]); every error is reported, not only the first:
//!
//! - every `@example` deserializes as the `Msg` type and passes the `@validates` of the
//!   variant's own fields;
//! - every `@routeGated` expression type-checks against the state's JSON Schema, and every
//!   `@validates` against its field's type (see `typecheck`: unknown fields with a
//!   did-you-mean, enum literals, comparisons, arithmetic and functions on the wrong kinds;
//!   `.length` on a list or a string is reported with "use size(…)"); its warnings (nullable
//!   reads without a guard) and the dynamic parts of the schema it could not check are
//!   [`StartupNote`]s, for the runtime's log;
//! - every `@validates`, nested ones included, passes the compile-time CEL checks (syntax,
//!   depth, only `v` in scope).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::model::{FieldModel, MsgModel, ObjectModel, TypeKind, VariantModel};
use super::typecheck::{check_gate, check_validates, Report};
use super::SchemaError;
use crate::tags::cel::{check_expression, evaluate};
use crate::tags::Tag;

impl MsgModel {
    /// Runs the start-up checks of this module for the message type `M` whose model this
    /// is, with `state_schema` the schemars JSON Schema of the app's state (the stripped one
    /// agents see). Returns every error found, in variant order (examples, then the route
    /// gate, then the `@validates` of the fields); empty when all pass.
    pub fn startup_errors<M: DeserializeOwned>(&self, state_schema: &Value) -> Vec<SchemaError> {
        self.startup_check::<M>(state_schema).0
    }

    /// [`MsgModel::startup_errors`], with the notes of the type checks that are not errors:
    /// reads through a nullable value without a guard (warnings), and the expressions that
    /// read a part of a schema the checker does not understand (dynamic, not checked below).
    pub fn startup_check<M: DeserializeOwned>(
        &self,
        state_schema: &Value,
    ) -> (Vec<SchemaError>, Vec<StartupNote>) {
        let mut errors = Vec::new();
        let mut notes = Vec::new();
        for variant in &self.variants {
            check_examples::<M>(variant, &mut errors);
            if let Some(gate) = &variant.annotations.route_gate {
                let at = Site {
                    variant,
                    field: None,
                    tag: Tag::RouteGated,
                };
                at.record(check_gate(gate, state_schema), &mut errors, &mut notes);
            }
            check_fields(variant, &variant.payload, "", &mut errors, &mut notes);
        }
        (errors, notes)
    }
}

/// What the start-up type checks found that is not an error (the runtime logs them once at
/// start-up).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartupNote {
    /// A read that may fail at run time (a field read through a value that may be null or
    /// absent, without `has(…)` or a `null` comparison guarding it); the gate or check
    /// then stays closed. Logged at WARN.
    Warning {
        /// The variant's wire name.
        variant: String,
        /// What may fail, and how to guard it.
        text: String,
    },
    /// An expression reads `path` through a part of the schema the checker does not
    /// understand (a `serde_json::Value`, a custom `JsonSchema`): nothing below it is
    /// checked. Logged at INFO.
    Dynamic {
        /// The variant's wire name.
        variant: String,
        /// The tag whose expression it is.
        tag: Tag,
        /// The path, as the expression writes it (`state.extra`).
        path: String,
    },
}

impl std::fmt::Display for StartupNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartupNote::Warning { variant, text } => write!(f, "variant \"{variant}\": {text}"),
            StartupNote::Dynamic { variant, tag, path } => {
                write!(
                    f,
                    "variant \"{variant}\": `{tag}` reads `{path}` (not checked below)"
                )
            }
        }
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
    /// Adds what the type checker found in this site's expression: errors, warnings and
    /// dynamic paths.
    fn record(&self, report: Report, errors: &mut Vec<SchemaError>, notes: &mut Vec<StartupNote>) {
        let on = |text: String| match &self.field {
            Some(field) => format!("on `{field}`: {text}"),
            None => text,
        };
        for finding in report.errors {
            errors.push(self.error(on(finding.problem), finding.fix));
        }
        for finding in report.warnings {
            notes.push(StartupNote::Warning {
                variant: self.variant.wire_name.clone(),
                text: format!(
                    "`{}` {}\nhelp: {}",
                    self.tag,
                    on(finding.problem),
                    finding.fix
                ),
            });
        }
        for path in report.dynamic {
            notes.push(StartupNote::Dynamic {
                variant: self.variant.wire_name.clone(),
                tag: self.tag,
                path,
            });
        }
    }

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

/// Every `@validates` in `object` (nested objects, arrays and unions included) passes the
/// CEL checks and type-checks against its field's type; `prefix` is the path of `object`
/// in the payload (`""` or `limits.`).
fn check_fields(
    variant: &VariantModel,
    object: &ObjectModel,
    prefix: &str,
    errors: &mut Vec<SchemaError>,
    notes: &mut Vec<StartupNote>,
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
                at.record(check_validates(src, &field.ty), errors, notes);
            }
        }
        for nested in objects_in(field) {
            check_fields(variant, nested, &format!("{path}."), errors, notes);
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
