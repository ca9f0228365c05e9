//! The message schema: from the schemars JSON Schema of a `Msg` enum to the internal
//! [`MsgModel`] and its compact wire form `MsgSchemaShape` (`docs/annotations.md` §7).
//!
//! # Building
//!
//! [`MsgModel::build::<M>()`](MsgModel::build) generates `M`'s schema with schemars' default
//! settings and calls [`MsgModel::from_schema`], which also accepts hand-made schemas (draft
//! 2020-12 or draft-07 forms) and descriptors. Errors ([`SchemaError`]) are host construction
//! errors: a variant that is not an object, a variant list that differs from the derive's, a
//! malformed tag in a nested property's doc. The CEL of the nested `@validates` sources is
//! checked with the other start-up checks ([`MsgModel::startup_errors`], run through
//! [`crate::startup`]).
//!
//! # What the validator walks
//!
//! - [`MsgModel`]: `discriminant` (always `"type"`) and the [`VariantModel`]s in schema order.
//! - [`VariantModel`]: `wire_name`, `payload` (an [`ObjectModel`]: the message without its
//!   `type`), `annotations`.
//! - [`ObjectModel`]: `fields` in schema order and `deny_unknown`
//!   (`additionalProperties: false`, i.e. `#[serde(deny_unknown_fields)]`).
//! - [`FieldModel`]: `name`, `optional` (absent from `required`, or nullable), `hint`,
//!   `validates` (CEL source, `v` bound to the value), `ty`, plus the property's JSON `pointer`.
//! - [`TypeNode`]: `kind` ([`TypeKind`]), `nullable` (`null` is accepted: `Option<T>`), and
//!   `constraints` ([`Constraints`], set only on string, number and array nodes).
//!   [`TypeNode::constraint_schema`] gives those keywords as a small JSON Schema (with
//!   `"type":"integer"` for integer numbers) ready for a `jsonschema` validator; the numbers
//!   keep their JSON form, so a limit prints as it was written (`255`, not `255.0`).
//! - [`TypeKind::Union`]: a [`UnionModel`] with `discriminant` and [`BranchModel`]s (`value`,
//!   `payload` without the discriminant).
//!
//! # Resolution rules
//!
//! Rules R1–R14 of §7.3, with these readings:
//! - `$ref` hops spend budget (5 for a top-level field); nothing else does. At the variant level
//!   no budget is spent. Besides R2's annotation keywords, `$schema`, `$comment`, `$defs` and
//!   `definitions` may sit beside a `$ref` without making it an `allOf`, and so may
//!   `nullable: true` (which marks the node nullable).
//! - Nested properties are resolved depth-first with a nesting guard (see `resolver.rs`): a
//!   schema nested deeper than that resolves to `"unknown"` rather than exhausting the stack.
//! - A `$ref` or an `allOf` with non-annotation siblings is `allOf: [{"$ref"}, members…,
//!   {siblings}]`; every part must be an object and they merge in that order. In such a merge,
//!   a bare `{"type":"object"}` part (the schema of an empty struct) counts as an object with no
//!   properties; as a field type on its own it stays `"unknown"` (R12).
//! - Nullable wrappers (R3) remove the null part; a union's null members are skipped, keeping
//!   the other members' original pointers.

mod build;
mod constraints;
mod error;
mod keywords;
mod model;
mod object;
pub mod pointer;
mod resolve;
mod resolver;
mod startup;
mod typecheck;
mod union;
mod wire;

pub use constraints::Constraints;
pub use error::SchemaError;
pub use model::{
    BranchModel, FieldModel, MsgModel, ObjectModel, TagSource, TypeKind, TypeNode, UnionModel,
    VariantModel,
};
pub use startup::StartupNote;

/// The type errors of the `@validates` expression `source` with `v` bound to a value of type
/// `ty` (the checks of `docs/annotations.md` §7.9), each as (what is wrong, how to fix it).
/// Empty when it type-checks, and for an expression that does not parse or is too deep (the
/// CEL checks of [`crate::tags::cel`] report those). Warnings (reads through a nullable value
/// without a guard) are not errors and are left out: the start-up checks report them.
///
/// `#[derive(AgentMsg)]` calls it on fields whose Rust type it can read (`String`, numbers,
/// `bool`, `Vec<_>`, `Option<_>`), so such a `@validates` fails to compile where it is
/// written.
pub fn validates_type_errors(source: &str, ty: &TypeNode) -> Vec<(String, String)> {
    typecheck::check_validates(source, ty)
        .errors
        .into_iter()
        .map(|finding| (finding.problem, finding.fix))
        .collect()
}

#[cfg(test)]
mod tests;
