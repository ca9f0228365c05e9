//! Snapshots of the compact shape and of the describe document for a rich `Msg` enum: nested
//! structs, `Option`, `Vec`, a nested tagged enum (discriminated union), renames, a newtype
//! variant, annotations and field tags.
//!
//! `AgentMsg` is implemented by hand (the descriptors a derive would emit), so the snapshot
//! covers the schema side alone.

#![allow(dead_code)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_schema::annotations::{StaticAnnotations, StaticFieldTags};
use tea_agent_schema::{
    describe, AgentDocs, AgentMsg, DispatchMode, MsgModel, VariantDescriptor, VariantKind,
};

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Criterion {
    /// The criterion's name.
    label: String,
    /// @should("Between 0 and 100.")
    /// @validates("v >= 0.0 && v <= 100.0")
    weight: f64,
    tags: Vec<String>,
    scale: Scale,
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Scale {
    Ordinal {
        levels: Vec<String>,
    },
    Range {
        min: f64,
        /// @should("Upper bound.")
        max: f64,
    },
    Flag,
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Priority {
    Low,
    High,
    MustHave,
}

#[derive(JsonSchema, Serialize, Deserialize)]
struct Row {
    id: String,
    qty: u32,
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// Adds a criterion.
    AddCriterion {
        criterion: Criterion,
        priority: Option<Priority>,
        #[serde(rename = "why")]
        reason: Option<String>,
        #[serde(default)]
        position: u16,
    },
    #[serde(rename = "Matrix/Clear")]
    Clear,
    ImportRows(Row),
    SetFormats {
        formats: Vec<Scale>,
    },
}

static ADD_FIELDS: [StaticFieldTags; 1] = [StaticFieldTags {
    wire_name: "why",
    hint: Some("Say why."),
    validates: None,
}];
// Start-up checks deserialize every example as the Msg: this one carries the required field.
static ADD_EXAMPLES: [&str; 1] = [
    r#"{"type":"addCriterion","criterion":{"label":"Cost","weight":50,"tags":[],"scale":{"kind":"flag"}}}"#,
];
static CLEAR_EMITS: [&str; 1] = ["cloud/save"];

static VARIANTS: [VariantDescriptor; 4] = [
    VariantDescriptor {
        wire_name: "addCriterion",
        annotations: StaticAnnotations {
            intent: Some("Add a criterion"),
            always_affordable: true,
            examples: &ADD_EXAMPLES,
            ..StaticAnnotations::DEFAULT
        },
        fields: &ADD_FIELDS,
    },
    VariantDescriptor {
        wire_name: "Matrix/Clear",
        annotations: StaticAnnotations {
            requires_confirm: true,
            warning: Some("Deletes every row."),
            emits: &CLEAR_EMITS,
            route_gate: Some("state.rows > 0"),
            route_gate_reason: Some("nothing to clear"),
            ..StaticAnnotations::DEFAULT
        },
        fields: &[],
    },
    VariantDescriptor {
        wire_name: "importRows",
        annotations: StaticAnnotations {
            dispatch_mode: DispatchMode::HumanOnly,
            ..StaticAnnotations::DEFAULT
        },
        fields: &[],
    },
    VariantDescriptor {
        wire_name: "setFormats",
        annotations: StaticAnnotations::DEFAULT,
        fields: &[],
    },
];

/// The kinds of [`Msg`]'s variants, written by hand as the derive would generate them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MsgKind {
    AddCriterion,
    Clear,
    ImportRows,
    SetFormats,
}

impl VariantKind for MsgKind {
    fn wire_name(self) -> &'static str {
        match self {
            MsgKind::AddCriterion => "addCriterion",
            MsgKind::Clear => "Matrix/Clear",
            MsgKind::ImportRows => "importRows",
            MsgKind::SetFormats => "setFormats",
        }
    }
}

impl AgentMsg for Msg {
    type Kind = MsgKind;

    fn variants() -> &'static [VariantDescriptor] {
        &VARIANTS
    }

    fn kind(&self) -> MsgKind {
        match self {
            Msg::AddCriterion { .. } => MsgKind::AddCriterion,
            Msg::Clear => MsgKind::Clear,
            Msg::ImportRows(_) => MsgKind::ImportRows,
            Msg::SetFormats { .. } => MsgKind::SetFormats,
        }
    }
}

#[derive(JsonSchema, Serialize)]
struct State {
    rows: u32,
    criteria: Vec<Criterion>,
}

#[test]
fn compact_shape() {
    let model = MsgModel::build::<Msg>().unwrap();
    insta::assert_json_snapshot!("compact_shape", model.to_wire());
}

#[test]
fn describe_document() {
    let docs = AgentDocs {
        purpose: "Compare alternatives against weighted criteria.".into(),
        overview: None,
        cautions: Some(vec!["Clearing cannot be undone.".into()]),
        examples: None,
    };
    let doc = describe::<Msg, State>("matrix", "0.1.0", Some(&docs)).unwrap();
    insta::assert_json_snapshot!("describe_document", doc);
    // The hash is deterministic and covers what it should.
    let again = describe::<Msg, State>("other-name", "9.9.9", None).unwrap();
    assert_eq!(doc.schema_hash, again.schema_hash);
}
