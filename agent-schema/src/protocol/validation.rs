use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Error and warning codes of payload validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IssueCode {
    /// The value is not an object.
    NotObject,
    /// A required key is missing.
    Missing,
    /// `type` names no variant.
    UnknownVariant,
    /// Wrong primitive type.
    WrongType,
    /// Not one of the enum values.
    NotInEnum,
    /// Not an array.
    NotArray,
    /// A union's discriminant is missing.
    MissingDiscriminant,
    /// A union's discriminant names no branch.
    UnknownDiscriminantValue,
    /// A key that is not in the schema.
    UnexpectedField,
    /// A `@validates` predicate did not return true.
    ValidatesFailed,
    /// A JSON Schema constraint (range, length, pattern, …) failed.
    ConstraintFailed,
    /// Warning: a field of unknown type could not be checked.
    UntypedField,
}

/// One validation error or warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ValidationIssue {
    /// Where (`a`, `a.b`, `items[3]`, `format(kind=range).min`, `""` for the message).
    pub path: String,
    /// What.
    pub code: IssueCode,
    /// Human-readable message.
    pub message: String,
}

/// The result of validating one message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ValidationOutcome {
    /// Errors in traversal order; empty means valid.
    pub errors: Vec<ValidationIssue>,
    /// Warnings in traversal order.
    pub warnings: Vec<ValidationIssue>,
}

impl ValidationOutcome {
    /// True when there is no error.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// The errors as `path: message` joined by `"; "` (the `invalid` detail).
    pub fn detail(&self) -> String {
        self.errors
            .iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The wire form: `{"ok":true}`, plus `errors` / `warnings` when non-empty.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert("ok".into(), self.is_ok().into());
        if !self.errors.is_empty() {
            out.insert(
                "errors".into(),
                serde_json::to_value(&self.errors).unwrap_or_default(),
            );
        }
        if !self.warnings.is_empty() {
            out.insert(
                "warnings".into(),
                serde_json::to_value(&self.warnings).unwrap_or_default(),
            );
        }
        serde_json::Value::Object(out)
    }
}
