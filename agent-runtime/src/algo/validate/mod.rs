//! Payload validation (`docs/semantics.md` §2).
//!
//! A [`Validator`] is built once per app from its [`MsgModel`]; building compiles the
//! constraint keywords of every node (§2.4) with `jsonschema` and pre-renders the legal-value
//! lists of the messages. [`Validator::validate`] then checks one message:
//!
//! 1. not a JSON object → `not-object` at `""`; `type` not a string → `missing` at `type`;
//!    `type` naming no variant → `unknown-variant` at `type` (each alone);
//! 2. otherwise the payload (the message without `type`) against the variant's fields, all
//!    issues collected in one pass, in traversal order: missing fields, type checks
//!    (`wrong-type`, `not-in-enum`, `not-object`, `not-array`, unions), constraints
//!    (`constraint-failed`), `@validates` (only when the field added no error), extra keys
//!    (`unexpected-field`, strict policy or `#[serde(deny_unknown_fields)]`), and under the
//!    strict policy `untyped-field` warnings.
//!
//! Validation never panics and its recursion follows the model, not the value. The caller
//! deserializes a valid message into `Msg` itself (§2.3).
//!
//! ```
//! use std::sync::Arc;
//! use tea_agent_runtime::cel_eval::PredicateCache;
//! use tea_agent_runtime::config::DispatchPolicy;
//! use tea_agent_runtime::validate::Validator;
//! use tea_agent_schema::{MsgModel, StaticAnnotations, VariantDescriptor};
//! use serde_json::json;
//!
//! let schema = json!({"oneOf": [{
//!     "type": "object",
//!     "properties": {"type": {"const": "inc"}, "by": {"type": "integer", "maximum": 10}},
//!     "required": ["type", "by"],
//! }]});
//! let descriptors = [VariantDescriptor {
//!     wire_name: "inc",
//!     annotations: StaticAnnotations::DEFAULT,
//!     fields: &[],
//! }];
//! let model = MsgModel::from_schema(&schema, &descriptors).unwrap();
//! let validator = Validator::new(&model, Arc::new(PredicateCache::new())).unwrap();
//!
//! let ok = validator.validate(&json!({"type": "inc", "by": 2}), DispatchPolicy::Lenient);
//! assert_eq!(ok.to_json(), json!({"ok": true}));
//! let bad = validator.validate(&json!({"type": "inc", "by": 12}), DispatchPolicy::Lenient);
//! assert_eq!(bad.detail(), "by: must be <= 10, got 12");
//! ```

mod constraints;
mod messages;
mod tree;
mod walk;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use tea_agent_schema::protocol::{IssueCode, ValidationIssue, ValidationOutcome};
use tea_agent_schema::startup::StartupError;
use tea_agent_schema::MsgModel;

use crate::algo::cel_eval::PredicateCache;
use crate::config::DispatchPolicy;
use tree::{KindTree, MsgTree, NodeTree, ObjectTree};
use walk::Walk;

/// Why a [`Validator`] could not be built. Its text is that of the [`StartupError`] it
/// becomes at host start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidatorError {
    /// The constraint keywords of a property do not compile (for example an invalid
    /// `pattern`).
    #[error("{}", StartupError::from(self.clone()))]
    Constraint {
        /// JSON Pointer of the property inside the `Msg` schema.
        pointer: String,
        /// `jsonschema`'s message.
        message: String,
    },
}

impl From<ValidatorError> for StartupError {
    fn from(error: ValidatorError) -> StartupError {
        match error {
            ValidatorError::Constraint { pointer, message } => {
                StartupError::Constraint { pointer, message }
            }
        }
    }
}

/// Validates messages against one app's message model (`docs/semantics.md` §2).
pub struct Validator {
    tree: MsgTree,
    predicates: Arc<PredicateCache>,
}

impl fmt::Debug for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validator")
            .field("variants", &self.tree.variants.len())
            .finish_non_exhaustive()
    }
}

impl Validator {
    /// Compiles `model`: one `jsonschema` validator per node with constraint keywords, and the
    /// `@validates` programs into `predicates` (a program that does not compile is remembered
    /// as failing: such a predicate never passes).
    pub fn new(
        model: &MsgModel,
        predicates: Arc<PredicateCache>,
    ) -> Result<Validator, ValidatorError> {
        Validator::reporting(model, predicates).map_err(|mut errors| errors.swap_remove(0))
    }

    /// [`Validator::new`] failing with every property whose constraints do not compile (in
    /// model order), not only the first.
    pub(crate) fn reporting(
        model: &MsgModel,
        predicates: Arc<PredicateCache>,
    ) -> Result<Validator, Vec<ValidatorError>> {
        let tree = MsgTree::build(model)?;
        for object in &tree.variants {
            warm_object(object, &predicates);
        }
        Ok(Validator { tree, predicates })
    }

    /// Validates `msg` under `policy`.
    pub fn validate(&self, msg: &Value, policy: DispatchPolicy) -> ValidationOutcome {
        self.validate_reporting(msg, policy).0
    }

    /// [`Validator::validate`], with the sources of the `@validates` predicates that could not
    /// be evaluated on their values (each also an error of the outcome, saying so): the
    /// caller logs and counts them. Empty, without allocating, on the normal path.
    pub(crate) fn validate_reporting(
        &self,
        msg: &Value,
        policy: DispatchPolicy,
    ) -> (ValidationOutcome, Vec<String>) {
        let Some(map) = msg.as_object() else {
            let outcome = single(
                "",
                IssueCode::NotObject,
                messages::MSG_NOT_OBJECT.to_owned(),
            );
            return (outcome, Vec::new());
        };
        let Some(variant) = map.get("type").and_then(Value::as_str) else {
            let outcome = single(
                "type",
                IssueCode::Missing,
                messages::TYPE_MISSING.to_owned(),
            );
            return (outcome, Vec::new());
        };
        let Some(&index) = self.tree.index.get(variant) else {
            let message = messages::unknown_variant(variant, &self.tree.legal_variants);
            return (
                single("type", IssueCode::UnknownVariant, message),
                Vec::new(),
            );
        };
        let mut walk = Walk::new(policy == DispatchPolicy::Strict, &self.predicates);
        walk.object(&self.tree.variants[index], map, Some("type"));
        walk.finish()
    }
}

/// An outcome with exactly one error.
fn single(path: &str, code: IssueCode, message: String) -> ValidationOutcome {
    ValidationOutcome {
        errors: vec![ValidationIssue {
            path: path.to_owned(),
            code,
            message,
        }],
        warnings: Vec::new(),
    }
}

/// Compiles every `@validates` program of `object` (and below) into the cache.
fn warm_object(object: &ObjectTree, predicates: &PredicateCache) {
    for field in &object.fields {
        if let Some(src) = &field.validates {
            let _ = predicates.program(src);
        }
        warm_node(&field.ty, predicates);
    }
}

fn warm_node(node: &NodeTree, predicates: &PredicateCache) {
    match &node.kind {
        KindTree::Object(object) => warm_object(object, predicates),
        KindTree::Array(element) => warm_node(element, predicates),
        KindTree::Union(union) => {
            for (_, branch) in &union.branches {
                warm_object(branch, predicates);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn a_validation_that_cannot_be_evaluated_says_so() {
        use serde_json::json;
        use tea_agent_schema::{StaticAnnotations, StaticFieldTags, VariantDescriptor};

        let schema = json!({"oneOf": [{
            "type": "object",
            "properties": {"type": {"const": "set"}, "any": true, "n": {"type": "integer"}},
            "required": ["type", "any", "n"],
        }]});
        const FIELDS: &[StaticFieldTags] = &[
            StaticFieldTags {
                wire_name: "any",
                hint: None,
                validates: Some("size(v) > 0"),
            },
            StaticFieldTags {
                wire_name: "n",
                hint: None,
                validates: Some("v > 0"),
            },
        ];
        let descriptors = [VariantDescriptor {
            wire_name: "set",
            annotations: StaticAnnotations::DEFAULT,
            fields: FIELDS,
        }];
        let model = MsgModel::from_schema(&schema, &descriptors).unwrap();
        let validator = Validator::new(&model, Arc::new(PredicateCache::new())).unwrap();
        let lenient = DispatchPolicy::Lenient;

        // The normal path: nothing to report.
        let (ok, failed) =
            validator.validate_reporting(&json!({"type": "set", "any": "x", "n": 1}), lenient);
        assert!(ok.is_ok() && failed.is_empty());
        // A value that decides `false`: the usual message.
        let (outcome, failed) =
            validator.validate_reporting(&json!({"type": "set", "any": [1], "n": 0}), lenient);
        assert!(failed.is_empty());
        assert_eq!(
            outcome.errors[0].message,
            "value violates `@validates(\"v > 0\")`"
        );
        // `size` of a number is an evaluation error: refused, and said so.
        let (outcome, failed) =
            validator.validate_reporting(&json!({"type": "set", "any": 5, "n": 1}), lenient);
        assert_eq!(failed, ["size(v) > 0"]);
        assert_eq!(outcome.errors.len(), 1);
        assert_eq!(outcome.errors[0].code, IssueCode::ValidatesFailed);
        assert_eq!(outcome.errors[0].path, "any");
        assert!(
            outcome.errors[0].message.contains("could not be evaluated"),
            "{}",
            outcome.errors[0].message
        );
    }

    #[test]
    fn validator_is_shareable() {
        assert_send_sync::<Validator>();
        assert_send_sync::<ValidatorError>();
    }
}
