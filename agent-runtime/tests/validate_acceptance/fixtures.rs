//! The fixture message enums of the payload validation acceptance list: each derives
//! `AgentMsg` with the shapes and tags one case needs.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tea_agent_derive::AgentMsg;

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum Format {
    Exact,
    Range { min: f64, max: f64 },
    Compound { formula: String },
}

pub(crate) fn rating(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"enum": [1, 2, 3, 4, 5]})
}

/// The two fixture variants of §11.2 #2.
#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum CellMsg {
    #[serde(rename = "Cell/SetRating")]
    SetRating {
        #[schemars(schema_with = "rating")]
        value: u8,
    },
    #[serde(rename = "Cell/SetFormat")]
    SetFormat { format: Format },
}

#[derive(JsonSchema, Serialize, Deserialize)]
pub(crate) struct RowData {
    pub(crate) id: String,
    pub(crate) label: String,
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Closed {
    pub(crate) a: i32,
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Msg {
    Create {
        title: String,
        description: Option<String>,
    },
    Count {
        count: i32,
    },
    Untyped {
        payload: Value,
    },
    MaybeUntyped {
        payload: Option<Value>,
    },
    Items {
        items: Vec<f64>,
    },
    Row {
        row: RowData,
    },
    Weigh {
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
    },
    Slug {
        /// @validates("v.matches('^[a-z0-9-]+$')")
        slug: String,
    },
    Check {
        /// @validates("size(v) > 0")
        data: Value,
    },
    Pair {
        a: String,
        b: f64,
    },
    Note {
        note: Option<String>,
        title: String,
    },
    Ranged {
        #[schemars(range(min = 1, max = 10))]
        n: i32,
        /// @validates("size(v) > 100")
        #[schemars(length(min = 3))]
        name: String,
    },
    Nested {
        inner: Closed,
    },
    Wide {
        big: i32,
        small: u8,
    },
}
