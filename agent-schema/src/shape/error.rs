//! Host construction errors of the message schema (`docs/annotations.md` §4.2, §7.3, §7.4).

use std::fmt;

use crate::tags::{Tag, TagError};

/// Why the message model of a `Msg` enum cannot be built, or fails a start-up check. Each of
/// these makes host construction fail; the `Display` text is meant for the app author (one
/// line, plus a `help:` line for [`SchemaError::Startup`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaError {
    /// A member of the `Msg` schema does not come out as an object schema whose `type` property
    /// is a string literal (for example a newtype variant whose inner type is not a struct).
    VariantNotObject {
        /// Position of the member in the schema's `oneOf`/`anyOf` (0-based).
        index: usize,
        /// The derive's wire name for that position, when there is one.
        variant: Option<String>,
        /// JSON Pointer of the member inside the `Msg` schema.
        pointer: String,
    },
    /// Two members of the `Msg` schema carry the same `type` literal.
    DuplicateVariant {
        /// The repeated wire name.
        wire_name: String,
    },
    /// The derive's variant wire names differ (as a list, in order) from the `type` literals of
    /// the `Msg` schema.
    VariantMismatch {
        /// Wire names from `AgentMsg::variants()`, in order.
        derive: Vec<String>,
        /// `type` literals of the schema members, in order.
        schema: Vec<String>,
    },
    /// A malformed `@should`/`@validates` call in the doc (schemars `title`/`description`) of a
    /// nested property.
    NestedTag {
        /// JSON Pointer of the property inside the `Msg` schema.
        pointer: String,
        /// The grammar errors (`docs/annotations.md` §6.1), in source order; offsets are byte
        /// offsets in the property's doc (`title` + `"\n"` + `description`).
        errors: Vec<TagError>,
    },
    /// A start-up check against the real types failed
    /// ([`MsgModel::startup_errors`](crate::shape::MsgModel::startup_errors)): an `@example`
    /// that does not deserialize or fails `@validates`, or an expression that reads a field
    /// path the schema does not have.
    Startup {
        /// The variant's wire name.
        variant: String,
        /// The field whose tag is at fault (a `@validates`, nested ones included), or whose
        /// `@validates` an example fails; `None` for a variant tag.
        field: Option<String>,
        /// The tag at fault.
        tag: Tag,
        /// What is wrong.
        problem: String,
        /// How to fix it.
        fix: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::VariantNotObject {
                index,
                variant,
                pointer,
            } => {
                let name = match variant {
                    Some(v) => format!("variant \"{v}\""),
                    None => format!("variant #{index}"),
                };
                write!(
                    f,
                    "{name} of the Msg schema (at `{pointer}`) does not resolve to an object \
                     with a string literal \"type\" property; a newtype variant must hold a struct"
                )
            }
            SchemaError::DuplicateVariant { wire_name } => write!(
                f,
                "the Msg schema has more than one variant with the wire name \"{wire_name}\""
            ),
            SchemaError::VariantMismatch { derive, schema } => write!(
                f,
                "the variants of #[derive(AgentMsg)] differ from the variants of the Msg JSON \
                 Schema: derive [{}], schema [{}]",
                quoted_list(derive),
                quoted_list(schema)
            ),
            SchemaError::NestedTag { pointer, errors } => {
                let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "agent tag error in the doc of the Msg schema property `{pointer}`: {}",
                    messages.join("; ")
                )
            }
            SchemaError::Startup {
                variant,
                tag,
                problem,
                fix,
                ..
            } => write!(f, "variant \"{variant}\": `{tag}` {problem}\nhelp: {fix}"),
        }
    }
}

impl std::error::Error for SchemaError {}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatch_names_both_lists() {
        let e = SchemaError::VariantMismatch {
            derive: vec!["inc".into(), "dec".into()],
            schema: vec!["inc".into(), "reset".into()],
        };
        assert_eq!(
            e.to_string(),
            "the variants of #[derive(AgentMsg)] differ from the variants of the Msg JSON Schema: \
             derive [\"inc\", \"dec\"], schema [\"inc\", \"reset\"]"
        );
    }

    #[test]
    fn a_variant_error_names_the_pointer() {
        let e = SchemaError::VariantNotObject {
            index: 2,
            variant: None,
            pointer: "/oneOf/2".into(),
        };
        assert!(e
            .to_string()
            .starts_with("variant #2 of the Msg schema (at `/oneOf/2`)"));
    }
}
