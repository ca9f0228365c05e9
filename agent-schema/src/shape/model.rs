//! The internal message model (`docs/annotations.md` §7.5): everything the compact wire shape shows,
//! plus what only the validator needs (nullability, integer-ness, constraint keywords,
//! `additionalProperties: false`, the JSON Pointer of every property).

use serde_json::Value;

use crate::annotations::MessageAnnotations;
use crate::shape::Constraints;

/// The model of a whole `Msg` enum: its variants in schema order.
#[derive(Debug, Clone, PartialEq)]
pub struct MsgModel {
    /// The discriminant key of every message; always `"type"`.
    pub discriminant: String,
    /// Every variant of the agent surface, in schema (= declaration) order.
    pub variants: Vec<VariantModel>,
}

impl MsgModel {
    /// The variant with this wire name.
    pub fn variant(&self, wire_name: &str) -> Option<&VariantModel> {
        self.variants.iter().find(|v| v.wire_name == wire_name)
    }

    /// The wire names of all variants, in schema order.
    pub fn variant_names(&self) -> Vec<&str> {
        self.variants.iter().map(|v| v.wire_name.as_str()).collect()
    }
}

/// One variant of the `Msg` enum.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantModel {
    /// The wire name: the value of `type` that selects this variant.
    pub wire_name: String,
    /// The payload (the message without its `type` key): fields in schema order and whether
    /// unknown keys are refused (`#[serde(deny_unknown_fields)]` on the variant or, for a
    /// newtype variant, on its inner struct).
    pub payload: ObjectModel,
    /// The variant's full annotation record (from the derive).
    pub annotations: MessageAnnotations,
    /// JSON Pointer of the variant's member inside the `Msg` schema (for example `/oneOf/2`;
    /// `""` when the root itself is the only variant).
    pub pointer: String,
}

impl VariantModel {
    /// The payload fields, in schema order.
    pub fn fields(&self) -> &[FieldModel] {
        &self.payload.fields
    }
}

/// An object schema with named properties: a variant payload, a nested struct, or one branch of
/// a discriminated union (without its discriminant).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectModel {
    /// The properties, in schema order.
    pub fields: Vec<FieldModel>,
    /// `additionalProperties: false` (`#[serde(deny_unknown_fields)]`): extra keys are errors
    /// even under the lenient policy.
    pub deny_unknown: bool,
}

impl ObjectModel {
    /// The field with this wire name.
    pub fn field(&self, name: &str) -> Option<&FieldModel> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Where the `@should` / `@validates` tags of a field were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagSource {
    /// From `#[derive(AgentMsg)]`: a named field of a struct variant (already checked at
    /// compile time, CEL syntax included).
    Derive,
    /// From the property's own schemars `title`/`description` (`docs/annotations.md` §7.4): nested
    /// struct fields, union branch fields, the fields of a newtype variant's inner struct and
    /// flattened fields. Their `@validates` CEL is checked at host start-up, see
    /// [`MsgModel::startup_errors`](crate::shape::MsgModel::startup_errors).
    SchemaDescription,
}

/// One property of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldModel {
    /// The property's wire name.
    pub name: String,
    /// Not in the object's `required` list, or nullable (`Option<T>`, `#[serde(default)]`).
    pub optional: bool,
    /// The first `@should(…)` argument, if any (shown as `priority: "should"` + `hint`).
    pub hint: Option<String>,
    /// The CEL source of the first `@validates(…)`, if any (`v` is the field's value).
    pub validates: Option<String>,
    /// The resolved type of the property.
    pub ty: TypeNode,
    /// JSON Pointer of the property subschema inside the `Msg` schema, for example
    /// `/$defs/Item/properties/id` or `/oneOf/3/properties/title`.
    pub pointer: String,
    /// Where `hint` and `validates` come from.
    pub tag_source: TagSource,
}

impl FieldModel {
    /// True when the wire shape shows this field in rich form
    /// (`{"type": …, "optional"?, "priority"?, "hint"?, "validates"?}`).
    pub fn is_rich(&self) -> bool {
        self.optional || self.hint.is_some() || self.validates.is_some()
    }
}

/// A resolved type with its nullability and constraints.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeNode {
    /// What kind of value the node accepts.
    pub kind: TypeKind,
    /// The schema also accepts `null` (`Option<T>`): rule R3 of `docs/annotations.md` §7.3.
    pub nullable: bool,
    /// Constraint keywords that apply to this node's type (empty for every other kind).
    pub constraints: Constraints,
}

impl TypeNode {
    /// A node of this kind, not nullable, without constraints.
    pub fn new(kind: TypeKind) -> TypeNode {
        TypeNode {
            kind,
            nullable: false,
            constraints: Constraints::default(),
        }
    }

    /// The `"unknown"` node: accepts anything.
    pub fn unknown() -> TypeNode {
        TypeNode::new(TypeKind::Unknown)
    }

    /// A JSON Schema holding exactly the constraint keywords of this node (plus
    /// `"type": "integer"` for an integer number), in the order of `docs/semantics.md` §2.4, for a
    /// `jsonschema` validator. `None` when the node has nothing to check beyond its kind.
    pub fn constraint_schema(&self) -> Option<Value> {
        let integer = matches!(self.kind, TypeKind::Number { integer: true });
        self.constraints.to_json_schema(integer)
    }
}

/// The kind of a [`TypeNode`].
#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    /// Anything (`serde_json::Value`, maps, tuples, untagged enums, exhausted `$ref` budget).
    Unknown,
    /// A JSON string.
    String,
    /// A JSON number; `integer` when the schema says `type: "integer"`.
    Number {
        /// The schema's `type` is `"integer"`.
        integer: bool,
    },
    /// A JSON boolean.
    Boolean,
    /// One of these literals: all strings, all numbers, or all booleans, in schema order.
    Enum(Vec<Value>),
    /// An object with named properties.
    Object(ObjectModel),
    /// An array whose elements all have this type.
    Array(Box<TypeNode>),
    /// A discriminated union (a nested `#[serde(tag = "…")]` enum).
    Union(UnionModel),
}

/// A discriminated union: objects told apart by a string literal property.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionModel {
    /// The discriminant property name (for example `kind`).
    pub discriminant: String,
    /// The branches, in schema order.
    pub branches: Vec<BranchModel>,
}

impl UnionModel {
    /// The branch selected by this discriminant value.
    pub fn branch(&self, value: &str) -> Option<&BranchModel> {
        self.branches.iter().find(|b| b.value == value)
    }

    /// The discriminant values, in schema order.
    pub fn values(&self) -> Vec<&str> {
        self.branches.iter().map(|b| b.value.as_str()).collect()
    }
}

/// One branch of a [`UnionModel`].
#[derive(Debug, Clone, PartialEq)]
pub struct BranchModel {
    /// The discriminant value selecting this branch.
    pub value: String,
    /// The branch's other properties (the discriminant is not among them).
    pub payload: ObjectModel,
}
