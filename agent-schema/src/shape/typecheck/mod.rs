//! A small type checker for the CEL of `@routeGated` and `@validates`, over the schemas the
//! expressions read (`docs/annotations.md` §7.9).
//!
//! The `cel` crate parses but does not type-check, so this walks its parsed tree with the
//! types of the schema ([`ty::Ty`], read lazily from the state's raw JSON Schema or from a
//! message field's resolved [`TypeNode`]). Variables of comprehensions (`exists`, `all`,
//! `exists_one`, `map`, `filter`) are bound to the item type of the list (or the key type of
//! the map) they range over.
//!
//! It reports, as errors: fields that are not in the schema (with a did-you-mean), `.length`
//! and `.size` on a list or string, fields read from a scalar, a literal compared with an
//! enum that does not have it, comparisons of values of different kinds (a number with a
//! string), ordering, arithmetic and conditions on the wrong kinds (an `int` mixed with a
//! `double` included), `size()` and the string functions on the wrong kind, ranging over a
//! scalar, and functions the runtime's CEL does not have. As warnings: a field read through
//! a value that may be null or absent (an `Option`, a field not `required`) when the
//! expression does not guard it with `has(…)` or a `!= null`/`== null` comparison.
//!
//! A schema it does not understand (`true`, `{}`, a `serde_json::Value` field, a custom
//! schema) is dynamic: nothing below it is checked, and the paths read through it are listed
//! in [`Report::dynamic`].

mod check;
mod ops;
mod ty;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::shape::model::TypeNode;
use crate::tags::cel::{with_parsed, CelProblem};

use check::Checker;
use ty::Ty;

/// One problem: what is wrong (starting with the expression in backquotes) and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// What is wrong.
    pub(crate) problem: String,
    /// How to fix it.
    pub(crate) fix: String,
}

/// What checking one expression found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Report {
    /// Type errors: the expression cannot do what it says.
    pub(crate) errors: Vec<Finding>,
    /// Reads that may fail at run time (a nullable value read without a guard).
    pub(crate) warnings: Vec<Finding>,
    /// Paths read through a part of the schema the checker does not understand.
    pub(crate) dynamic: Vec<String>,
}

/// Checks a route gate: `state` bound to the state's JSON Schema `schema` (its `$ref`s
/// resolve in it). An expression that does not parse or is too deep gives an empty report
/// (those are reported by the syntax checks).
pub(crate) fn check_gate(source: &str, schema: &Value) -> Report {
    check(source, schema, "state", Ty::Schema(schema))
}

/// Checks a `@validates`: `v` bound to the field's model type.
pub(crate) fn check_validates(source: &str, ty: &TypeNode) -> Report {
    check(source, &Value::Null, "v", Ty::Node(ty))
}

/// Checks `source` with `var` bound to `ty` (on a big-stack thread).
fn check<'a>(source: &str, root: &'a Value, var: &str, ty: Ty<'a>) -> Report {
    let outcome: Result<Report, CelProblem> = with_parsed(source, |expr| {
        let mut checker = Checker::new(source, root, var, ty);
        checker.run(expr);
        checker.into_report()
    });
    outcome.unwrap_or_default()
}
