//! Building the [`MsgModel`] of a `Msg` enum from its schemars schema and the derive's
//! variant descriptors (`docs/annotations.md` §4.2, §7.3).

use std::borrow::Cow;

use serde_json::Value;

use crate::msg::{AgentMsg, VariantDescriptor};
use crate::shape::error::SchemaError;
use crate::shape::keywords::union_members;
use crate::shape::model::{MsgModel, TypeKind, TypeNode, VariantModel};
use crate::shape::object::Spend;
use crate::shape::resolver::{Resolver, FIELD_BUDGET};

impl MsgModel {
    /// Builds the model of `M` from its schemars schema (default settings: draft 2020-12,
    /// deserialize contract) and `M::variants()`.
    pub fn build<M: AgentMsg>() -> Result<MsgModel, SchemaError> {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<M>();
        MsgModel::from_schema(schema.as_value(), M::variants())
    }

    /// Builds the model from a `Msg` JSON Schema (draft 2020-12 or draft-07 forms) and the
    /// derive's descriptors.
    ///
    /// The root's `oneOf` (or `anyOf`) members are the variants, in order; a root without
    /// either is a single variant. Each must be an object schema whose `type` property is a
    /// string literal (else [`SchemaError::VariantNotObject`]); the literals must equal the
    /// descriptors' wire names in the same order (else [`SchemaError::VariantMismatch`]).
    /// Fields of the variant's own properties take their tags from the descriptor; every other
    /// property's tags are parsed from its schemars doc ([`SchemaError::NestedTag`] when
    /// malformed: the first such error). The CEL checks of those nested `@validates` are
    /// start-up checks ([`MsgModel::startup_errors`]).
    pub fn from_schema(
        root: &Value,
        variants: &[VariantDescriptor],
    ) -> Result<MsgModel, SchemaError> {
        let (model, mut tag_errors) = MsgModel::from_schema_reporting(root, variants)?;
        match tag_errors.is_empty() {
            true => Ok(model),
            false => Err(tag_errors.remove(0)),
        }
    }

    /// [`MsgModel::from_schema`] that goes on past malformed property docs: the model (whose
    /// faulty properties have no tags) and every [`SchemaError::NestedTag`], once per
    /// property. A schema that does not fit the derive is still an error.
    pub(crate) fn from_schema_reporting(
        root: &Value,
        variants: &[VariantDescriptor],
    ) -> Result<(MsgModel, Vec<SchemaError>), SchemaError> {
        let root_src = Cow::Borrowed(root);
        let members =
            union_members(&root_src, "").unwrap_or_else(|| vec![(root_src, String::new())]);
        let mut resolver = Resolver::new(root);

        let mut found = Vec::with_capacity(members.len());
        for (index, (member, pointer)) in members.iter().enumerate() {
            let not_object = || SchemaError::VariantNotObject {
                index,
                variant: variants.get(index).map(|d| d.wire_name.to_owned()),
                pointer: pointer.clone(),
            };
            let mut raw = resolver
                .raw_object(member, pointer, FIELD_BUDGET, Spend::No)
                .ok_or_else(not_object)?;
            let at = raw
                .props
                .iter()
                .position(|p| p.name == "type")
                .ok_or_else(not_object)?;
            let tag = raw.props.remove(at);
            let literal = resolver.resolve(&tag.schema, &tag.pointer, tag.budget)?;
            let wire_name = string_literal(&literal).ok_or_else(not_object)?;
            found.push((wire_name, raw, pointer.clone()));
        }

        let schema_names: Vec<String> = found.iter().map(|(n, _, _)| n.clone()).collect();
        for (i, name) in schema_names.iter().enumerate() {
            if schema_names[..i].contains(name) {
                return Err(SchemaError::DuplicateVariant {
                    wire_name: name.clone(),
                });
            }
        }
        let derive_names: Vec<String> = variants.iter().map(|d| d.wire_name.to_owned()).collect();
        if derive_names != schema_names {
            return Err(SchemaError::VariantMismatch {
                derive: derive_names,
                schema: schema_names,
            });
        }

        let mut out = Vec::with_capacity(found.len());
        for ((wire_name, raw, pointer), descriptor) in found.into_iter().zip(variants) {
            let payload = resolver.object_model(raw, Some(descriptor))?;
            out.push(VariantModel {
                wire_name,
                payload,
                annotations: descriptor.annotations.to_annotations(),
                pointer,
            });
        }
        let model = MsgModel {
            discriminant: "type".to_owned(),
            variants: out,
        };
        Ok((model, resolver.tag_errors))
    }
}

fn string_literal(node: &TypeNode) -> Option<String> {
    match &node.kind {
        TypeKind::Enum(values) => match values.as_slice() {
            [Value::String(s)] => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}
