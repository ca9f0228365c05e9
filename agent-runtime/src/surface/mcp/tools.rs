//! The 18 MCP tools (`docs/lap.md` §7.1): `connect_session`, one tool per operation of the
//! operation table (name and description from the table), and `disconnect_session`. Input
//! schemas are the schemars schemas of the request types ([`ToolSpec::input_schema`]), and the argument
//! checks ([`super::args`]) are derived from those schemas.
//!
//! Input schemas are `{"type":"object","properties":…,"required":[…]}` and never forbid extra
//! properties; no tool declares an `outputSchema` (results are unions). Every tool carries its
//! title and the four hints ([`ToolHints`]: the table's, and `connect_session` /
//! `disconnect_session`'s declared here).

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ops::{Operation, ToolHints};
use tea_agent_schema::protocol::EmptyRequest;

/// Which MCP surface serves the tools: only `connect_session` differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Surface {
    /// `/agent/mcp` on the app server: `connect_session {token}`.
    Server,
    /// The `agent-bridge` stdio server: `connect_session {url, token}`.
    #[cfg_attr(not(feature = "bridge"), allow(dead_code))]
    // the bridge's, declared beside the server's
    Bridge,
}

/// What calling a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ToolAction {
    /// Run the operation with the (checked) arguments as its request.
    Run(Operation),
    /// Bind this MCP session to an agent token and run the connect flow.
    Connect,
    /// Drop the binding.
    Disconnect,
}

/// `connect_session` on the app server.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ConnectRequest {
    /// The agent token (agt_…).
    pub token: String,
}

/// `connect_session` in the bridge.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct BridgeConnectRequest {
    /// The app's LAP base URL, e.g. http://127.0.0.1:8787/agent/lap/v1.
    pub url: String,
    /// The agent token (agt_…).
    pub token: String,
}

/// One tool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolSpec {
    /// The tool name.
    pub name: &'static str,
    /// What calling it does.
    pub action: ToolAction,
    /// The description the model reads.
    pub description: &'static str,
    /// Its title and hints.
    pub hints: ToolHints,
    /// The schema of its request type (`SchemaGenerator::subschema_for::<Request>`).
    schema: fn(&mut SchemaGenerator) -> Schema,
}

impl ToolSpec {
    /// The input schema: the request type's schemars schema with subschemas inlined, without
    /// the root `title` and `description` (the tool has its own) and with `properties` always
    /// present.
    pub(crate) fn input_schema(&self) -> JsonObject {
        let mut generator = SchemaSettings::draft2020_12()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .into_generator();
        let mut object = match (self.schema)(&mut generator).to_value() {
            Value::Object(o) => o,
            _ => JsonObject::new(),
        };
        object.remove("title");
        object.remove("description");
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        object
    }

    /// The rmcp tool declaration: title and annotations, no `outputSchema`.
    pub(crate) fn to_tool(self) -> Tool {
        Tool::new(self.name, self.description, Arc::new(self.input_schema()))
            .with_title(self.hints.title)
            .with_annotations(annotations(self.hints.title, &self.hints))
    }
}

/// The MCP annotations of a tool titled `title` with `hints`: every hint set, the title as well
/// (the 2025-03-26 revision reads it there, later ones on the tool).
pub(crate) fn annotations(title: &str, hints: &ToolHints) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .idempotent(hints.idempotent)
        .open_world(hints.open_world)
}

/// `connect_session`: binds the MCP session (not the app), again and again alike.
const CONNECT_HINTS: ToolHints = ToolHints::change("Connect to the app", false, true, false);

const CONNECT_SERVER: ToolSpec = ToolSpec {
    name: "connect_session",
    action: ToolAction::Connect,
    description: "Connect to the app with the agent token the user copied from the app's \
        connect panel (it starts with agt_). Call this first; it answers the app name, state, \
        actions, description and context. Then use observe and send_message.",
    hints: CONNECT_HINTS,
    schema: SchemaGenerator::subschema_for::<ConnectRequest>,
};

const CONNECT_BRIDGE: ToolSpec = ToolSpec {
    name: "connect_session",
    action: ToolAction::Connect,
    description: "Connect to an app: the user gives you its LAP URL (like \
        http://127.0.0.1:8787/agent/lap/v1) and an agent token (agt_…) from the app's connect \
        panel. Call this first; it answers the app name, state, actions, description and \
        context. Then use observe and send_message.",
    hints: CONNECT_HINTS,
    schema: SchemaGenerator::subschema_for::<BridgeConnectRequest>,
};

const DISCONNECT: ToolSpec = ToolSpec {
    name: "disconnect_session",
    action: ToolAction::Disconnect,
    description: "Forget the connection to the app (the token stays valid; the user revokes \
        it in the app). Call connect_session again to reconnect.",
    // Forgets the binding only: the token stays valid.
    hints: ToolHints::change("Disconnect", false, true, false),
    schema: SchemaGenerator::subschema_for::<EmptyRequest>,
};

/// The tool of an operation.
fn operation_tool(op: &Operation) -> ToolSpec {
    let spec = op.spec();
    ToolSpec {
        name: spec.tool,
        action: ToolAction::Run(*op),
        description: spec.description,
        hints: spec.hints,
        schema: spec.request_schema,
    }
}

/// The 19 tools of `surface`, in listing order: `connect_session`, one per operation,
/// `disconnect_session`.
pub(crate) fn tools(surface: Surface) -> impl Iterator<Item = ToolSpec> {
    let connect = match surface {
        Surface::Server => CONNECT_SERVER,
        Surface::Bridge => CONNECT_BRIDGE,
    };
    std::iter::once(connect)
        .chain(Operation::ALL.iter().map(operation_tool))
        .chain(std::iter::once(DISCONNECT))
}

/// The tool called `name` on `surface`.
#[cfg(test)]
pub(crate) fn find(surface: Surface, name: &str) -> Option<ToolSpec> {
    tools(surface).find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nineteen_tools_per_surface_with_unique_names() {
        for surface in [Surface::Server, Surface::Bridge] {
            let names: Vec<&str> = tools(surface).map(|t| t.name).collect();
            assert_eq!(names.len(), 19);
            let mut unique = names.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), 19);
        }
    }

    #[test]
    fn every_operation_is_a_tool_under_its_name() {
        for &op in Operation::ALL {
            let tool = find(Surface::Server, op.tool()).expect("declared");
            assert_eq!(tool.action, ToolAction::Run(op));
        }
        assert_eq!(
            find(Surface::Bridge, "observe").unwrap().action,
            ToolAction::Run(Operation::Observe)
        );
    }

    #[test]
    fn every_tool_has_a_title_and_all_four_hints() {
        for surface in [Surface::Server, Surface::Bridge] {
            for spec in tools(surface) {
                let tool = spec.to_tool();
                let a = tool.annotations.expect("annotations");
                assert_eq!(tool.title.as_deref(), a.title.as_deref(), "{}", spec.name);
                assert!(!spec.hints.title.is_empty(), "{}", spec.name);
                let hints = [
                    a.read_only_hint,
                    a.destructive_hint,
                    a.idempotent_hint,
                    a.open_world_hint,
                ];
                assert!(hints.iter().all(Option::is_some), "{}", spec.name);
                if a.read_only_hint == Some(true) {
                    assert_eq!(a.destructive_hint, Some(false), "{}", spec.name);
                    assert_eq!(a.open_world_hint, Some(false), "{}", spec.name);
                }
            }
        }
    }

    #[test]
    fn connect_session_differs_by_surface() {
        let server = find(Surface::Server, "connect_session").unwrap();
        assert_eq!(server.input_schema()["required"], json!(["token"]));
        let bridge = find(Surface::Bridge, "connect_session").unwrap();
        assert_eq!(bridge.input_schema()["required"], json!(["url", "token"]));
    }

    #[test]
    fn schemas_follow_the_spec() {
        let send = find(Surface::Server, "send_message")
            .unwrap()
            .input_schema();
        assert_eq!(send["type"], "object");
        assert_eq!(send["required"], json!(["msg"]));
        assert_eq!(
            send["properties"]["waitFor"]["enum"],
            json!(["drained", "idle", "none"])
        );
        assert_eq!(send["properties"]["msg"]["required"], json!(["type"]));
        assert!(send.get("additionalProperties").is_none());
        let observe = find(Surface::Server, "observe").unwrap().input_schema();
        assert_eq!(
            Value::Object(observe),
            json!({"type":"object","properties":{}})
        );
        let recent = find(Surface::Server, "describe_recent_actions")
            .unwrap()
            .input_schema();
        assert_eq!(recent["properties"]["n"]["minimum"], 1);
        let tool = find(Surface::Server, "get_state").unwrap().to_tool();
        assert!(tool.output_schema.is_none());
    }

    /// The input schema of a tool is the schemars schema of its request type (root title and
    /// description aside).
    fn schemars_schema<T: JsonSchema>() -> Value {
        let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("$schema");
        o.remove("title");
        o.remove("description");
        o.entry("properties").or_insert_with(|| json!({}));
        v
    }

    #[test]
    fn input_schemas_are_the_request_types_schemas() {
        use tea_agent_schema::protocol::*;
        let expected = [
            ("observe", schemars_schema::<EmptyRequest>()),
            ("describe_app", schemars_schema::<EmptyRequest>()),
            ("get_state", schemars_schema::<StateRequest>()),
            ("query_state", schemars_schema::<QueryStateRequest>()),
            (
                "describe_recent_actions",
                schemars_schema::<RecentActionsRequest>(),
            ),
            ("would_dispatch", schemars_schema::<WouldDispatchRequest>()),
            ("list_actions", schemars_schema::<EmptyRequest>()),
            ("send_message", schemars_schema::<MessageRequest>()),
            (
                "get_confirm_result",
                schemars_schema::<ConfirmResultRequest>(),
            ),
            ("wait_for_change", schemars_schema::<WaitRequest>()),
            ("narrate", schemars_schema::<NarrateRequest>()),
            ("query_dom", schemars_schema::<QueryDomRequest>()),
            (
                "describe_visible_content",
                schemars_schema::<EmptyRequest>(),
            ),
            ("describe_context", schemars_schema::<EmptyRequest>()),
            ("disconnect_session", schemars_schema::<EmptyRequest>()),
        ];
        for (tool, schema) in expected {
            for surface in [Surface::Server, Surface::Bridge] {
                let found = find(surface, tool).unwrap().input_schema();
                assert_eq!(Value::Object(found), schema, "{tool}");
            }
        }
        assert_eq!(
            Value::Object(
                find(Surface::Server, "connect_session")
                    .unwrap()
                    .input_schema()
            ),
            schemars_schema::<ConnectRequest>()
        );
        assert_eq!(
            Value::Object(
                find(Surface::Bridge, "connect_session")
                    .unwrap()
                    .input_schema()
            ),
            schemars_schema::<BridgeConnectRequest>()
        );
    }
}
