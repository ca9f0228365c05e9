//! How the client answers the server's frames from a session hosted in this process: every
//! `rpc` tool of `docs/pairing.md` is the operation it names, answered by the hosted
//! implementation of the operations ([`HostedSession`], the one a server runs for a hosted
//! session) on the client's session, so the app's validation, affordances, confirmations and
//! diff are the same as when it is hosted by a server. The server keeps what only it can do:
//! the description (from the `hello`), the wait on a proposal (the client follows it with
//! `confirm-resolved`), the audit. The client adds the log entries of each `rpc` it answered
//! (`log-append`).

use std::sync::Arc;

use serde_json::{json, Value};
use tea_agent_schema::protocol::{
    CancelRequest, LogEntry, LogKind, MessageRequest, RejectReason, SendResult, StateRequest,
};

use crate::app::App;
use crate::engine::session::progress::DispatchWatch;
use crate::engine::session::{activity, SendError, Session};
use crate::ops::cancel::cancel_own;
use crate::ops::hosted::{Asking, HostedSession};
use crate::ops::{ApiError, Claim, IdempotencyStore, Operation, StoredAnswer};
use axum::http::StatusCode;

/// Why a tool could not answer: `(code, detail)` of an `rpc-error`.
pub(crate) type ToolError = (String, Option<String>);

fn internal(e: impl std::fmt::Display) -> ToolError {
    ("internal".to_string(), Some(e.to_string()))
}

/// The `rpc-error` of an operation's error: its code and detail.
fn failed(e: ApiError) -> ToolError {
    (
        e.code().as_str().to_string(),
        e.detail().map(str::to_string),
    )
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
        "extensions": crate::engine::paired::frames::CLIENT_TAKES,
    })
}

/// The answer of `tool` with `args`, plus the log entries to append. The tool names the
/// operation ([`Operation::from_tool`]); its arguments read as the operation's request.
/// `follow` watches the work a `send_message` starts: its progress, and the server's
/// `rpc-cancel` of it.
pub(crate) async fn answer<A: App>(
    hosted: &HostedSession<A>,
    keys: &IdempotencyStore,
    session: &Session<A>,
    id: &str,
    tool: &str,
    args: Value,
    follow: Arc<DispatchWatch>,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    let op = Operation::from_tool(tool);
    if op == Some(Operation::Message) {
        return send_message(hosted, keys, session, args, follow).await;
    }
    let result = match op {
        Some(Operation::Cancel) => cancel_work(session, args),
        Some(op) => read(hosted, op, args),
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

/// The reads a paired app answers; the server answers the other operations itself. No token
/// of this process asks: the agent is the server's.
fn read<A: App>(hosted: &HostedSession<A>, op: Operation, args: Value) -> Result<Value, ToolError> {
    let ask = Asking {
        spec: op.spec(),
        tid: None,
    };
    match op {
        Operation::State => to_value(hosted.state(ask, request::<StateRequest>(args)?).body),
        Operation::QueryState => to_value(hosted.query_state(ask, request(args)?).body),
        Operation::Actions => to_value(hosted.actions(ask).map_err(failed)?.body),
        Operation::QueryDom => {
            to_value(hosted.query_dom(ask, request(args)?).map_err(failed)?.body)
        }
        Operation::DescribeVisible => to_value(hosted.describe_visible(ask).map_err(failed)?.body),
        Operation::Context => to_value(hosted.context(ask).map_err(failed)?.body),
        Operation::WouldDispatch => to_value(
            hosted
                .would_dispatch(ask, request(args)?)
                .map_err(failed)?
                .body,
        ),
        // The server adds the description from the hello.
        Operation::Observe => to_value(hosted.observed().map_err(failed)?),
        Operation::Describe
        | Operation::RecentActions
        | Operation::Message
        | Operation::ConfirmResult
        | Operation::Wait
        | Operation::Narrate
        | Operation::Pending
        | Operation::Withdraw
        | Operation::Cancel => Err(unknown_tool(op.tool())),
    }
}

/// `cancel_work`: the agent's `/cancel` on this session, where the agent's work is what the
/// messages the server relayed started (they carry no token of this process); the human's
/// and the app's work is refused `forbidden`.
fn cancel_work<A: App>(session: &Session<A>, args: Value) -> Result<Value, ToolError> {
    if session.is_closed() {
        return Err(failed(ApiError::paused()));
    }
    let request: CancelRequest = request(args)?;
    to_value(cancel_own(session, None, &request).map_err(failed)?)
}

/// `send_message`. With an `idempotencyKey` (`docs/pairing.md` §A fleet of replicas): a key
/// answered already (within 10 minutes, the keys' budgets) gets its first answer and is not
/// applied again, so a server may send it again after the replica that relayed it died; a
/// key still running waits for its first answer; a different message under an answered key
/// is `rpc-error` `conflict`.
async fn send_message<A: App>(
    hosted: &HostedSession<A>,
    keys: &IdempotencyStore,
    session: &Session<A>,
    args: Value,
    follow: Arc<DispatchWatch>,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    let request: MessageRequest = match request(args) {
        Ok(r) => r,
        Err(e) => return (Err(e), Vec::new()),
    };
    let Some(key) = request.idempotency_key.clone() else {
        return dispatch(hosted, session, &request, follow).await;
    };
    let msg = request.dispatch.msg.0.clone();
    let conflict = |detail: String| (Err(("conflict".to_string(), Some(detail))), Vec::new());
    match keys.claim(KEYS_OF, &key, &msg, session.now_ms()) {
        Err(over) => (
            Err(("invalid".to_string(), Some(over.to_string()))),
            Vec::new(),
        ),
        Ok(Claim::Shed(_)) => conflict(format!(
            "idempotencyKey {key} was answered, and its answer is no longer kept"
        )),
        Ok(Claim::Repeat(first)) if !first.same_message(&msg) => conflict(format!(
            "idempotencyKey {key} was used with a different message"
        )),
        Ok(Claim::Repeat(first)) => match first.answer().await {
            Some(kept) => (read_kept(&kept), Vec::new()),
            None => (
                Err(internal(
                    "the first call with this idempotencyKey ended without an answer",
                )),
                Vec::new(),
            ),
        },
        Ok(Claim::First(first)) => {
            let (result, entries) = dispatch(hosted, session, &request, follow).await;
            first.answer(kept(&result));
            (result, entries)
        }
    }
}

/// The one "token" of the client's keys: a paired session has one token.
const KEYS_OF: &str = "paired";

/// An rpc's answer as a key keeps it: 200 and the result, or 500 and the error.
fn kept(result: &Result<Value, ToolError>) -> StoredAnswer {
    let (status, body) = match result {
        Ok(v) => (StatusCode::OK, v.to_string()),
        Err((code, detail)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"code": code, "detail": detail}).to_string(),
        ),
    };
    StoredAnswer {
        status,
        body,
        headers: Vec::new(),
    }
}

/// A kept answer read back.
fn read_kept(kept: &StoredAnswer) -> Result<Value, ToolError> {
    let body: Value = serde_json::from_str(&kept.body).map_err(internal)?;
    if kept.status == StatusCode::OK {
        return Ok(body);
    }
    let code = body["code"].as_str().unwrap_or("internal").to_string();
    Err((code, body["detail"].as_str().map(str::to_string)))
}

/// The dispatch of `request`; the entries it logs are the ones appended.
async fn dispatch<A: App>(
    hosted: &HostedSession<A>,
    session: &Session<A>,
    request: &MessageRequest,
    follow: Arc<DispatchWatch>,
) -> (Result<Value, ToolError>, Vec<LogEntry>) {
    let newest = session.recent_log(1, None).first().map(|e| e.id.clone());
    let ask = Asking {
        spec: Operation::Message.spec(),
        tid: None,
    };
    let result = match hosted.send(ask, &request.dispatch, None, follow).await {
        Ok(r) => Ok(r),
        // As `Session::send_message` answers it: the app's own rejection.
        Err(SendError::OverBudget(e)) => Ok(SendResult::Rejected {
            reason: RejectReason::Invalid,
            detail: Some(e.to_string()),
        }),
        Err(SendError::Session(e)) => Err(internal(e)),
    };
    let mut appended: Vec<LogEntry> = session
        .recent_log(16, None)
        .into_iter()
        .take_while(|e| Some(&e.id) != newest.as_ref())
        .collect();
    appended.reverse();
    (result.and_then(to_value), appended)
}
