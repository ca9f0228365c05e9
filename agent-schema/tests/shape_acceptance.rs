//! Acceptance list `docs/annotations.md` §8.4 #52–#62 (schema shape of variants, scalars,
//! objects, arrays, recursion, unions), over real schemars output.
//!
//! The derive's descriptors are written by hand here (wire names), so these tests exercise the
//! schema side alone.

#![allow(dead_code)]

mod common;

use std::collections::HashMap;

use common::{assert_draft07_same, d, model_of, payload, wire_of};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

// #52
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Counter {
    Inc,
    Dec,
    SetCount { value: i32 },
}

#[test]
fn a52_counter() {
    assert_eq!(
        serde_json::to_string(&wire_of::<Counter>(&[d("inc"), d("dec"), d("setCount")])).unwrap(),
        r#"{"discriminant":"type","variants":{"inc":{},"dec":{},"setCount":{"value":"number"}}}"#
    );
}

// #53
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Filter {
    All,
    Active,
    Completed,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FilterDocs {
    /// Everything.
    All,
    /// Not done.
    Active,
    /// Done.
    Completed,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FilterOneDoc {
    All,
    /// Not done.
    Active,
    Completed,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Filters {
    #[serde(rename = "v")]
    V {
        a: Filter,
        b: FilterDocs,
        c: FilterOneDoc,
    },
}

#[test]
fn a53_unit_enums() {
    assert_eq!(
        payload::<Filters>(),
        json!({"a": {"enum": ["all", "active", "completed"]},
            "b": {"enum": ["all", "active", "completed"]},
            "c": {"enum": ["all", "completed", "active"]}})
    );
}

// #54, #55, #56
#[derive(JsonSchema, Serialize, Deserialize)]
enum Level {
    #[serde(rename = "a")]
    A,
    #[serde(rename = "b")]
    B,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Scalars {
    #[serde(rename = "v")]
    V {
        done: bool,
        name: String,
        c: char,
        n: u8,
        x: f32,
        data: Value,
        tags: HashMap<String, i32>,
        pair: (i32, i32),
        note: Option<String>,
        #[serde(default)]
        count: u32,
        level: Option<Level>,
    },
}

#[test]
fn a54_a55_a56_scalars_unknowns_optionals() {
    assert_eq!(
        payload::<Scalars>(),
        json!({"done": "boolean", "name": "string", "c": "string", "n": "number", "x": "number",
            "data": "unknown", "tags": "unknown", "pair": "unknown",
            "note": {"type": "string", "optional": true},
            "count": {"type": "number", "optional": true},
            "level": {"type": {"enum": ["a", "b"]}, "optional": true}})
    );
}

#[test]
fn a54_bounds_are_constraints() {
    let model = model_of::<Scalars>(&[d("v")]).unwrap();
    let v = &model.variants[0];
    let schema = |name: &str| v.payload.field(name).unwrap().ty.constraint_schema();
    assert_eq!(
        schema("n"),
        Some(json!({"type": "integer", "minimum": 0, "maximum": 255}))
    );
    assert_eq!(schema("c"), Some(json!({"minLength": 1, "maxLength": 1})));
    assert_eq!(
        schema("count"),
        Some(json!({"type": "integer", "minimum": 0}))
    );
    assert_eq!(schema("x"), None);
    assert_eq!(schema("pair"), None);
    assert!(v.payload.field("note").unwrap().ty.nullable);
}

// #57
#[derive(JsonSchema, Serialize, Deserialize)]
struct Item {
    id: String,
    qty: u32,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Items {
    #[serde(rename = "v")]
    V {
        item: Item,
        items: Vec<Item>,
        ids: Vec<String>,
        boxed: Box<Item>,
    },
}

#[test]
fn a57_objects_and_arrays() {
    let item = json!({"kind": "object", "shape": {"id": "string", "qty": "number"}});
    assert_eq!(
        payload::<Items>(),
        json!({"item": item, "items": {"kind": "array", "element": item},
            "ids": {"kind": "array", "element": "string"}, "boxed": item})
    );
}

// #58
#[derive(JsonSchema, Serialize, Deserialize)]
struct Node {
    id: String,
    children: Vec<Node>,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Tree {
    #[serde(rename = "v")]
    V { root: Node },
}

#[test]
fn a58_recursion_terminates() {
    let mut node = payload::<Tree>()["root"].clone();
    let mut levels = 0;
    let mut innermost_children = Value::Null;
    while node["kind"] == "object" {
        levels += 1;
        assert_eq!(node["shape"]["id"], "string");
        innermost_children = node["shape"]["children"].clone();
        node = innermost_children["element"].clone();
    }
    assert_eq!(levels, 5);
    assert_eq!(
        innermost_children,
        json!({"kind": "array", "element": "unknown"})
    );
}

// #59, #60
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Format {
    Exact,
    Range { min: f64, max: f64 },
    Compound { formula: String },
}
#[derive(JsonSchema, Serialize, Deserialize)]
struct RangeSpec {
    min: f64,
    max: f64,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictRangeSpec {
    min: f64,
    max: f64,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum NewtypeFormat {
    Exact,
    Range(RangeSpec),
    Compound { formula: String },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum StrictNewtypeFormat {
    Exact,
    Range(StrictRangeSpec),
    Compound { formula: String },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Formats {
    #[serde(rename = "v")]
    V {
        format: Format,
        newtype: NewtypeFormat,
        strict: StrictNewtypeFormat,
    },
}

#[test]
fn a59_a60_discriminated_unions() {
    let p = payload::<Formats>();
    let expected = json!({"kind": "discriminated-union", "discriminant": "kind",
        "variants": {"exact": {}, "range": {"min": "number", "max": "number"},
            "compound": {"formula": "string"}}});
    assert_eq!(
        serde_json::to_string(&p["format"]).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    assert_eq!(p["newtype"], expected);
    assert_eq!(p["strict"], expected);
    let model = model_of::<Formats>(&[d("v")]).unwrap();
    let strict = &model.variants[0].payload.field("strict").unwrap().ty.kind;
    let tea_agent_schema::shape::TypeKind::Union(u) = strict else {
        panic!("not a union: {strict:?}")
    };
    assert!(u.branch("range").unwrap().payload.deny_unknown);
    assert!(!u.branch("exact").unwrap().payload.deny_unknown);
}

// #61
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(untagged)]
enum Untagged {
    A { x: i32 },
    B { y: String },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum WithUntagged {
    #[serde(rename = "v")]
    V { e: Untagged },
}

#[test]
fn a61_untagged_is_unknown() {
    assert_eq!(payload::<WithUntagged>(), json!({"e": "unknown"}));
}

// #62
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Kind {
    Benefit,
    Cost,
}
#[derive(JsonSchema, Serialize, Deserialize)]
struct Meta {
    kind: Kind,
}
#[derive(JsonSchema, Serialize, Deserialize)]
struct Criterion {
    name: String,
    meta: Meta,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Criteria {
    #[serde(rename = "v")]
    V { criteria: Vec<Criterion> },
}

#[test]
fn a62_four_levels() {
    assert_eq!(
        payload::<Criteria>(),
        json!({"criteria": {"kind": "array", "element": {"kind": "object", "shape": {
            "name": "string",
            "meta": {"kind": "object", "shape": {"kind": {"enum": ["benefit", "cost"]}}}}}}})
    );
}

#[test]
fn draft07_output_gives_the_same_shape() {
    assert_draft07_same::<Counter>(&[d("inc"), d("dec"), d("setCount")]);
    assert_draft07_same::<Filters>(&[d("v")]);
    assert_draft07_same::<Scalars>(&[d("v")]);
    assert_draft07_same::<Items>(&[d("v")]);
    assert_draft07_same::<Tree>(&[d("v")]);
    assert_draft07_same::<Formats>(&[d("v")]);
    assert_draft07_same::<Criteria>(&[d("v")]);
}
