//! The validation walk (`docs/semantics.md` §2.2): objects, fields, type checks, constraints,
//! `@validates`, extra keys.
//!
//! The walk follows the compiled model: it only descends into a value where the model has a
//! nested object, array or union, so its depth is bounded by the model's, whatever the value.
//! Paths are kept as a stack of segments and rendered only when an issue is reported.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use tea_agent_schema::protocol::{IssueCode, ValidationIssue, ValidationOutcome};

use super::messages as m;
use super::tree::{KindTree, NodeTree, ObjectTree, UnionTree};
use crate::algo::cel_eval::PredicateCache;

/// One segment of an issue path.
#[derive(Debug, Clone, Copy)]
enum Seg<'a> {
    /// A field or key: `a`, or `prefix.a`.
    Name(&'a str),
    /// An array element: `prefix[i]`.
    Index(usize),
    /// A union branch: `prefix(disc=value)`.
    Branch(&'a str, &'a str),
}

/// The state of one validation.
pub(crate) struct Walk<'a> {
    strict: bool,
    predicates: &'a PredicateCache,
    path: Vec<Seg<'a>>,
    outcome: ValidationOutcome,
    /// The `@validates` sources that could not be evaluated (empty on the normal path).
    unevaluable: Vec<String>,
}

impl<'a> Walk<'a> {
    pub(crate) fn new(strict: bool, predicates: &'a PredicateCache) -> Walk<'a> {
        Walk {
            strict,
            predicates,
            path: Vec::with_capacity(8),
            outcome: ValidationOutcome::default(),
            unevaluable: Vec::new(),
        }
    }

    /// The outcome, and the `@validates` sources that could not be evaluated.
    pub(crate) fn finish(self) -> (ValidationOutcome, Vec<String>) {
        (self.outcome, self.unevaluable)
    }

    /// The current path, plus `last` when given.
    fn render(&self, last: Option<Seg<'_>>) -> String {
        let mut out = String::new();
        for seg in self.path.iter().copied().chain(last) {
            match seg {
                Seg::Name(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
                Seg::Branch(disc, value) => {
                    let _ = write!(out, "({disc}={value})");
                }
            }
        }
        out
    }

    fn error(&mut self, code: IssueCode, message: String) {
        let path = self.render(None);
        self.outcome.errors.push(ValidationIssue {
            path,
            code,
            message,
        });
    }

    /// An error at the current path extended by the key `name`.
    fn error_at(&mut self, name: &str, code: IssueCode, message: String) {
        let path = self.render(Some(Seg::Name(name)));
        self.outcome.errors.push(ValidationIssue {
            path,
            code,
            message,
        });
    }

    /// The object rules: `value`'s fields against `object`, then the extra keys. `skip` is a
    /// key that belongs to the enclosing level (`type` of a message, a union's discriminant).
    pub(crate) fn object(
        &mut self,
        object: &'a ObjectTree,
        value: &'a Map<String, Value>,
        skip: Option<&str>,
    ) {
        for field in &object.fields {
            self.path.push(Seg::Name(&field.name));
            match value.get(&field.name) {
                None => {
                    if !field.optional {
                        self.error(IssueCode::Missing, m::FIELD_MISSING.to_owned());
                    }
                }
                // `null` on a nullable field is an absent `Option`.
                Some(Value::Null) if field.ty.nullable => {}
                Some(present) => {
                    if self.strict && matches!(field.ty.kind, KindTree::Unknown) {
                        let path = self.render(None);
                        self.outcome.warnings.push(ValidationIssue {
                            path,
                            code: IssueCode::UntypedField,
                            message: m::UNTYPED_FIELD.to_owned(),
                        });
                    }
                    let before = self.outcome.errors.len();
                    self.check(&field.ty, present);
                    if let Some(src) = &field.validates {
                        if self.outcome.errors.len() == before {
                            match self.predicates.decide_validates(src, present) {
                                Some(true) => {}
                                Some(false) => {
                                    self.error(IssueCode::ValidatesFailed, m::validates_failed(src))
                                }
                                None => {
                                    self.unevaluable.push(src.clone());
                                    let message = m::validates_unevaluable(src);
                                    self.error(IssueCode::ValidatesFailed, message);
                                }
                            }
                        }
                    }
                }
            }
            self.path.pop();
        }
        if self.strict || object.deny_unknown {
            for key in value.keys() {
                if Some(key.as_str()) == skip || object.has_field(key) {
                    continue;
                }
                let message = m::unexpected_field(key, &object.legal_fields);
                self.error_at(key, IssueCode::UnexpectedField, message);
            }
        }
    }

    /// `check(value, type, path)` at the current path.
    fn check(&mut self, node: &'a NodeTree, value: &'a Value) {
        if value.is_null() && node.nullable {
            return;
        }
        match &node.kind {
            KindTree::Unknown => return,
            KindTree::String if !value.is_string() => {
                return self.error(IssueCode::WrongType, m::wrong_type("string", value));
            }
            KindTree::Number { .. } if !value.is_number() => {
                return self.error(IssueCode::WrongType, m::wrong_type("number", value));
            }
            KindTree::Boolean if !value.is_boolean() => {
                return self.error(IssueCode::WrongType, m::wrong_type("boolean", value));
            }
            KindTree::Enum { values, legal } if !values.iter().any(|v| literal_eq(v, value)) => {
                return self.error(IssueCode::NotInEnum, m::not_in_enum(value, legal));
            }
            KindTree::Object(_) if !value.is_object() => {
                return self.error(IssueCode::NotObject, m::not_object(value));
            }
            KindTree::Union(_) if !value.is_object() => {
                return self.error(IssueCode::NotObject, m::not_union_object(value));
            }
            KindTree::Array(_) if !value.is_array() => {
                return self.error(IssueCode::NotArray, m::not_array(value));
            }
            _ => {}
        }
        // The node's own type check passed: its constraints, then its children.
        let mut constraint_failed = false;
        if let Some(constraints) = &node.constraints {
            constraints.check(value, |message| {
                constraint_failed = true;
                self.error(IssueCode::ConstraintFailed, message)
            });
        }
        // What the constraints cannot see: `5.0`, `-0`, `1e3` and out-of-range integers pass
        // JSON Schema's `integer` but fail serde's i64/u64 (reported when the constraints
        // found nothing, so `1.5` or `-1` for a `u8` keep their usual message).
        if let (
            KindTree::Number {
                integer: Some(integer),
            },
            Value::Number(n),
        ) = (&node.kind, value)
        {
            if !constraint_failed && !integer.accepts(n) {
                return self.error(IssueCode::ConstraintFailed, integer.message(n));
            }
        }
        match (&node.kind, value) {
            (KindTree::Object(object), Value::Object(map)) => self.object(object, map, None),
            (KindTree::Array(element), Value::Array(items)) => {
                if matches!(element.kind, KindTree::Unknown) {
                    return;
                }
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(i));
                    self.check(element, item);
                    self.path.pop();
                }
            }
            (KindTree::Union(union), Value::Object(map)) => self.union(union, map),
            _ => {}
        }
    }

    fn union(&mut self, union: &'a UnionTree, value: &'a Map<String, Value>) {
        let disc = union.discriminant.as_str();
        let Some(Value::String(selected)) = value.get(disc) else {
            let message = m::missing_discriminant(disc, &union.legal);
            return self.error_at(disc, IssueCode::MissingDiscriminant, message);
        };
        let Some((branch_value, branch)) = union.branch(selected) else {
            let message = m::unknown_discriminant(selected, disc, &union.legal);
            return self.error_at(disc, IssueCode::UnknownDiscriminantValue, message);
        };
        self.path.push(Seg::Branch(disc, branch_value));
        self.object(branch, value, Some(disc));
        self.path.pop();
    }
}

/// Enum membership: strings by equality, numbers by numeric value, booleans by equality.
fn literal_eq(legal: &Value, value: &Value) -> bool {
    match (legal, value) {
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                x == y
            } else if a.is_f64() || b.is_f64() {
                a.as_f64() == b.as_f64()
            } else {
                // One is a negative i64, the other a u64 beyond i64.
                false
            }
        }
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::literal_eq;
    use serde_json::json;

    #[test]
    fn enum_literals() {
        assert!(literal_eq(&json!(4), &json!(4.0)));
        assert!(literal_eq(&json!(4.0), &json!(4)));
        assert!(literal_eq(&json!(0.5), &json!(0.5)));
        assert!(!literal_eq(&json!(4), &json!("4")));
        assert!(!literal_eq(&json!(-1), &json!(u64::MAX)));
        assert!(literal_eq(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(literal_eq(&json!("a"), &json!("a")));
        assert!(!literal_eq(&json!(true), &json!(1)));
        assert!(literal_eq(&json!(false), &json!(false)));
    }
}
