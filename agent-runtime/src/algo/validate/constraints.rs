//! Constraint checks of one node (`docs/semantics.md` §2.4) on top of a compiled `jsonschema`
//! validator.
//!
//! The node's keywords ([`TypeNode::constraint_schema`]) are compiled once, with draft 2020-12
//! and format assertion on. Only the formats §2.4 lists are kept in the compiled schema; any
//! other `format` (numeric ones such as `int32` never reach a string node; names such as
//! `hostname` may) is dropped, so it is not checked. A value is first tested with the fast
//! `is_valid`; only a failing value is walked for errors, which are mapped to the rows of the
//! §2.4 table, one error per failing keyword, in the table's order. The messages are written
//! from the model's own keyword values, so a limit prints as the schema wrote it.

use std::fmt;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;
use tea_agent_schema::shape::{Constraints, TypeKind, TypeNode};

use super::messages::{number_text, value_text};

/// The formats that are asserted; every other `format` is ignored.
const CHECKED_FORMATS: [&str; 8] = [
    "email",
    "uri",
    "date-time",
    "date",
    "time",
    "uuid",
    "ipv4",
    "ipv6",
];

/// The rows of the §2.4 table, in the table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Row {
    Integer,
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
    MultipleOf,
    MinLength,
    MaxLength,
    Pattern,
    Format,
    MinItems,
    MaxItems,
    UniqueItems,
}

impl Row {
    const ALL: [Row; 13] = [
        Row::Integer,
        Row::Minimum,
        Row::Maximum,
        Row::ExclusiveMinimum,
        Row::ExclusiveMaximum,
        Row::MultipleOf,
        Row::MinLength,
        Row::MaxLength,
        Row::Pattern,
        Row::Format,
        Row::MinItems,
        Row::MaxItems,
        Row::UniqueItems,
    ];

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// The row of a `jsonschema` error kind. Regex engine failures on the input count as a
    /// failed `pattern` (the value could not be shown to match).
    fn of(kind: &ValidationErrorKind) -> Option<Row> {
        Some(match kind {
            ValidationErrorKind::Type { .. } => Row::Integer,
            ValidationErrorKind::Minimum { .. } => Row::Minimum,
            ValidationErrorKind::Maximum { .. } => Row::Maximum,
            ValidationErrorKind::ExclusiveMinimum { .. } => Row::ExclusiveMinimum,
            ValidationErrorKind::ExclusiveMaximum { .. } => Row::ExclusiveMaximum,
            ValidationErrorKind::MultipleOf { .. } => Row::MultipleOf,
            ValidationErrorKind::MinLength { .. } => Row::MinLength,
            ValidationErrorKind::MaxLength { .. } => Row::MaxLength,
            ValidationErrorKind::Pattern { .. }
            | ValidationErrorKind::BacktrackLimitExceeded { .. }
            | ValidationErrorKind::RegexEngineFailure { .. } => Row::Pattern,
            ValidationErrorKind::Format { .. } => Row::Format,
            ValidationErrorKind::MinItems { .. } => Row::MinItems,
            ValidationErrorKind::MaxItems { .. } => Row::MaxItems,
            ValidationErrorKind::UniqueItems => Row::UniqueItems,
            _ => return None,
        })
    }
}

/// The compiled constraint keywords of one node.
pub(crate) struct ConstraintCheck {
    validator: jsonschema::Validator,
    constraints: Constraints,
    /// The format that is asserted (one of [`CHECKED_FORMATS`]), if any.
    format: Option<String>,
}

impl fmt::Debug for ConstraintCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConstraintCheck")
            .field("constraints", &self.constraints)
            .finish_non_exhaustive()
    }
}

impl ConstraintCheck {
    /// Compiles the constraints of `node`. `Ok(None)` when there is nothing to check; `Err`
    /// with `jsonschema`'s message when the keywords do not compile (an invalid `pattern`).
    pub(crate) fn compile(node: &TypeNode) -> Result<Option<ConstraintCheck>, String> {
        let applies = matches!(
            node.kind,
            TypeKind::String | TypeKind::Number { .. } | TypeKind::Array(_)
        );
        if !applies {
            return Ok(None);
        }
        let Some(Value::Object(mut schema)) = node.constraint_schema() else {
            return Ok(None);
        };
        let format = match schema.get("format").and_then(Value::as_str) {
            Some(f) if CHECKED_FORMATS.contains(&f) => Some(f.to_owned()),
            _ => {
                schema.shift_remove("format");
                None
            }
        };
        if schema.is_empty() {
            return Ok(None);
        }
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&Value::Object(schema))
            .map_err(|e| e.to_string())?;
        Ok(Some(ConstraintCheck {
            validator,
            constraints: node.constraints.clone(),
            format,
        }))
    }

    /// Checks `value` (whose JSON type already matches the node) and calls `report` with the
    /// message of each failing keyword, in the order of the §2.4 table.
    pub(crate) fn check(&self, value: &Value, mut report: impl FnMut(String)) {
        if self.validator.is_valid(value) {
            return;
        }
        let mut failed: u16 = 0;
        let mut others: Vec<String> = Vec::new();
        for error in self.validator.iter_errors(value) {
            match Row::of(error.kind()) {
                Some(row) => failed |= row.bit(),
                // Cannot happen with the keywords compiled here; reported rather than lost so
                // that validation stays closed.
                None => others.push(error.to_string()),
            }
        }
        for row in Row::ALL {
            if failed & row.bit() != 0 {
                report(self.message(row, value));
            }
        }
        others.into_iter().for_each(report);
    }

    fn message(&self, row: Row, value: &Value) -> String {
        let c = &self.constraints;
        let limit =
            |n: &Option<serde_json::Number>| n.as_ref().map(number_text).unwrap_or_default();
        let chars = || {
            value
                .as_str()
                .map(|s| s.chars().count())
                .unwrap_or_default()
        };
        let items = || value.as_array().map(Vec::len).unwrap_or_default();
        let count = |n: Option<u64>| n.unwrap_or_default();
        let v = || value_text(value);
        match row {
            Row::Integer => format!("expected an integer, got {}", v()),
            Row::Minimum => format!("must be >= {}, got {}", limit(&c.minimum), v()),
            Row::Maximum => format!("must be <= {}, got {}", limit(&c.maximum), v()),
            Row::ExclusiveMinimum => {
                format!("must be > {}, got {}", limit(&c.exclusive_minimum), v())
            }
            Row::ExclusiveMaximum => {
                format!("must be < {}, got {}", limit(&c.exclusive_maximum), v())
            }
            Row::MultipleOf => {
                format!(
                    "must be a multiple of {}, got {}",
                    limit(&c.multiple_of),
                    v()
                )
            }
            Row::MinLength => format!(
                "must be at least {} characters long, got {}",
                count(c.min_length),
                chars()
            ),
            Row::MaxLength => format!(
                "must be at most {} characters long, got {}",
                count(c.max_length),
                chars()
            ),
            Row::Pattern => format!(
                "must match the pattern {}",
                c.pattern.as_deref().unwrap_or_default()
            ),
            Row::Format => format!(
                "must be a valid {}",
                self.format.as_deref().unwrap_or_default()
            ),
            Row::MinItems => format!(
                "must have at least {} items, got {}",
                count(c.min_items),
                items()
            ),
            Row::MaxItems => format!(
                "must have at most {} items, got {}",
                count(c.max_items),
                items()
            ),
            Row::UniqueItems => "items must be unique".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(kind: TypeKind, constraints: Constraints) -> TypeNode {
        TypeNode {
            kind,
            nullable: false,
            constraints,
        }
    }

    fn errors(check: &ConstraintCheck, value: Value) -> Vec<String> {
        let mut out = Vec::new();
        check.check(&value, |m| out.push(m));
        out
    }

    #[test]
    fn numbers_in_table_order() {
        let c = Constraints {
            minimum: Some(1.into()),
            maximum: Some(10.into()),
            exclusive_minimum: Some(0.into()),
            exclusive_maximum: Some(serde_json::Number::from_f64(10.5).unwrap()),
            multiple_of: Some(2.into()),
            ..Constraints::default()
        };
        let n = node(TypeKind::Number { integer: true }, c);
        let check = ConstraintCheck::compile(&n).unwrap().unwrap();
        assert!(errors(&check, json!(4)).is_empty());
        assert_eq!(
            errors(&check, json!(11)),
            vec![
                "must be <= 10, got 11",
                "must be < 10.5, got 11",
                // 11 is odd
                "must be a multiple of 2, got 11",
            ]
        );
        assert_eq!(
            errors(&check, json!(1.5)),
            vec![
                "expected an integer, got 1.5",
                "must be a multiple of 2, got 1.5",
            ]
        );
        assert_eq!(
            errors(&check, json!(-2.0)),
            vec!["must be >= 1, got -2", "must be > 0, got -2",]
        );
    }

    #[test]
    fn strings() {
        let c = Constraints {
            min_length: Some(3),
            max_length: Some(4),
            pattern: Some("^[a-zé]+$".into()),
            format: Some("email".into()),
            ..Constraints::default()
        };
        let check = ConstraintCheck::compile(&node(TypeKind::String, c))
            .unwrap()
            .unwrap();
        assert_eq!(
            errors(&check, json!("ab")),
            vec![
                "must be at least 3 characters long, got 2",
                "must be a valid email",
            ]
        );
        // Counted in chars, not bytes.
        assert_eq!(errors(&check, json!("éééé")), vec!["must be a valid email"]);
        assert_eq!(
            errors(&check, json!("a@b.c")),
            vec![
                "must be at most 4 characters long, got 5",
                "must match the pattern ^[a-zé]+$",
            ]
        );
    }

    #[test]
    fn only_listed_formats_are_checked() {
        for format in ["hostname", "int32", "regex", "uri-reference", "made-up"] {
            let c = Constraints {
                format: Some(format.into()),
                ..Constraints::default()
            };
            assert!(ConstraintCheck::compile(&node(TypeKind::String, c))
                .unwrap()
                .is_none());
        }
        for (format, bad, good) in [
            ("uri", "not a uri", "https://example.com/x"),
            ("date-time", "2024-13-01T00:00:00Z", "2024-01-01T10:00:00Z"),
            ("date", "2024-02-30", "2024-02-29"),
            ("time", "25:00:00Z", "10:00:00Z"),
            ("uuid", "not-a-uuid", "67e55044-10b1-426f-9247-bb680e5fe0c8"),
            ("ipv4", "256.1.1.1", "10.0.0.1"),
            ("ipv6", "::g", "::1"),
        ] {
            let c = Constraints {
                format: Some(format.into()),
                ..Constraints::default()
            };
            let check = ConstraintCheck::compile(&node(TypeKind::String, c))
                .unwrap()
                .unwrap();
            assert_eq!(
                errors(&check, json!(bad)),
                vec![format!("must be a valid {format}")]
            );
            assert!(errors(&check, json!(good)).is_empty(), "{format} {good}");
        }
    }

    #[test]
    fn arrays() {
        let c = Constraints {
            min_items: Some(2),
            max_items: Some(3),
            unique_items: true,
            ..Constraints::default()
        };
        let n = node(TypeKind::Array(Box::new(TypeNode::unknown())), c);
        let check = ConstraintCheck::compile(&n).unwrap().unwrap();
        assert_eq!(
            errors(&check, json!([1])),
            vec!["must have at least 2 items, got 1"]
        );
        assert_eq!(
            errors(&check, json!([1, 2, 1, 1])),
            vec!["must have at most 3 items, got 4", "items must be unique",]
        );
        assert!(errors(&check, json!([1, 2.5, "1"])).is_empty());
    }

    #[test]
    fn nothing_to_check_and_bad_patterns() {
        assert!(ConstraintCheck::compile(&TypeNode::unknown())
            .unwrap()
            .is_none());
        let plain = node(TypeKind::Number { integer: false }, Constraints::default());
        assert!(ConstraintCheck::compile(&plain).unwrap().is_none());
        let bad = Constraints {
            pattern: Some("(".into()),
            ..Constraints::default()
        };
        assert!(ConstraintCheck::compile(&node(TypeKind::String, bad)).is_err());
    }
}
