//! The describe document (`docs/lap.md` §5.4) and the app-supplied `docs` / `context` records.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compact::compact_schema;
use crate::hash::schema_hash;
use crate::msg::AgentMsg;
use crate::shape::MsgModel;
use crate::startup::{CheckedTypes, StartupErrors};

/// Static documentation an app gives agents (`docs` in the describe document). Absent optional
/// keys are omitted, never `null`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentDocs {
    /// What the app is for.
    pub purpose: String,
    /// A longer overview.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overview: Option<String>,
    /// Things agents should be careful about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cautions: Option<Vec<String>>,
    /// Example tasks or messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<Vec<String>>,
}

/// Per-state narrative for agents (`observe.context`, `describe_context`): always all three
/// keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentContext {
    /// One-paragraph summary of the current state.
    pub summary: String,
    /// Hints about what to do next.
    pub hints: Vec<String>,
    /// Cautions that apply now.
    pub cautions: Vec<String>,
}

/// The fixed `conventions` block of the describe document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conventions {
    /// Always `"TEA"`.
    pub dispatch_model: String,
    /// Always `"runtime-mediated"`.
    pub confirmation_model: String,
    /// `["state","query_dom","describe_visible_content","describe_context"]`.
    pub read_surfaces: Vec<String>,
}

impl Default for Conventions {
    fn default() -> Conventions {
        Conventions {
            dispatch_model: "TEA".into(),
            confirmation_model: "runtime-mediated".into(),
            read_surfaces: [
                "state",
                "query_dom",
                "describe_visible_content",
                "describe_context",
            ]
            .map(String::from)
            .to_vec(),
        }
    }
}

/// The describe document: keys in the order `name`, `version`, `stateSchema`, `messages`,
/// `annotations`, `docs`, `conventions`, `schemaHash`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeDocument {
    /// The app's name.
    pub name: String,
    /// The app's version.
    pub version: String,
    /// The schemars JSON Schema of `State` (the whole root schema, `$defs` included), compacted
    /// by [`compact_schema`].
    pub state_schema: Value,
    /// The `MsgSchemaShape`.
    pub messages: Value,
    /// Every variant's wire name to its full annotation record, in schema order.
    pub annotations: Value,
    /// The app's docs, or `null`.
    pub docs: Option<AgentDocs>,
    /// The fixed conventions block.
    pub conventions: Conventions,
    /// `schemaHash` over `annotations`, `messages` and `stateSchema`.
    pub schema_hash: String,
}

impl DescribeDocument {
    /// Assembles the document from an already built model and the `State` schema (compacted
    /// here).
    pub fn new(
        name: &str,
        version: &str,
        state_schema: Value,
        model: &MsgModel,
        docs: Option<&AgentDocs>,
    ) -> DescribeDocument {
        let state_schema = compact_schema(state_schema);
        let messages = model.to_wire();
        let annotations = model.annotations_json();
        let schema_hash = schema_hash(&annotations, &messages, &state_schema);
        DescribeDocument {
            name: name.to_owned(),
            version: version.to_owned(),
            state_schema,
            messages,
            annotations,
            docs: docs.cloned(),
            conventions: Conventions::default(),
            schema_hash,
        }
    }

    /// The document as JSON (keys in document order).
    pub fn to_value(&self) -> Value {
        // Every part is already JSON or plain strings: serialization cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The document as `/observe` embeds it: without `annotations`, which every action in the
    /// same answer already carries (the full document stays at `/describe`).
    pub fn to_lean_value(&self) -> Value {
        let mut value = self.to_value();
        if let Some(map) = value.as_object_mut() {
            map.shift_remove("annotations");
        }
        value
    }
}

/// The schemars JSON Schema of `S` (default settings), as serialized by serde_json: schemars'
/// `Serialize` puts `$schema`, `title`, `description`, `type` … first and `$defs` last.
pub fn state_schema<S: JsonSchema>() -> Value {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<S>();
    serde_json::to_value(&schema).unwrap_or_else(|_| schema.to_value())
}

/// Builds the describe document of an app whose message enum is `M` and whose state is `S`.
///
/// Fails with every error of the start-up checks that need only these types
/// ([`CheckedTypes::of`]): a schema that does not fit the derive, malformed tags on nested
/// fields or `@redact` tags on the state, examples that do not deserialize or fail
/// `@validates`, expressions that read fields the schema does not have. Host construction
/// runs the same checks, plus two that need the runtime (the constraint keywords its
/// validator compiles, the effect type's `@redact` tags): `tea_agent_runtime::describe(&app)`
/// runs all of them, for a snapshot test that fails exactly when the host's start would.
pub fn describe<M: AgentMsg, S: JsonSchema>(
    name: &str,
    version: &str,
    docs: Option<&AgentDocs>,
) -> Result<DescribeDocument, StartupErrors> {
    let (model, _, state_schema) = CheckedTypes::of::<M, S>().finish()?;
    Ok(DescribeDocument::new(
        name,
        version,
        state_schema,
        &model,
        docs,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn docs_omit_absent_keys() {
        let docs = AgentDocs {
            purpose: "p".into(),
            ..AgentDocs::default()
        };
        assert_eq!(serde_json::to_value(&docs).unwrap(), json!({"purpose":"p"}));
        let docs = AgentDocs {
            purpose: "p".into(),
            overview: Some("o".into()),
            cautions: Some(vec!["c".into()]),
            examples: Some(vec![]),
        };
        assert_eq!(
            serde_json::to_string(&docs).unwrap(),
            r#"{"purpose":"p","overview":"o","cautions":["c"],"examples":[]}"#
        );
        let back: AgentDocs = serde_json::from_str(r#"{"purpose":"x"}"#).unwrap();
        assert_eq!(back.overview, None);
    }

    #[test]
    fn context_has_all_three_keys() {
        assert_eq!(
            serde_json::to_string(&AgentContext::default()).unwrap(),
            r#"{"summary":"","hints":[],"cautions":[]}"#
        );
    }

    #[test]
    fn document_key_order_and_hash() {
        let model = MsgModel {
            discriminant: "type".into(),
            variants: vec![],
        };
        let doc = DescribeDocument::new("app", "1.0.0", json!({}), &model, None);
        assert_eq!(doc.schema_hash, "21999bd7031e77404f526705d82025a3");
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"name":"app","version":"1.0.0","stateSchema":{},"messages":{"discriminant":"type","variants":{}},"annotations":{},"docs":null,"conventions":{"dispatchModel":"TEA","confirmationModel":"runtime-mediated","readSurfaces":["state","query_dom","describe_visible_content","describe_context"]},"schemaHash":"21999bd7031e77404f526705d82025a3"}"#
        );
    }
}
