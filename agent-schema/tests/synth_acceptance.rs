//! Acceptance list `docs/annotations.md` §8.5 (synthesizer and field hints).

#![allow(dead_code)]

use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_schema::annotations::{StaticAnnotations, StaticFieldTags};
use tea_agent_schema::shape::MsgModel;
use tea_agent_schema::synth::{field_hints, payload_hint, FieldHint};
use tea_agent_schema::VariantDescriptor;

const fn d(wire_name: &'static str, fields: &'static [StaticFieldTags]) -> VariantDescriptor {
    VariantDescriptor {
        wire_name,
        annotations: StaticAnnotations::DEFAULT,
        fields,
    }
}

const fn hint(wire_name: &'static str, h: &'static str) -> StaticFieldTags {
    StaticFieldTags {
        wire_name,
        hint: Some(h),
        validates: None,
    }
}

fn model_of<M: JsonSchema>(descs: &[VariantDescriptor]) -> MsgModel {
    let schema = SchemaGenerator::default().into_root_schema_for::<M>();
    MsgModel::from_schema(schema.as_value(), descs).unwrap()
}

fn hint_of<M: JsonSchema>(desc: VariantDescriptor) -> String {
    let model = model_of::<M>(&[desc]);
    serde_json::to_string(&payload_hint(&model.variants[0])).unwrap()
}

fn hints_of<M: JsonSchema>(desc: VariantDescriptor) -> Value {
    let model = model_of::<M>(&[desc]);
    serde_json::to_value(field_hints(&model.variants[0])).unwrap()
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Category {
    A,
    B,
}

// #69
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Bulk {
    Bulk {
        title: String,
        count: i32,
        published: bool,
        category: Category,
    },
}

#[test]
fn a69_placeholders() {
    assert_eq!(
        hint_of::<Bulk>(d("bulk", &[])),
        r#"{"type":"bulk","title":"","count":0,"published":false,"category":"a"}"#
    );
}

// #70
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Save {
    Save {
        required: String,
        why: Option<String>,
        note: Option<String>,
    },
}
static SAVE_FIELDS: [StaticFieldTags; 1] = [hint("why", "say why")];

#[test]
fn a70_optional_fields_only_with_should() {
    assert_eq!(
        hint_of::<Save>(d("save", &SAVE_FIELDS)),
        r#"{"type":"save","required":"","why":""}"#
    );
}

// #71, #75
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Untyped {
    SetCriteria { criteria: Value },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum BulkSet {
    BulkSet { items: Vec<Value> },
}

#[test]
fn a71_a75_unknowns_are_omitted() {
    assert_eq!(
        hint_of::<Untyped>(d("setCriteria", &[])),
        r#"{"type":"setCriteria"}"#
    );
    assert_eq!(
        hint_of::<BulkSet>(d("bulkSet", &[])),
        r#"{"type":"bulkSet","items":[]}"#
    );
}

// #72
#[derive(JsonSchema, Serialize, Deserialize)]
struct Criterion {
    id: String,
    weight: f64,
    extra: Value,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum AddCriterion {
    AddCriterion { criterion: Criterion },
}

#[test]
fn a72_nested_object() {
    assert_eq!(
        hint_of::<AddCriterion>(d("addCriterion", &[])),
        r#"{"type":"addCriterion","criterion":{"id":"","weight":0}}"#
    );
}

// #73
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Scale {
    Quantity { high_is_better: bool, extra: Value },
    Other,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum SetScale {
    SetScale { scale: Scale },
}

#[test]
fn a73_union_branch_fields() {
    // serde's rename_all on an enum renames variants only; the branch field stays snake_case
    // unless renamed, so check the first branch by its actual wire names.
    let model = model_of::<SetScale>(&[d("setScale", &[])]);
    let hint = payload_hint(&model.variants[0]);
    assert_eq!(
        hint["scale"],
        json!({"kind": "quantity", "high_is_better": false})
    );
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum CamelScale {
    Quantity { high_is_better: bool, extra: Value },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum SetCamelScale {
    SetScale { scale: CamelScale },
}

#[test]
fn a73_union_branch_exact() {
    let model = model_of::<SetCamelScale>(&[d("setScale", &[])]);
    assert_eq!(
        serde_json::to_string(&payload_hint(&model.variants[0])["scale"]).unwrap(),
        r#"{"kind":"quantity","highIsBetter":false}"#
    );
}

// #74, #77
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Format {
    Exact,
    Range {
        min: f64,
        /// @should("Upper bound for normalisation.")
        max: f64,
    },
    Compound {
        formula: String,
    },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum SetFormat {
    SetFormat { format: Format },
}

#[test]
fn a74_first_union_branch() {
    assert_eq!(
        hint_of::<SetFormat>(d("setFormat", &[])),
        r#"{"type":"setFormat","format":{"kind":"exact"}}"#
    );
}

#[test]
fn a77_union_hints() {
    let hints = hints_of::<SetFormat>(d("setFormat", &[]));
    assert_eq!(
        hints,
        json!([
            {"path": "format",
             "hint": "Discriminated union — set `kind` to one of: 'exact', 'range', 'compound'."},
            {"path": "format(kind=range).max", "hint": "Upper bound for normalisation."}
        ])
    );
}

// #76
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cell {
    criterion_id: String,
    alternative_id: String,
    value: f64,
    /// @should("Cite where the value came from.")
    meta: Option<String>,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum SetCells {
    SetCells { cells: Vec<Cell> },
}
static CELLS_FIELDS: [StaticFieldTags; 1] = [hint(
    "cells",
    "Each entry: {criterionId, alternativeId, value, meta?}.",
)];

#[test]
fn a76_array_member_hints() {
    assert_eq!(
        serde_json::to_string(&hints_of::<SetCells>(d("setCells", &CELLS_FIELDS))).unwrap(),
        r#"[{"path":"cells","hint":"Each entry: {criterionId, alternativeId, value, meta?}."},{"path":"cells[].meta","hint":"Cite where the value came from."}]"#
    );
    // Optional `meta` with @should shows up in the payload hint of the element.
    let model = model_of::<SetCells>(&[d("setCells", &CELLS_FIELDS)]);
    assert_eq!(
        payload_hint(&model.variants[0])["cells"],
        json!([{"criterionId": "", "alternativeId": "", "value": 0, "meta": ""}])
    );
}

// #78
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Weigh {
    Weigh { weight: f64, url: Option<String> },
}
static WEIGH_FIELDS: [StaticFieldTags; 2] = [
    StaticFieldTags {
        wire_name: "weight",
        hint: None,
        validates: Some("v >= 0 && v <= 100"),
    },
    StaticFieldTags {
        wire_name: "url",
        hint: Some("Cite the source."),
        validates: Some("size(v) > 0"),
    },
];

#[test]
fn a78_validates_hints() {
    let model = model_of::<Weigh>(&[d("weigh", &WEIGH_FIELDS)]);
    assert_eq!(
        field_hints(&model.variants[0]),
        vec![
            FieldHint {
                path: "weight".into(),
                hint: "validates: v >= 0 && v <= 100".into()
            },
            FieldHint {
                path: "url".into(),
                hint: "Cite the source.".into()
            },
            FieldHint {
                path: "url".into(),
                hint: "validates: size(v) > 0".into()
            },
        ]
    );
}
