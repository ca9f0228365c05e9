//! How the client answers the server's frames from a session hosted in this process: every
//! `rpc` tool of `pairing.md` maps onto the session's own reads and `send_message`, so the
//! app's validation, affordances, confirmations and diff are the same as when it is hosted by
//! a server.

use agent_schema::protocol::{ActionsResponse, LogEntry, LogKind, MessageRequest, SendResult};
use serde_json::{json, Value};

use crate::app::App;
use crate::ops::dispatch_options;
use crate::engine::session::{activity, Session};

/// The upper clamp of a dispatch's `timeoutMs` on the client side.
const MAX_WAIT_MS: u64 = 120_000;

/// Why a tool could not answer: `(code, detail)` of an `rpc-error`.
pub(crate) type ToolError = (String, Option<String>);

fn internal(e: impl std::fmt::Display) -> ToolError {
    ("internal".to_string(), Some(e.to_string()))
}

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, ToolError> {
    serde_json::to_value(v).map_err(internal)
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The `hello` of `session`'s app.
pub(crate) fn hello<A: App>(describe: &Value, session: &Session<A>) -> Value {
    let field = |k: &str| describe.get(k).cloned().unwrap_or(Value::Null);
    let sample = session.list_actions().unwrap_or_default();
    json!({
        "t": "hello",
        "appName": field("name"),
        "appVersion": field("version"),
        "msgSchema": field("messages"),
        "stateSchema": field("stateSchema"),
        "affordancesSample": sample,
        "docs": field("docs"),
        "schemaHash": field("schemaHash"),
        "annotations": field("annotations"),
        "lapVersion": crate::engine::paired::frames::LAP_VERSION,
    })
}

/// The answer of `tool` with `args`, plus the log entries to append.
pub(crate) async fn answer<A: App>(
    session: &Session<A>,
    id: &str,
    tool: &str,
    args: Value,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    if tool == "send_message" {
        return send_message(session, args).await;
    }
    let result = read(session, tool, &args);
    let mut entry = activity::entry(
        if result.is_ok() {
            LogKind::Read
        } else {
            LogKind::Error
        },
        session.now_ms(),
    );
    entry.id = id.to_string();
    entry.intent = Some(tool.to_string());
    (result, vec![entry])
}

fn read<A: App>(session: &Session<A>, tool: &str, args: &Value) -> Result<Value, ToolError> {
    match tool {
        "get_state" => to_value(session.get_state(str_arg(args, "path"))),
        "query_state" => to_value(session.query_state(str_arg(args, "path").unwrap_or(""))),
        "list_actions" => to_value(ActionsResponse {
            actions: session.list_actions().map_err(internal)?,
        }),
        "query_dom" => {
            let name = str_arg(args, "name").unwrap_or("");
            let multiple = args.get("multiple").and_then(Value::as_bool) == Some(true);
            to_value(session.query_dom(name, multiple).map_err(internal)?)
        }
        "describe_visible_content" => to_value(session.describe_visible().map_err(internal)?),
        "describe_context" => to_value(session.describe_context(None).map_err(internal)?),
        "would_dispatch" => {
            let msg = args.get("msg").cloned().unwrap_or(Value::Null);
            to_value(session.would_dispatch(&msg).map_err(internal)?)
        }
        "observe" => {
            let body = json!({
                "state": session.state(),
                "actions": session.list_actions().map_err(internal)?,
                "context": session.context().map_err(internal)?,
            });
            // The server adds the description from the hello.
            Ok(body)
        }
        other => Err((
            "unknown-tool".to_string(),
            Some(format!("no tool named {other}")),
        )),
    }
}

/// `send_message`: the session's own gates, validation and confirmation; the entries it logs
/// are the ones appended.
async fn send_message<A: App>(
    session: &Session<A>,
    args: Value,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    let newest = session.recent_log(1, None).first().map(|e| e.id.clone());
    let request: MessageRequest = match serde_json::from_value(args) {
        Ok(r) => r,
        Err(e) => {
            return (
                Err(("schema-error".to_string(), Some(e.to_string()))),
                Vec::new(),
            )
        }
    };
    let opts = dispatch_options(&request.dispatch, MAX_WAIT_MS);
    let reason = request.dispatch.reason.clone();
    let result: Result<SendResult, _> = session
        .send_message(&request.dispatch.msg.0, reason, opts, None)
        .await;
    let mut appended: Vec<LogEntry> = session
        .recent_log(16, None)
        .into_iter()
        .take_while(|e| Some(&e.id) != newest.as_ref())
        .collect();
    appended.reverse();
    (result.map_err(internal).and_then(to_value), appended)
}
