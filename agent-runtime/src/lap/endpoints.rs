//! The LAP endpoints (`lap.md` §5.3): what each one reads from its body, what it answers,
//! and what it logs and audits. The gate around them lives in `gate.rs`.

use agent_schema::protocol::{ConfirmOutcome, LogKind, SendResult, WaitFor};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::body::Fields;
use super::error::ApiError;
use crate::app::App;
use crate::security::AuditEvent;
use crate::session::activity;
use crate::session::{DispatchOptions, Session, SessionError};

/// One LAP endpoint, by its path tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/describe`
    Describe,
    /// `/state`
    State,
    /// `/query-state`
    QueryState,
    /// `/actions`
    Actions,
    /// `/query-dom`
    QueryDom,
    /// `/describe-visible`
    DescribeVisible,
    /// `/context`
    Context,
    /// `/would-dispatch`
    WouldDispatch,
    /// `/observe`
    Observe,
    /// `/recent-actions`
    RecentActions,
    /// `/message`
    Message,
    /// `/confirm-result`
    ConfirmResult,
    /// `/wait`
    Wait,
    /// `/narrate`
    Narrate,
}

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Endpoint; 14] = [
        Endpoint::Describe,
        Endpoint::State,
        Endpoint::QueryState,
        Endpoint::Actions,
        Endpoint::QueryDom,
        Endpoint::DescribeVisible,
        Endpoint::Context,
        Endpoint::WouldDispatch,
        Endpoint::Observe,
        Endpoint::RecentActions,
        Endpoint::Message,
        Endpoint::ConfirmResult,
        Endpoint::Wait,
        Endpoint::Narrate,
    ];

    /// The path tail (`/state`, …).
    pub fn tail(self) -> &'static str {
        match self {
            Endpoint::Describe => "/describe",
            Endpoint::State => "/state",
            Endpoint::QueryState => "/query-state",
            Endpoint::Actions => "/actions",
            Endpoint::QueryDom => "/query-dom",
            Endpoint::DescribeVisible => "/describe-visible",
            Endpoint::Context => "/context",
            Endpoint::WouldDispatch => "/would-dispatch",
            Endpoint::Observe => "/observe",
            Endpoint::RecentActions => "/recent-actions",
            Endpoint::Message => "/message",
            Endpoint::ConfirmResult => "/confirm-result",
            Endpoint::Wait => "/wait",
            Endpoint::Narrate => "/narrate",
        }
    }

    /// The MCP tool that forwards to this endpoint.
    pub fn tool(self) -> &'static str {
        match self {
            Endpoint::Describe => "describe_app",
            Endpoint::State => "get_state",
            Endpoint::QueryState => "query_state",
            Endpoint::Actions => "list_actions",
            Endpoint::QueryDom => "query_dom",
            Endpoint::DescribeVisible => "describe_visible_content",
            Endpoint::Context => "describe_context",
            Endpoint::WouldDispatch => "would_dispatch",
            Endpoint::Observe => "observe",
            Endpoint::RecentActions => "describe_recent_actions",
            Endpoint::Message => "send_message",
            Endpoint::ConfirmResult => "get_confirm_result",
            Endpoint::Wait => "wait_for_change",
            Endpoint::Narrate => "narrate",
        }
    }

    /// The intent of this endpoint's `read` log entry (`None`: the endpoint logs no read).
    fn read_label(self) -> Option<&'static str> {
        Some(match self {
            Endpoint::State => "Read app state",
            Endpoint::QueryState => "Read state slice",
            Endpoint::Actions => "List available actions",
            Endpoint::Context => "Read current context",
            Endpoint::DescribeVisible => "Read visible content",
            Endpoint::QueryDom => "Query DOM",
            Endpoint::Observe => "observe",
            Endpoint::WouldDispatch => "would_dispatch",
            _ => return None,
        })
    }

    /// Whether the endpoint long-polls (touch on arrival, ended by a revoke).
    pub fn long_polls(self) -> bool {
        matches!(
            self,
            Endpoint::Message | Endpoint::Wait | Endpoint::ConfirmResult
        )
    }

    /// The label of an `error` log entry for a failure inside this endpoint.
    pub fn error_label(self) -> &'static str {
        self.read_label().unwrap_or(match self {
            Endpoint::Message => "Send message",
            Endpoint::Narrate => "Agent narrated",
            _ => self.tool(),
        })
    }
}

/// Limits the handlers need from the server options.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Upper clamp of `timeoutMs`.
    pub max_wait_ms: u64,
}

/// A 200 body: a JSON value, or JSON already serialized (hot reads skip a copy).
#[derive(Debug)]
pub enum Answer {
    /// A value to serialize.
    Value(Value),
    /// Serialized JSON.
    Serialized(String),
}

impl From<Value> for Answer {
    fn from(v: Value) -> Self {
        Answer::Value(v)
    }
}

impl Answer {
    /// Serializes `value` straight to JSON text (no intermediate `Value`: on `/message` the
    /// detour through `Value` cost as much as the rest of the handler).
    pub fn serialize(value: &impl serde::Serialize, what: &str) -> Result<Self, ApiError> {
        serde_json::to_string(value)
            .map(Answer::Serialized)
            .map_err(|e| ApiError::internal(format!("{what}: {e}")))
    }

    /// The JSON text.
    pub fn into_json(self) -> String {
        match self {
            Answer::Value(v) => v.to_string(),
            Answer::Serialized(s) => s,
        }
    }
}

/// The `/observe` body, serialized without building a `Value` (the description is embedded
/// from its cached serialization).
#[derive(serde::Serialize)]
struct ObserveBody<'a> {
    state: &'a Value,
    actions: &'a [agent_schema::protocol::Action],
    description: &'a RawValue,
    context: &'a Option<agent_schema::AgentContext>,
}

/// A handler's successful answer plus what the success tail writes.
#[derive(Debug)]
pub struct Handled {
    /// The 200 body.
    pub body: Answer,
    /// Whether to write the endpoint's `read` log entry.
    pub log_read: bool,
    /// The audit entry `(event, detail)`, if any.
    pub audit: Option<(AuditEvent, Value)>,
}

impl Handled {
    fn read(body: impl Into<Answer>, tool: &str) -> Self {
        Handled {
            body: body.into(),
            log_read: true,
            audit: Some((AuditEvent::LapCall, json!({ "tool": tool }))),
        }
    }
}

fn closed_or_internal(e: SessionError) -> ApiError {
    match e {
        SessionError::Closed => ApiError::paused(),
        SessionError::Internal(d) => ApiError::internal(d),
    }
}

/// `msg` must be an object with a string `type`.
pub(crate) fn require_msg(fields: &Fields) -> Result<&Value, ApiError> {
    match fields.get("msg") {
        Some(m) if m.get("type").is_some_and(Value::is_string) => Ok(m),
        _ => Err(ApiError::invalid("msg.type must be a string")),
    }
}

/// Reads the dispatch options shared by `/message` and the human dispatch (`lap.md` §5.5).
pub(crate) fn dispatch_options(
    fields: &Fields,
    limits: Limits,
) -> Result<DispatchOptions, ApiError> {
    let wait_for = match fields.get("waitFor") {
        None => WaitFor::Drained,
        Some(v) => v
            .as_str()
            .and_then(WaitFor::parse)
            .ok_or_else(|| ApiError::invalid("waitFor must be one of: drained, idle, none"))?,
    };
    Ok(DispatchOptions {
        wait_for,
        drain_quiet_ms: fields.millis("drainQuietMs", 100, u64::MAX),
        timeout_ms: fields.millis("timeoutMs", 5000, limits.max_wait_ms),
        include_state: fields.is_true("includeState"),
    })
}

/// The `/confirm-result` and waiting `/message` answer for an outcome.
pub(crate) fn confirm_answer(
    outcome: &ConfirmOutcome,
    confirm_id: &str,
    for_message: bool,
) -> Value {
    match outcome {
        ConfirmOutcome::Confirmed { state_after, msg } => {
            let mut v = json!({"status": "confirmed", "stateAfter": state_after});
            if let Some(m) = msg {
                v["msg"] = m.clone();
            }
            v
        }
        ConfirmOutcome::UserCancelled => json!({"status":"rejected","reason":"user-cancelled"}),
        ConfirmOutcome::Expired => json!({"status":"rejected","reason":"timeout"}),
        ConfirmOutcome::Pending if for_message => {
            json!({"status":"pending-confirmation","confirmId": confirm_id})
        }
        ConfirmOutcome::Pending => json!({"status":"still-pending"}),
    }
}

fn outcome_name(outcome: &ConfirmOutcome) -> &'static str {
    match outcome {
        ConfirmOutcome::Confirmed { .. } => "confirmed",
        ConfirmOutcome::UserCancelled => "user-cancelled",
        ConfirmOutcome::Expired => "timeout",
        ConfirmOutcome::Pending => "still-pending",
    }
}

/// Runs one endpoint's handler for token `tid` on `session`, after the gate.
pub async fn handle<A: App>(
    endpoint: Endpoint,
    session: &Session<A>,
    describe: &RawValue,
    tid: &str,
    fields: Fields,
    limits: Limits,
) -> Result<Handled, ApiError> {
    let tool = endpoint.tool();
    match endpoint {
        Endpoint::Describe => Ok(Handled {
            body: Answer::Serialized(describe.get().to_string()),
            log_read: false,
            audit: Some((AuditEvent::LapCall, json!({"path": "/lap/v1/describe"}))),
        }),
        Endpoint::State => {
            let path = fields
                .opt_str("path")
                .map_err(|_| ApiError::invalid("path must be a string"))?;
            Ok(Handled::read(session.get_state(path), tool))
        }
        Endpoint::QueryState => {
            let path = fields
                .str_or_none("path")
                .ok_or_else(|| ApiError::invalid("path must be a string"))?;
            Ok(Handled::read(session.query_state(path), tool))
        }
        Endpoint::Actions => {
            let actions = session.list_actions().map_err(closed_or_internal)?;
            Ok(Handled::read(json!({ "actions": actions }), tool))
        }
        Endpoint::QueryDom => {
            let name = fields
                .str_or_none("name")
                .ok_or_else(|| ApiError::invalid("name must be a string"))?;
            let body = session
                .query_dom(name, fields.is_true("multiple"))
                .map_err(closed_or_internal)?;
            Ok(Handled::read(body, tool))
        }
        Endpoint::DescribeVisible => Ok(Handled::read(
            session.describe_visible().map_err(closed_or_internal)?,
            tool,
        )),
        Endpoint::Context => Ok(Handled::read(
            session
                .describe_context(Some(tid))
                .map_err(closed_or_internal)?,
            tool,
        )),
        Endpoint::WouldDispatch => {
            let msg = require_msg(&fields)?;
            let result = session.would_dispatch(msg).map_err(closed_or_internal)?;
            Ok(Handled::read(
                Answer::serialize(&result, "would_dispatch")?,
                tool,
            ))
        }
        Endpoint::Observe => {
            let actions = session.list_actions().map_err(closed_or_internal)?;
            let context = session.context().map_err(closed_or_internal)?;
            let body = serde_json::to_string(&ObserveBody {
                state: &session.state(),
                actions: &actions,
                description: describe,
                context: &context,
            })
            .map_err(|e| ApiError::internal(format!("observe: {e}")))?;
            Ok(Handled::read(Answer::Serialized(body), tool))
        }
        Endpoint::RecentActions => {
            let n = match fields.get("n").and_then(Value::as_f64) {
                Some(n) if n >= 1.0 => n.floor().min(usize::MAX as f64) as usize,
                _ => 10,
            };
            let kind = fields.str_or_none("kind");
            let entries = session.recent_log(n, kind);
            let count = entries.len();
            Ok(Handled {
                body: json!({ "entries": entries }).into(),
                log_read: false,
                audit: Some((
                    AuditEvent::LapCall,
                    json!({"tool": tool, "count": count, "kindFilter": kind}),
                )),
            })
        }
        Endpoint::Message => message(session, tid, &fields, limits).await,
        Endpoint::ConfirmResult => {
            let id = fields
                .str_or_none("confirmId")
                .ok_or_else(|| ApiError::invalid("confirmId must be a string"))?;
            let timeout = fields.millis("timeoutMs", 5000, limits.max_wait_ms);
            let outcome = session
                .wait_confirm(id, timeout)
                .await
                .ok_or_else(|| ApiError::invalid(format!("unknown confirmId: {id}")))?;
            Ok(Handled {
                body: confirm_answer(&outcome, id, false).into(),
                log_read: false,
                audit: Some((
                    AuditEvent::LapCall,
                    json!({"path": "/lap/v1/confirm-result", "outcome": outcome_name(&outcome)}),
                )),
            })
        }
        Endpoint::Wait => {
            let path = match fields.get("path") {
                None => None,
                Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Some(p.as_str()),
                Some(_) => return Err(ApiError::invalid("path must be empty or start with '/'")),
            };
            let timeout = fields.millis("timeoutMs", 10_000, limits.max_wait_ms);
            let body = session
                .wait_for_change(path, timeout)
                .await
                .map_err(closed_or_internal)?;
            let outcome = body["status"].as_str().unwrap_or("timeout").to_string();
            Ok(Handled {
                body: body.into(),
                log_read: false,
                audit: Some((
                    AuditEvent::LapCall,
                    json!({"path": "/lap/v1/wait", "outcome": outcome}),
                )),
            })
        }
        Endpoint::Narrate => {
            let text = match fields.str_or_none("text") {
                Some(t) if !t.is_empty() => t,
                _ => return Err(ApiError::invalid("text required")),
            };
            let mut entry = activity::entry(LogKind::Narrate, session.now_ms());
            entry.intent = Some(
                fields
                    .str_or_none("intent")
                    .unwrap_or("Agent narrated")
                    .to_string(),
            );
            entry.detail = Some(text.to_string());
            entry.tid = Some(tid.to_string());
            session.append_log(entry);
            Ok(Handled {
                body: json!({"ok": true}).into(),
                log_read: false,
                audit: Some((
                    AuditEvent::LapCall,
                    json!({"path": "/lap/v1/narrate", "outcome": "ok"}),
                )),
            })
        }
    }
}

/// Checks `/message`'s 400 rules (`lap.md` §5.5) in order; returns the idempotency key.
pub(crate) fn check_message_request(
    fields: &Fields,
    limits: Limits,
) -> Result<Option<String>, ApiError> {
    require_msg(fields)?;
    dispatch_options(fields, limits)?;
    match fields.get("idempotencyKey") {
        None => Ok(None),
        Some(Value::String(k)) if (1..=256).contains(&k.chars().count()) => Ok(Some(k.clone())),
        Some(_) => Err(ApiError::invalid(
            "idempotencyKey must be a string of 1 to 256 characters",
        )),
    }
}

async fn message<A: App>(
    session: &Session<A>,
    tid: &str,
    fields: &Fields,
    limits: Limits,
) -> Result<Handled, ApiError> {
    let msg = require_msg(fields)?;
    let opts = dispatch_options(fields, limits)?;
    let variant = msg["type"].as_str().unwrap_or_default().to_string();
    let reason = fields.str_or_none("reason").map(str::to_owned);
    let result = match session.send_message(msg, reason, opts, Some(tid)).await {
        Ok(r) => r,
        Err(SessionError::Closed) => return Err(ApiError::paused()),
        Err(SessionError::Internal(d)) => {
            session.record_errored(tid, &variant, d.clone());
            return Err(ApiError::internal(d));
        }
    };
    let (body, audit) = match &result {
        SendResult::PendingConfirmation { confirm_id } => {
            let audit = (
                AuditEvent::ConfirmProposed,
                json!({"variant": variant, "confirmId": confirm_id}),
            );
            let outcome = session
                .wait_confirm(confirm_id, opts.timeout_ms)
                .await
                .unwrap_or(ConfirmOutcome::Pending);
            (confirm_answer(&outcome, confirm_id, true).into(), audit)
        }
        SendResult::Rejected { .. } => (
            Answer::serialize(&result, "send_message")?,
            (
                AuditEvent::MsgBlocked,
                json!({"variant": variant, "status": "rejected"}),
            ),
        ),
        _ => (
            Answer::serialize(&result, "send_message")?,
            (
                AuditEvent::MsgDispatched,
                json!({"variant": variant, "status": "dispatched"}),
            ),
        ),
    };
    Ok(Handled {
        body,
        log_read: false,
        audit: Some(audit),
    })
}

impl Endpoint {
    /// The `read` log entry for a successful call, if this endpoint writes one.
    pub fn read_entry(
        self,
        fields: &Fields,
        tid: &str,
        at: u64,
    ) -> Option<agent_schema::protocol::LogEntry> {
        let label = self.read_label()?;
        let mut entry = activity::entry(LogKind::Read, at);
        entry.intent = Some(match (self, fields.str_or_none("name")) {
            (Endpoint::QueryDom, Some(name)) => format!("Query DOM: {name}"),
            _ => label.to_string(),
        });
        entry.tid = Some(tid.to_string());
        Some(entry)
    }
}
