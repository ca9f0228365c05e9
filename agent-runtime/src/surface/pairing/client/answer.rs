//! How the client answers the server's frames from a session hosted in this process: every
//! `rpc` tool of `docs/pairing.md` maps onto the session's own reads and `send_message`, so the
//! app's validation, affordances, confirmations and diff are the same as when it is hosted by
//! a server.

use agent_schema::protocol::{
    ActionsResponse, LogEntry, LogKind, MessageRequest, QueryDomRequest, QueryStateRequest,
    SendResult, StateRequest, WouldDispatchRequest,
};
use serde_json::{json, Value};

use crate::app::App;
use crate::engine::session::{activity, Session};
use crate::ops::{dispatch_options, Operation};

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

/// The answer of `tool` with `args`, plus the log entries to append. The tool names the
/// operation ([`Operation::from_tool`]); its arguments read as the operation's request.
pub(crate) async fn answer<A: App>(
    session: &Session<A>,
    id: &str,
    tool: &str,
    args: Value,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    let op = Operation::from_tool(tool);
    if op == Some(Operation::Message) {
        return send_message(session, args).await;
    }
    let result = match op {
        Some(op) => read(session, op, args),
        None => Err(unknown_tool(tool)),
    };
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

fn unknown_tool(tool: &str) -> ToolError {
    (
        "unknown-tool".to_string(),
        Some(format!("no tool named {tool}")),
    )
}

/// `args` as the request of an operation.
fn request<R: serde::de::DeserializeOwned>(args: Value) -> Result<R, ToolError> {
    serde_json::from_value(args).map_err(|e| ("schema-error".to_string(), Some(e.to_string())))
}

/// The reads a paired app answers; the server answers the other operations itself.
fn read<A: App>(session: &Session<A>, op: Operation, args: Value) -> Result<Value, ToolError> {
    match op {
        Operation::State => {
            let req: StateRequest = request(args)?;
            match req.since_seq {
                Some(since) => to_value(session.get_state_since(since)),
                None => to_value(session.get_state(req.path.as_deref())),
            }
        }
        Operation::QueryState => {
            let req: QueryStateRequest = request(args)?;
            to_value(session.query_state(&req.path))
        }
        Operation::Actions => to_value(ActionsResponse {
            actions: session.list_actions().map_err(internal)?,
        }),
        Operation::QueryDom => {
            let req: QueryDomRequest = request(args)?;
            to_value(
                session
                    .query_dom(&req.name, req.multiple)
                    .map_err(internal)?,
            )
        }
        Operation::DescribeVisible => to_value(session.describe_visible().map_err(internal)?),
        Operation::Context => to_value(session.describe_context(None).map_err(internal)?),
        Operation::WouldDispatch => {
            let req: WouldDispatchRequest = request(args)?;
            to_value(session.would_dispatch(&req.msg.0).map_err(internal)?)
        }
        Operation::Observe => {
            let published = session.published();
            let body = json!({
                "state": published.state,
                "actions": session.list_actions().map_err(internal)?,
                "context": session.context().map_err(internal)?,
                "seq": published.seq,
            });
            // The server adds the description from the hello.
            Ok(body)
        }
        Operation::Describe
        | Operation::RecentActions
        | Operation::Message
        | Operation::ConfirmResult
        | Operation::Wait
        | Operation::Narrate
        | Operation::Pending
        | Operation::Withdraw => Err(unknown_tool(op.tool())),
    }
}

/// `send_message`: the session's own gates, validation and confirmation; the entries it logs
/// are the ones appended.
async fn send_message<A: App>(
    session: &Session<A>,
    args: Value,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    let newest = session.recent_log(1, None).first().map(|e| e.id.clone());
    let request: MessageRequest = match request(args) {
        Ok(r) => r,
        Err(e) => return (Err(e), Vec::new()),
    };
    let opts = dispatch_options(&request.dispatch, Operation::Message.spec(), MAX_WAIT_MS);
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
