//! The operations of a paired session (`pairing.md` §LAP → frames): reads and `/message` are
//! forwarded to the app runtime as `rpc` frames and its answer is the body; `/describe` and
//! the description in `/observe` come from the cached `hello`; `/confirm-result`, `/wait`,
//! `/narrate` and `/recent-actions` are answered from the frames the runtime pushes.

use std::time::Duration;

use agent_schema::protocol::{
    ConfirmResultRequest, MessageRequest, NarrateRequest, RecentActionsRequest, WaitRequest,
};
use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use crate::engine::paired::frames::{ConfirmDecision, Hello, ServerFrame};
use crate::engine::paired::hub::{Hub, Resolution, RpcFail};
use super::options::PairingOptions;
use crate::engine::paired::records::within_grace;
use crate::app::App;
use crate::config::OverBudget;
use crate::ops::error::ApiError;
use crate::ops::table::Operation;
use crate::ops::Reply;
use crate::security::{AuditEntry, AuditEvent, Bucket, TokenRecord, TokenStatus};
use crate::ops::ServerState;

/// The pairing state of a server: the live hub and the options.
pub(crate) struct Pairing {
    pub(crate) hub: Hub,
    pub(crate) options: PairingOptions,
}

impl Pairing {
    pub(crate) fn new(options: PairingOptions, entry_bytes: usize) -> Self {
        Pairing {
            hub: Hub::new(options.outcome_ms, options.grace_ms, entry_bytes),
            options,
        }
    }
}

/// Extra time an rpc of `/message` gets past the dispatch's own `timeoutMs`.
const MESSAGE_SLACK_MS: u64 = 1000;

/// The 503 `paused` answer for `record`, with `X-LLui-Reconnect` and `Retry-After`.
pub(crate) fn paused(record: Option<&TokenRecord>, now: u64, retry_after_s: u64) -> Reply {
    let (reconnect, retry) = match record {
        None => ("unknown", None),
        Some(r) if r.status == TokenStatus::Revoked => ("revoked", None),
        Some(r) if r.status == TokenStatus::PendingResume => {
            if within_grace(r, now) {
                let left = r.pending_resume_until.unwrap_or(now) - now;
                ("pending", Some(left.div_ceil(1000).max(1)))
            } else {
                ("expired", None)
            }
        }
        Some(_) => ("pending", Some(retry_after_s)),
    };
    let body = json!({"error": {"code": "paused", "reconnect": reconnect}}).to_string();
    let mut reply = Reply::with_status(StatusCode::SERVICE_UNAVAILABLE, body)
        .with_header("x-llui-reconnect", reconnect);
    if let Some(s) = retry {
        reply = reply.with_header("retry-after", &s.to_string());
    }
    reply
}

/// The answer of a failed forward.
fn failed<A: App>(server: &ServerState<A>, record: &TokenRecord, fail: RpcFail) -> Reply {
    match fail {
        RpcFail::Paused => paused(
            Some(record),
            server.now(),
            server.inner.pairing.options.retry_after_s,
        ),
        RpcFail::Timeout => Reply::with_status(
            StatusCode::GATEWAY_TIMEOUT,
            json!({"error": {"code": "timeout"}}).to_string(),
        ),
        RpcFail::Error { code, detail } => {
            let mut error = Map::new();
            error.insert("code".into(), json!(code));
            if let Some(d) = detail {
                error.insert("detail".into(), json!(d));
            }
            Reply::with_status(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": error }).to_string(),
            )
        }
    }
}

/// The describe document of a cached `hello`.
pub(crate) fn description(hello: &Hello) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!(hello.app_name));
    d.insert("version".into(), json!(hello.app_version));
    d.insert("stateSchema".into(), hello.state_schema.clone());
    d.insert("messages".into(), hello.msg_schema.clone());
    if let Some(a) = &hello.annotations {
        d.insert("annotations".into(), a.clone());
    }
    d.insert("docs".into(), hello.docs.clone());
    d.insert(
        "conventions".into(),
        serde_json::to_value(agent_schema::describe::Conventions::default()).unwrap_or(Value::Null),
    );
    d.insert("schemaHash".into(), json!(hello.schema_hash));
    Value::Object(d)
}

/// The request body as rpc arguments: an object, or `{}`.
fn args_of(body: Value) -> Value {
    match body {
        Value::Object(_) => body,
        _ => json!({}),
    }
}

fn ok(body: &Value) -> Result<Value, Reply> {
    Ok(body.clone())
}

/// Runs `op` for the paired session of `record` (already through the bearer check): 503 when
/// no socket is paired, the rate limit, the forward, then activation (pushing `active` on the
/// first success), touch and audit. Every long call ends with 403 when the token is revoked.
pub(crate) async fn serve<A: App>(
    server: &ServerState<A>,
    record: TokenRecord,
    op: Operation,
    body: Value,
) -> Reply {
    let pairing = &server.inner.pairing;
    let tid = record.tid.clone();
    if !pairing.hub.is_paired(&tid) {
        return paused(Some(&record), server.now(), pairing.options.retry_after_s);
    }
    if let Err(e) = server.inner.limiter.check(&tid, Bucket::Token).await {
        return Reply::from_error(&e.into());
    }
    if op.spec().conduct.touch_on_arrival {
        server.tokens().touch(&tid, server.now()).await;
    }
    let work = async {
        match run(server, &record, op, body).await {
            Ok(answer) => {
                if record.status == TokenStatus::AwaitingClaude {
                    pairing.hub.push(&tid, ServerFrame::Active {});
                }
                crate::ops::activate(server, &record).await;
                let entry = AuditEntry::new(
                    server.now(),
                    AuditEvent::LapCall,
                    json!({"tool": op.tool(), "paired": true}),
                )
                .with_tid(tid.clone())
                .with_uid(record.uid.clone());
                server.audit(entry).await;
                Reply::ok(answer.to_string())
            }
            Err(reply) => reply,
        }
    };
    crate::ops::with_revocation(server, &tid, work).await
}

async fn run<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
    op: Operation,
    body: Value,
) -> Result<Value, Reply> {
    let pairing = &server.inner.pairing;
    let hub = &pairing.hub;
    let tid = record.tid.as_str();
    let forward_ms = pairing.options.forward_timeout_ms;
    let forward = |tool: &'static str, args: Value, ms: u64| async move {
        hub.rpc(tid, tool, args, Duration::from_millis(ms))
            .await
            .map_err(|f| failed(server, record, f))
    };
    let no_hello = || paused(Some(record), server.now(), pairing.options.retry_after_s);
    match op {
        Operation::Describe => {
            let hello = hub.hello(tid).ok_or_else(no_hello)?;
            ok(&description(&hello))
        }
        Operation::Observe => {
            let hello = hub.hello(tid).ok_or_else(no_hello)?;
            let dynamic = forward("observe", json!({}), forward_ms).await?;
            let field = |k: &str| dynamic.get(k).cloned().unwrap_or(Value::Null);
            ok(&json!({
                "state": field("state"),
                "actions": field("actions"),
                "description": description(&hello),
                "context": field("context"),
            }))
        }
        Operation::State => forward("get_state", args_of(body), forward_ms).await,
        Operation::QueryState => forward("query_state", args_of(body), forward_ms).await,
        Operation::Actions => forward("list_actions", json!({}), forward_ms).await,
        Operation::QueryDom => forward("query_dom", args_of(body), forward_ms).await,
        Operation::DescribeVisible => {
            forward("describe_visible_content", json!({}), forward_ms).await
        }
        Operation::Context => forward("describe_context", json!({}), forward_ms).await,
        Operation::WouldDispatch => forward("would_dispatch", args_of(body), forward_ms).await,
        Operation::Message => message(server, record, body).await,
        Operation::ConfirmResult => {
            let req: ConfirmResultRequest = read(body)?;
            let timeout = wait_ms(server, req.timeout_ms, 5000);
            let id = req.confirm_id;
            if !hub.knows_confirm(tid, &id) {
                return Err(Reply::from_error(&ApiError::invalid(format!(
                    "unknown confirmId: {id}"
                ))));
            }
            let resolved = hub
                .wait_confirm(tid, &id, Duration::from_millis(timeout))
                .await;
            Ok(resolution_answer(hub, tid, &id, resolved, true))
        }
        Operation::Wait => {
            let req: WaitRequest = read(body)?;
            let timeout = wait_ms(server, req.timeout_ms, 10_000);
            let changed = hub
                .wait_change(tid, req.path, Duration::from_millis(timeout))
                .await
                .map_err(|f| failed(server, record, f))?;
            Ok(match changed {
                Some(state) => json!({"status": "changed", "stateAfter": state}),
                None => json!({"status": "timeout", "stateAfter": null}),
            })
        }
        Operation::Narrate => {
            let req: NarrateRequest = read(body)?;
            let limit = server.host().config().budgets.log_entry_bytes;
            OverBudget::check("text", req.text.len(), limit)
                .map_err(|e| Reply::from_error(&e.into()))?;
            let at = server.now();
            let suffix = uuid::Uuid::new_v4().simple().to_string();
            let entry = json!({
                "id": format!("narrate-{at}-{}", &suffix[..8]),
                "at": at,
                "kind": "narrate",
                "intent": req.intent.unwrap_or_else(|| Operation::Narrate.spec().label.to_string()),
                "detail": req.text,
                "tid": tid,
            });
            if !hub.push(tid, ServerFrame::LogPush { entry }) {
                return Err(failed(server, record, RpcFail::Paused));
            }
            ok(&json!({"ok": true}))
        }
        Operation::RecentActions => {
            let req: RecentActionsRequest = read(body)?;
            let entries = hub.recent(tid, req.count(), req.kind.as_deref());
            ok(&json!({ "entries": entries }))
        }
    }
}

/// `/message`: `send_message` with the whole body; a proposal is waited on for `timeoutMs`.
async fn message<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
    body: Value,
) -> Result<Value, Reply> {
    let hub = &server.inner.pairing.hub;
    let tid = record.tid.as_str();
    let req: MessageRequest = read(body.clone())?;
    let timeout = wait_ms(server, req.dispatch.timeout_ms, 5000);
    let answer = hub
        .rpc(
            tid,
            "send_message",
            args_of(body),
            Duration::from_millis(timeout + MESSAGE_SLACK_MS),
        )
        .await
        .map_err(|f| failed(server, record, f))?;
    if answer.get("status").and_then(Value::as_str) != Some("pending-confirmation") {
        return Ok(answer);
    }
    let Some(id) = answer.get("confirmId").and_then(Value::as_str) else {
        return Ok(answer);
    };
    let id = id.to_string();
    hub.expect_confirm(tid, &id);
    let resolved = hub
        .wait_confirm(tid, &id, Duration::from_millis(timeout))
        .await;
    Ok(resolution_answer(hub, tid, &id, resolved, false))
}

/// The answer for a confirmation's resolution (pushing `confirm-expire` on a rejection);
/// still undecided: `still-pending` for `/confirm-result`, `pending-confirmation` for
/// `/message`.
fn resolution_answer(
    hub: &Hub,
    tid: &str,
    id: &str,
    resolved: Option<Resolution>,
    poll: bool,
) -> Value {
    match resolved {
        Some(r) if r.decision == ConfirmDecision::Confirmed => {
            json!({"status": "confirmed", "stateAfter": r.state_after.unwrap_or(Value::Null)})
        }
        Some(_) => {
            hub.push(
                tid,
                ServerFrame::ConfirmExpire {
                    confirm_id: id.to_string(),
                },
            );
            json!({"status": "rejected", "reason": "user-cancelled"})
        }
        None if poll => json!({"status": "still-pending"}),
        None => json!({"status": "pending-confirmation", "confirmId": id}),
    }
}

fn read<R: serde::de::DeserializeOwned>(body: Value) -> Result<R, Reply> {
    serde_json::from_value(body).map_err(|e| Reply::from_error(&ApiError::invalid(e.to_string())))
}

fn wait_ms<A: App>(server: &ServerState<A>, requested: Option<u64>, default: u64) -> u64 {
    requested
        .unwrap_or(default)
        .min(server.options().max_wait_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: TokenStatus, until: Option<u64>) -> TokenRecord {
        let mut r = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
        r.status = status;
        r.pending_resume_until = until;
        r
    }

    fn header(reply: &Reply, name: &str) -> Option<String> {
        let response = axum::response::IntoResponse::into_response(reply.clone());
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    }

    #[test]
    fn paused_reconnect_hints() {
        let cases = [
            (None, "unknown", None),
            (Some(record(TokenStatus::Revoked, None)), "revoked", None),
            (
                Some(record(TokenStatus::PendingResume, Some(10_500))),
                "pending",
                Some("1"),
            ),
            (
                Some(record(TokenStatus::PendingResume, Some(32_001))),
                "pending",
                Some("23"),
            ),
            (
                Some(record(TokenStatus::PendingResume, Some(9_000))),
                "expired",
                None,
            ),
            (
                Some(record(TokenStatus::Active, None)),
                "pending",
                Some("5"),
            ),
            (
                Some(record(TokenStatus::AwaitingWs, None)),
                "pending",
                Some("5"),
            ),
        ];
        for (r, reconnect, retry) in cases {
            let reply = paused(r.as_ref(), 10_000, 5);
            assert_eq!(reply.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(
                header(&reply, "x-llui-reconnect").as_deref(),
                Some(reconnect)
            );
            assert_eq!(header(&reply, "retry-after").as_deref(), retry);
        }
    }

    #[test]
    fn description_of_a_hello() {
        let hello = Hello {
            app_name: "a".into(),
            app_version: "1".into(),
            msg_schema: json!({"discriminant": "type", "variants": {}}),
            state_schema: json!({}),
            affordances_sample: Vec::new(),
            docs: Value::Null,
            schema_hash: "h".into(),
            annotations: None,
            lap_version: Some(2),
        };
        let d = description(&hello);
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "name",
                "version",
                "stateSchema",
                "messages",
                "docs",
                "conventions",
                "schemaHash"
            ]
        );
        assert_eq!(d["conventions"]["dispatchModel"], "TEA");
    }
}
