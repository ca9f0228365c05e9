//! The 16 MCP tools (`lap.md` §7.1), declared once: name, what the tool does, a description
//! written for the model (when to use it), and its arguments. The input schemas and the argument
//! checks ([`super::args`]) are both derived from these declarations.
//!
//! Input schemas are `{"type":"object","properties":…,"required":[…]}` and never forbid extra
//! properties; no tool declares an `outputSchema` (results are unions).

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{json, Map, Value};

use crate::lap::Endpoint;

/// Which MCP surface serves the tools: only `connect_session` differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// `/agent/mcp` on the app server: `connect_session {token}`.
    Server,
    /// The `agent-bridge` stdio server: `connect_session {url, token}`.
    Bridge,
}

/// What calling a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolAction {
    /// Forward the (checked) arguments as the JSON body of a LAP call.
    Forward(Endpoint),
    /// Bind this MCP session to an agent token and run the connect flow.
    Connect,
    /// Drop the binding.
    Disconnect,
}

/// The JSON type of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A string.
    String,
    /// `true` or `false`.
    Boolean,
    /// Any JSON number.
    Number,
    /// An integer of at least 1.
    PositiveInteger,
    /// A message: an object with a string `type`, kept whole (all its keys travel).
    Msg,
    /// One of the listed strings.
    OneOf(&'static [&'static str]),
}

/// One declared argument.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    /// The key in the arguments object.
    pub name: &'static str,
    /// Its JSON type.
    pub kind: ArgKind,
    /// Whether the call is refused without it.
    pub required: bool,
    /// What it means, for the model.
    pub description: &'static str,
}

/// One declared tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The tool name.
    pub name: &'static str,
    /// What calling it does.
    pub action: ToolAction,
    /// The description the model reads.
    pub description: &'static str,
    /// Its arguments, in schema order.
    pub args: &'static [Arg],
}

const fn arg(name: &'static str, kind: ArgKind, required: bool, description: &'static str) -> Arg {
    Arg {
        name,
        kind,
        required,
        description,
    }
}

const MSG_ARG: Arg = arg(
    "msg",
    ArgKind::Msg,
    true,
    "The message: {\"type\": <variant>, ...payload fields}. Copy the shape from an action's \
     payloadHint or from the app's examples.",
);

const TIMEOUT_ARG: Arg = arg(
    "timeoutMs",
    ArgKind::Number,
    false,
    "How long to wait, in milliseconds.",
);

const FORWARDED: [ToolSpec; 14] = [
    ToolSpec {
        name: "observe",
        action: ToolAction::Forward(Endpoint::Observe),
        description: "Read everything you need to act, in one call: the current state, the \
            actions available right now (with payload hints), the app description (message \
            schemas, docs, schemaHash) and the per-state context. This is the default read: call \
            it first after connecting and whenever you are unsure what the app shows. The fast \
            path is observe, then send_message with one of the listed actions.",
        args: &[],
    },
    ToolSpec {
        name: "describe_app",
        action: ToolAction::Forward(Endpoint::Describe),
        description: "The app's name, version, message schemas and annotations, docs \
            (purpose, cautions, examples) and schemaHash. Answered from the cached description \
            when one is known; observe already includes it, so call this only to re-read the \
            schemas.",
        args: &[],
    },
    ToolSpec {
        name: "get_state",
        action: ToolAction::Forward(Endpoint::State),
        description: "The current app state, or one slice of it when `path` (a JSON Pointer \
            such as \"/items/0\") is given. Use it to re-check a value after acting; observe \
            gives the state together with the actions.",
        args: &[arg(
            "path",
            ArgKind::String,
            false,
            "JSON Pointer into the state, e.g. \"/count\"; omit for the whole state.",
        )],
    },
    ToolSpec {
        name: "query_state",
        action: ToolAction::Forward(Endpoint::QueryState),
        description: "Look up one slice of the state by a strict RFC 6901 JSON Pointer (`~0` \
            for `~`, `~1` for `/`). Answers {found, value}, or {found:false, detail} when the \
            path does not exist.",
        args: &[arg(
            "path",
            ArgKind::String,
            true,
            "JSON Pointer, e.g. \"/user/name\".",
        )],
    },
    ToolSpec {
        name: "describe_recent_actions",
        action: ToolAction::Forward(Endpoint::RecentActions),
        description: "The activity log, newest first (10 entries by default): what you and \
            the runtime did recently, including dispatches, rejections, confirmations and \
            errors. Use it to recover context after a failure.",
        args: &[
            arg(
                "n",
                ArgKind::PositiveInteger,
                false,
                "How many entries (default 10).",
            ),
            arg(
                "kind",
                ArgKind::String,
                false,
                "Only entries of this kind, e.g. \"dispatched\", \"read\", \"error\".",
            ),
        ],
    },
    ToolSpec {
        name: "would_dispatch",
        action: ToolAction::Forward(Endpoint::WouldDispatch),
        description: "Dry run of a message: validates it and predicts {stateDiff, effects} \
            without applying anything or running effects. Use it before a consequential \
            send_message when you are unsure of the outcome.",
        args: &[MSG_ARG],
    },
    ToolSpec {
        name: "list_actions",
        action: ToolAction::Forward(Endpoint::Actions),
        description: "The actions available right now, each with its variant, intent and a \
            payloadHint to copy into send_message. observe includes the same list.",
        args: &[],
    },
    ToolSpec {
        name: "send_message",
        action: ToolAction::Forward(Endpoint::Message),
        description: "Act on the app: dispatch one message, wait for it to settle and get back \
            what changed (a JSON Patch stateDiff). Answers status \"dispatched\"; \"rejected\" \
            with a reason (invalid payload, human-only, blocked by a gate: read it, fix the \
            message or ask the user) which is an answer, not an error; \"confirmed\" or \
            \"rejected\"/\"user-cancelled\" when the message needed the user's approval; or \
            \"pending-confirmation\" with a confirmId when the user has not decided yet (then \
            poll get_confirm_result). Use narrate to tell the user what you are doing during \
            multi-step work.",
        args: &[
            MSG_ARG,
            arg(
                "reason",
                ArgKind::String,
                false,
                "Why you send it; shown to the user, especially when approval is needed.",
            ),
            arg(
                "waitFor",
                ArgKind::OneOf(&["drained", "idle", "none"]),
                false,
                "\"drained\" (default): wait until the effects settle; \"idle\": until the \
                 queue is idle; \"none\": answer right after the update.",
            ),
            arg(
                "drainQuietMs",
                ArgKind::Number,
                false,
                "Quiet time that counts as settled, in milliseconds (default 100).",
            ),
            arg(
                "timeoutMs",
                ArgKind::Number,
                false,
                "Upper bound of the wait, including a user's approval (default 5000).",
            ),
            arg(
                "includeState",
                ArgKind::Boolean,
                false,
                "Also return the whole state after the message.",
            ),
        ],
    },
    ToolSpec {
        name: "get_confirm_result",
        action: ToolAction::Forward(Endpoint::ConfirmResult),
        description: "Poll a message that is waiting for the user's approval (the confirmId \
            of a \"pending-confirmation\" answer). Answers \"confirmed\" with the new state, \
            \"rejected\" with a reason, or \"still-pending\".",
        args: &[
            arg(
                "confirmId",
                ArgKind::String,
                true,
                "The confirmId from send_message.",
            ),
            TIMEOUT_ARG,
        ],
    },
    ToolSpec {
        name: "wait_for_change",
        action: ToolAction::Forward(Endpoint::Wait),
        description: "Long poll until the state changes (optionally only below `path`) or \
            the timeout passes; answers \"changed\" or \"timeout\" with stateAfter. Use it to \
            wait for the user or for background work instead of polling get_state.",
        args: &[
            arg(
                "path",
                ArgKind::String,
                false,
                "Only changes below this JSON Pointer count (\"\" or starting with \"/\").",
            ),
            TIMEOUT_ARG,
        ],
    },
    ToolSpec {
        name: "narrate",
        action: ToolAction::Forward(Endpoint::Narrate),
        description: "Write a short line of prose into the app's activity feed so the user \
            sees what you are doing and why. Use it at the start of multi-step work and at \
            decision points.",
        args: &[
            arg("text", ArgKind::String, true, "What to tell the user."),
            arg(
                "intent",
                ArgKind::String,
                false,
                "A short label for the entry (default \"Agent narrated\").",
            ),
        ],
    },
    ToolSpec {
        name: "query_dom",
        action: ToolAction::Forward(Endpoint::QueryDom),
        description: "Read a named region of what the app shows (its text and attributes), \
            e.g. a counter or a status line. Use describe_visible_content to learn what is on \
            screen.",
        args: &[
            arg("name", ArgKind::String, true, "The region name."),
            arg(
                "multiple",
                ArgKind::Boolean,
                false,
                "Return every matching element instead of the first.",
            ),
        ],
    },
    ToolSpec {
        name: "describe_visible_content",
        action: ToolAction::Forward(Endpoint::DescribeVisible),
        description: "An outline of what the app currently shows the user (headings, text, \
            buttons with the action they trigger). Use it to talk about the screen the user \
            sees.",
        args: &[],
    },
    ToolSpec {
        name: "describe_context",
        action: ToolAction::Forward(Endpoint::Context),
        description: "The app's narrative for the current state: what the user is doing and \
            hints about sensible next steps. observe includes it.",
        args: &[],
    },
];

const CONNECT_SERVER: ToolSpec = ToolSpec {
    name: "connect_session",
    action: ToolAction::Connect,
    description: "Connect to the app with the agent token the user copied from the app's \
        connect panel (it starts with agt_). Call this first; it answers the app name, state, \
        actions, description and context. Then use observe and send_message.",
    args: &[arg(
        "token",
        ArgKind::String,
        true,
        "The agent token (agt_…).",
    )],
};

const CONNECT_BRIDGE: ToolSpec = ToolSpec {
    name: "connect_session",
    action: ToolAction::Connect,
    description: "Connect to an app: the user gives you its LAP URL (like \
        http://127.0.0.1:8787/agent/lap/v1) and an agent token (agt_…) from the app's connect \
        panel. Call this first; it answers the app name, state, actions, description and \
        context. Then use observe and send_message.",
    args: &[
        arg(
            "url",
            ArgKind::String,
            true,
            "The app's LAP base URL, e.g. http://127.0.0.1:8787/agent/lap/v1.",
        ),
        arg("token", ArgKind::String, true, "The agent token (agt_…)."),
    ],
};

const DISCONNECT: ToolSpec = ToolSpec {
    name: "disconnect_session",
    action: ToolAction::Disconnect,
    description: "Forget the connection to the app (the token stays valid; the user revokes \
        it in the app). Call connect_session again to reconnect.",
    args: &[],
};

/// The 16 tools of `surface`, in listing order: `connect_session`, the 14 forwarded tools,
/// `disconnect_session`.
pub fn tools(surface: Surface) -> impl Iterator<Item = &'static ToolSpec> {
    let connect = match surface {
        Surface::Server => &CONNECT_SERVER,
        Surface::Bridge => &CONNECT_BRIDGE,
    };
    std::iter::once(connect)
        .chain(FORWARDED.iter())
        .chain(std::iter::once(&DISCONNECT))
}

/// The tool called `name` on `surface`.
pub fn find(surface: Surface, name: &str) -> Option<&'static ToolSpec> {
    tools(surface).find(|t| t.name == name)
}

impl ToolSpec {
    /// The input schema: `{"type":"object","properties":…,"required":[…]}` (`required` only
    /// when something is), never forbidding extra properties.
    pub fn input_schema(&self) -> JsonObject {
        let mut properties = Map::new();
        for a in self.args {
            properties.insert(a.name.to_string(), a.schema());
        }
        let required: Vec<&str> = self
            .args
            .iter()
            .filter(|a| a.required)
            .map(|a| a.name)
            .collect();
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), json!(required));
        }
        schema
    }

    /// The rmcp tool declaration (no `outputSchema`).
    pub fn to_tool(&self) -> Tool {
        Tool::new(self.name, self.description, Arc::new(self.input_schema()))
    }
}

impl Arg {
    fn schema(&self) -> Value {
        let mut s = match self.kind {
            ArgKind::String => json!({"type": "string"}),
            ArgKind::Boolean => json!({"type": "boolean"}),
            ArgKind::Number => json!({"type": "number"}),
            ArgKind::PositiveInteger => json!({"type": "integer", "minimum": 1}),
            ArgKind::Msg => json!({
                "type": "object",
                "properties": {"type": {"type": "string", "description": "The message variant."}},
                "required": ["type"]
            }),
            ArgKind::OneOf(values) => json!({"type": "string", "enum": values}),
        };
        s["description"] = json!(self.description);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_tools_per_surface_with_unique_names() {
        for surface in [Surface::Server, Surface::Bridge] {
            let names: Vec<&str> = tools(surface).map(|t| t.name).collect();
            assert_eq!(names.len(), 16);
            let mut unique = names.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), 16);
        }
    }

    #[test]
    fn forwarded_tools_cover_every_endpoint_under_its_tool_name() {
        for endpoint in Endpoint::ALL {
            let spec = find(Surface::Server, endpoint.tool()).expect("declared");
            assert_eq!(spec.action, ToolAction::Forward(endpoint));
        }
        assert_eq!(
            find(Surface::Bridge, "observe").unwrap().action,
            ToolAction::Forward(Endpoint::Observe)
        );
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
}
