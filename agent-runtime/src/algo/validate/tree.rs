//! The validator's own form of the message model, built once: the [`MsgModel`] tree with the
//! constraint validators compiled and the legal-value lists of the messages pre-rendered.

use std::collections::HashMap;

use serde_json::Value;
use tea_agent_schema::shape::{FieldModel, ObjectModel, TypeKind, TypeNode, UnionModel};
use tea_agent_schema::MsgModel;

use super::constraints::ConstraintCheck;
use super::messages::{literal_list, quoted_list};
use super::ValidatorError;

/// The compiled model of a whole `Msg` enum.
#[derive(Debug)]
pub(crate) struct MsgTree {
    /// The variants' payloads, in schema order.
    pub(crate) variants: Vec<ObjectTree>,
    /// Wire name → index in `variants`.
    pub(crate) index: HashMap<String, usize>,
    /// `'A', 'B'`: the variants in schema order (M3).
    pub(crate) legal_variants: String,
}

/// An object: a variant payload, a nested struct or a union branch.
#[derive(Debug)]
pub(crate) struct ObjectTree {
    pub(crate) fields: Vec<FieldTree>,
    /// `additionalProperties: false`.
    pub(crate) deny_unknown: bool,
    /// `'a', 'b'`, or `(none)` (M12 / M12n).
    pub(crate) legal_fields: String,
}

impl ObjectTree {
    /// True when `key` names one of the fields.
    pub(crate) fn has_field(&self, key: &str) -> bool {
        self.fields.iter().any(|f| f.name == key)
    }
}

/// One property of an object.
#[derive(Debug)]
pub(crate) struct FieldTree {
    pub(crate) name: String,
    pub(crate) optional: bool,
    /// The `@validates` CEL source, if any (empty sources are dropped: nothing to evaluate).
    pub(crate) validates: Option<String>,
    pub(crate) ty: NodeTree,
}

/// A type node.
#[derive(Debug)]
pub(crate) struct NodeTree {
    pub(crate) kind: KindTree,
    /// `null` is accepted.
    pub(crate) nullable: bool,
    /// The compiled constraint keywords (string, number and array nodes only).
    pub(crate) constraints: Option<ConstraintCheck>,
}

/// The 64-bit integer type an integer node deserializes into, as far as the schema tells:
/// schemars gives unsigned types `minimum: 0`, so a node with a non-negative minimum is read
/// as `u64`, any other as `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntegerKind {
    Signed,
    Unsigned,
}

impl IntegerKind {
    fn of(constraints: &tea_agent_schema::shape::Constraints) -> IntegerKind {
        let non_negative = constraints
            .minimum
            .as_ref()
            .and_then(serde_json::Number::as_f64)
            .is_some_and(|m| m >= 0.0);
        if non_negative {
            IntegerKind::Unsigned
        } else {
            IntegerKind::Signed
        }
    }

    /// Whether `n` deserializes into this type: an integer literal (no fraction, exponent or
    /// `-0`, which serde reads as floats) in range.
    pub(crate) fn accepts(self, n: &serde_json::Number) -> bool {
        match self {
            IntegerKind::Signed => n.is_i64(),
            IntegerKind::Unsigned => n.is_u64(),
        }
    }

    /// The refusal message for `n`.
    pub(crate) fn message(self, n: &serde_json::Number) -> String {
        let (low, high) = match self {
            IntegerKind::Signed => (i64::MIN.to_string(), i64::MAX.to_string()),
            IntegerKind::Unsigned => ("0".to_owned(), u64::MAX.to_string()),
        };
        if n.is_f64() {
            format!(
                "expected an integer written without a fraction, exponent or minus zero (between {low} and {high}), got {n}"
            )
        } else {
            format!("expected an integer between {low} and {high}, got {n}")
        }
    }
}

/// The kind of a [`NodeTree`].
#[derive(Debug)]
pub(crate) enum KindTree {
    Unknown,
    String,
    /// A number; `integer` when the schema says `type: "integer"`.
    Number {
        integer: Option<IntegerKind>,
    },
    Boolean,
    Enum {
        values: Vec<Value>,
        /// M6's list.
        legal: String,
    },
    Object(ObjectTree),
    Array(Box<NodeTree>),
    Union(UnionTree),
}

/// A discriminated union.
#[derive(Debug)]
pub(crate) struct UnionTree {
    pub(crate) discriminant: String,
    /// `(value, branch payload)` in schema order.
    pub(crate) branches: Vec<(String, ObjectTree)>,
    /// `'a', 'b'` (M10, M11).
    pub(crate) legal: String,
}

impl UnionTree {
    /// The branch selected by `value`.
    pub(crate) fn branch(&self, value: &str) -> Option<&(String, ObjectTree)> {
        self.branches.iter().find(|(v, _)| v == value)
    }
}

impl MsgTree {
    /// Compiles `model`; fails with every property whose constraints do not compile.
    pub(crate) fn build(model: &MsgModel) -> Result<MsgTree, Vec<ValidatorError>> {
        let mut errors = Vec::new();
        let mut variants = Vec::with_capacity(model.variants.len());
        let mut index = HashMap::with_capacity(model.variants.len());
        for variant in &model.variants {
            index
                .entry(variant.wire_name.clone())
                .or_insert(variants.len());
            variants.push(object(&variant.payload, &mut errors));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(MsgTree {
            variants,
            index,
            legal_variants: quoted_list(model.variants.iter().map(|v| v.wire_name.as_str())),
        })
    }
}

/// The tree of `model`; a property whose constraints do not compile is recorded in `errors`
/// (and checked without them: the tree is thrown away).
fn object(model: &ObjectModel, errors: &mut Vec<ValidatorError>) -> ObjectTree {
    let fields = model.fields.iter().map(|f| field(f, errors)).collect();
    let legal_fields = if model.fields.is_empty() {
        "(none)".to_owned()
    } else {
        quoted_list(model.fields.iter().map(|f| f.name.as_str()))
    };
    ObjectTree {
        fields,
        deny_unknown: model.deny_unknown,
        legal_fields,
    }
}

fn field(model: &FieldModel, errors: &mut Vec<ValidatorError>) -> FieldTree {
    FieldTree {
        name: model.name.clone(),
        optional: model.optional,
        validates: model.validates.clone().filter(|s| !s.is_empty()),
        ty: node(&model.ty, &model.pointer, errors),
    }
}

/// `pointer` locates the node's schema inside the `Msg` schema (for error messages only).
fn node(model: &TypeNode, pointer: &str, errors: &mut Vec<ValidatorError>) -> NodeTree {
    let constraints = ConstraintCheck::compile(model).unwrap_or_else(|message| {
        errors.push(ValidatorError::Constraint {
            pointer: pointer.to_owned(),
            message,
        });
        None
    });
    let kind = match &model.kind {
        TypeKind::Unknown => KindTree::Unknown,
        TypeKind::String => KindTree::String,
        TypeKind::Number { integer } => KindTree::Number {
            integer: integer.then(|| IntegerKind::of(&model.constraints)),
        },
        TypeKind::Boolean => KindTree::Boolean,
        TypeKind::Enum(values) => KindTree::Enum {
            legal: literal_list(values),
            values: values.clone(),
        },
        TypeKind::Object(object_model) => KindTree::Object(object(object_model, errors)),
        TypeKind::Array(element) => {
            KindTree::Array(Box::new(node(element, &format!("{pointer}/items"), errors)))
        }
        TypeKind::Union(union_model) => KindTree::Union(union(union_model, errors)),
    };
    NodeTree {
        kind,
        nullable: model.nullable,
        constraints,
    }
}

fn union(model: &UnionModel, errors: &mut Vec<ValidatorError>) -> UnionTree {
    let branches = model
        .branches
        .iter()
        .map(|b| (b.value.clone(), object(&b.payload, errors)))
        .collect();
    UnionTree {
        discriminant: model.discriminant.clone(),
        legal: quoted_list(model.values()),
        branches,
    }
}
