//! The fixture message enums of the `list_actions` acceptance list: each derives `AgentMsg`
//! with the tags one case needs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tea_agent_derive::AgentMsg;

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Plain {
    Save,
    /// @humanOnly @intent("Delete the workspace")
    Delete,
    /// @intent("Rename the workspace") @requiresConfirm @warning("costs money")
    /// @example({"type":"rename","name":"x"}) @emits("cloud/save", "analytics/track")
    Rename {
        name: String,
    },
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Shop {
    AddItem {
        id: String,
        qty: u32,
    },
    Reset,
    Navigate {
        to: String,
    },
    /// @humanOnly @intent("click button")
    ClickButton,
}

#[derive(JsonSchema, Serialize, Deserialize)]
pub(crate) struct Alternative {
    pub(crate) id: String,
    pub(crate) title: String,
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum Matrix {
    /// @agentOnly @intent("Add criteria")
    #[serde(rename = "Matrix/AddCriteria")]
    AddCriteria { criteria: Value },
    /// @alwaysAffordable
    #[serde(rename = "Matrix/AddAlternatives")]
    AddAlternatives {
        alternatives: Option<Vec<Alternative>>,
    },
    /// @intent("Share the matrix")
    #[serde(rename = "Matrix/Share")]
    Share,
    #[serde(rename = "Matrix/Rename")]
    Rename { title: String },
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Gated {
    /// @routeGated("state.matrixState.kind == 'loaded'", "load a matrix first")
    WithReason,
    /// @routeGated("state.matrixState.kind == 'loaded'")
    WithoutReason,
    /// @routeGated("state.deeply.nested.value == 1")
    Deep,
    /// @routeGated("state.count")
    NonBoolean,
    /// @agentOnly @intent("Score") @routeGated("state.matrixState.kind == 'loaded'", "load a matrix first")
    Score {
        weight: f64,
    },
    Open,
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Category {
    A,
    B,
}

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum Format {
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
pub(crate) struct Cell {
    pub(crate) criterion_id: String,
    pub(crate) alternative_id: String,
    pub(crate) value: f64,
    /// @should("Cite where the value came from.")
    pub(crate) meta: Option<String>,
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Hinted {
    /// @alwaysAffordable
    Bulk {
        title: String,
        count: i32,
        published: bool,
        category: Category,
    },
    /// @alwaysAffordable
    Save {
        required: String,
        /// @should("say why")
        why: Option<String>,
        note: Option<String>,
    },
    Weigh {
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
        /// @should("Cite the source.")
        /// @validates("size(v) > 0")
        url: Option<String>,
    },
    /// @agentOnly
    #[serde(rename = "Cell/SetFormat")]
    SetFormat { format: Format },
    SetCells {
        /// @should("Each entry: {criterionId, alternativeId, value, meta?}.")
        cells: Vec<Cell>,
    },
}
