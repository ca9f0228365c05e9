//! Helpers shared by the schema acceptance tests: hand-written descriptors and model building
//! from real schemars output (default draft 2020-12 settings, or draft-07).

#![allow(dead_code)]

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;
use tea_agent_schema::annotations::StaticAnnotations;
use tea_agent_schema::shape::{MsgModel, SchemaError};
use tea_agent_schema::VariantDescriptor;

/// A descriptor with the default record and no field tags.
pub const fn d(wire_name: &'static str) -> VariantDescriptor {
    VariantDescriptor {
        wire_name,
        annotations: StaticAnnotations::DEFAULT,
        fields: &[],
    }
}

/// The model of `M` from its default schemars schema and `descs`.
pub fn model_of<M: JsonSchema>(descs: &[VariantDescriptor]) -> Result<MsgModel, SchemaError> {
    let schema = SchemaGenerator::default().into_root_schema_for::<M>();
    MsgModel::from_schema(schema.as_value(), descs)
}

/// The compact shape of `M`.
pub fn wire_of<M: JsonSchema>(descs: &[VariantDescriptor]) -> Value {
    model_of::<M>(descs).unwrap().to_wire()
}

/// The wire form of the payload of variant `v` of `M` (which must have the single variant `v`).
pub fn payload<M: JsonSchema>() -> Value {
    wire_of::<M>(&[d("v")])["variants"]["v"].clone()
}

/// The compact shape of `M` built from schemars' draft-07 output.
pub fn draft07_wire<M: JsonSchema>(descs: &[VariantDescriptor]) -> Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<M>();
    MsgModel::from_schema(schema.as_value(), descs)
        .unwrap()
        .to_wire()
}

/// §7.1: draft-07 output (`definitions`, `allOf: [{$ref}]` wrappers) gives the same shape as the
/// default draft 2020-12 output, key order included.
pub fn assert_draft07_same<M: JsonSchema>(descs: &[VariantDescriptor]) {
    assert_eq!(
        serde_json::to_string(&draft07_wire::<M>(descs)).unwrap(),
        serde_json::to_string(&wire_of::<M>(descs)).unwrap()
    );
}
