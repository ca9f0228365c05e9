//! The schema side together with `#[derive(AgentMsg)]`: the derive's descriptors and the
//! schemars schema meet in `MsgModel::build`.

#![allow(dead_code)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tea_agent_derive::AgentMsg;
use tea_agent_schema::synth::{field_hints, payload_hint};
use tea_agent_schema::{describe, DispatchMode, MsgModel};

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
#[serde(rename_all = "camelCase")]
struct Cell {
    criterion_id: String,
    /// @should("Cite where the value came from.")
    meta: Option<String>,
}

#[derive(JsonSchema, Serialize, Deserialize)]
struct Payload {
    /// @should("the row id")
    id: String,
    qty: u32,
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("increment the counter") @alwaysAffordable
    Inc,
    /// @humanOnly
    Reset,
    /// Saves the document.
    Save {
        required: String,
        /// @should("say why")
        why: Option<String>,
        note: Option<String>,
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
    },
    SetFormat {
        format: Format,
    },
    SetCells {
        /// @should("Each entry: {criterionId, alternativeId, value, meta?}.")
        cells: Vec<Cell>,
    },
    Wrap(Payload),
}

#[derive(JsonSchema, Serialize)]
struct State {
    count: i64,
}

#[test]
fn derived_model_and_shape() {
    let model = MsgModel::build::<Msg>().unwrap();
    assert_eq!(
        model.variant_names(),
        vec!["inc", "reset", "save", "setFormat", "setCells", "wrap"]
    );
    let wire = model.to_wire();
    assert_eq!(wire["variants"]["inc"], json!({}));
    assert_eq!(
        wire["variants"]["save"],
        json!({"required": "string",
            "why": {"type": "string", "optional": true, "priority": "should", "hint": "say why"},
            "note": {"type": "string", "optional": true},
            "weight": {"type": "number", "validates": "v >= 0 && v <= 100"}})
    );
    assert_eq!(
        wire["variants"]["wrap"],
        json!({"id": {"type": "string", "priority": "should", "hint": "the row id"},
            "qty": "number"})
    );
    let inc = model.variant("inc").unwrap();
    assert_eq!(
        inc.annotations.intent.as_deref(),
        Some("increment the counter")
    );
    assert!(inc.annotations.always_affordable);
    assert_eq!(
        model.variant("reset").unwrap().annotations.dispatch_mode,
        DispatchMode::HumanOnly
    );
    assert!(model.variant("save").unwrap().annotations.is_default());
}

#[test]
fn derived_payload_hints_and_field_hints() {
    let model = MsgModel::build::<Msg>().unwrap();
    let save = model.variant("save").unwrap();
    assert_eq!(
        serde_json::to_string(&payload_hint(save)).unwrap(),
        r#"{"type":"save","required":"","why":"","weight":0}"#
    );
    assert_eq!(
        payload_hint(model.variant("setFormat").unwrap()),
        json!({"type": "setFormat", "format": {"kind": "exact"}})
    );
    assert_eq!(
        serde_json::to_value(field_hints(model.variant("setCells").unwrap())).unwrap(),
        json!([
            {"path": "cells", "hint": "Each entry: {criterionId, alternativeId, value, meta?}."},
            {"path": "cells[].meta", "hint": "Cite where the value came from."}
        ])
    );
    assert_eq!(
        serde_json::to_value(field_hints(model.variant("setFormat").unwrap())).unwrap(),
        json!([
            {"path": "format",
             "hint": "Discriminated union — set `kind` to one of: 'exact', 'range', 'compound'."},
            {"path": "format(kind=range).max", "hint": "Upper bound for normalisation."}
        ])
    );
}

#[test]
fn derived_describe_document() {
    let doc = describe::<Msg, State>("counter", "1.2.3", None).unwrap();
    let v = doc.to_value();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "name",
            "version",
            "stateSchema",
            "messages",
            "annotations",
            "docs",
            "conventions",
            "schemaHash"
        ]
    );
    assert_eq!(v["docs"], json!(null));
    let annotations = v["annotations"].as_object().unwrap();
    assert_eq!(annotations.len(), 6);
    assert!(annotations
        .values()
        .all(|a| a.as_object().unwrap().len() == 9));
    assert_eq!(
        doc.schema_hash,
        tea_agent_schema::hash::schema_hash(&v["annotations"], &v["messages"], &v["stateSchema"])
    );
}
