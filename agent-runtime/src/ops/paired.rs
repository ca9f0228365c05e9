//! The operations of a paired session (`docs/pairing.md` §LAP → frames), behind the same gate as a
//! hosted session's: reads and `/message` are relayed to the app runtime as `rpc` frames
//! named by the operation's MCP tool and its answer is the body; `/describe`
//! and the description in `/observe` come from the cached `hello`; `/confirm-result`, `/wait`,
//! `/narrate` and `/recent-actions` are answered from the frames the runtime pushes.
//!
//! The app's answers are relayed as they are: LLui's runtime and ours answer with the
//! operation's response shape, and the server does not re-shape it.

use std::time::Duration;

use agent_schema::protocol::{
    ConfirmResultRequest, EmptyRequest, ErrorCode, LogKind, MessageRequest, NarrateRequest,
    NarrateResponse, QueryDomRequest, QueryStateRequest, RecentActionsRequest, StateRequest,
    WaitRequest, WaitResponse, WaitStatus, WouldDispatchRequest,
};
use serde_json::{json, Map, Value};

use super::call::{Answer, Resolved};
use super::error::ApiError;
use super::state::ServerState;
use crate::app::App;
use crate::config::OverBudget;
use crate::engine::paired::frames::{ConfirmDecision, Hello, ServerFrame};
use crate::engine::paired::hub::{Hub, Resolution, RpcFail};
use crate::engine::paired::records::within_grace;
use crate::security::{TokenRecord, TokenStatus};

/// Extra time an rpc of `/message` gets past the dispatch's own `timeoutMs`.
const MESSAGE_SLACK_MS: u64 = 1000;

type Relayed<R> = Result<Answer<R>, ApiError>;

/// The 503 `paused` answer for `record`: the `X-LLui-Reconnect` hint, and `Retry-After` when
/// the app may come back.
pub(crate) fn paused(record: Option<&TokenRecord>, now: u64, retry_after_s: u64) -> ApiError {
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
    ApiError::paused_with(reconnect, retry)
}

/// The gate's check for a paired session: a socket is paired (else 503 `paused`).
pub(crate) fn check_paired<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
) -> Result<(), ApiError> {
    let pairing = &server.inner.pairing;
    if pairing.hub.is_paired(&record.tid) {
        Ok(())
    } else {
        Err(paused(
            Some(record),
            server.now(),
            pairing.options.retry_after_s,
        ))
    }
}

/// The success tail's step for a paired session: the first success pushes `active`.
pub(crate) fn activated<A: App>(server: &ServerState<A>, record: &TokenRecord) {
    if record.status == TokenStatus::AwaitingClaude {
        server
            .inner
            .pairing
            .hub
            .push(&record.tid, ServerFrame::Active {});
    }
}

/// The error of a failed relay.
fn failed<A: App>(call: &Resolved<'_, A>, fail: RpcFail) -> ApiError {
    match fail {
        RpcFail::Paused => paused(
            Some(call.record),
            call.server.now(),
            call.server.inner.pairing.options.retry_after_s,
        ),
        RpcFail::Timeout => ApiError::new(ErrorCode::Timeout),
        RpcFail::Error { code, detail } => ApiError::relayed(code, detail),
    }
}

/// A paired answer: audited as `lap-call {tool, paired}`; the app keeps its own log.
fn answer<A: App, R: serde::Serialize>(call: &Resolved<'_, A>, body: R) -> Answer<R> {
    Answer::audited(body, json!({"tool": call.spec.tool, "paired": true}))
}

/// Sends the operation's `rpc` with `args` and waits up to `ms` for the app's answer.
async fn relay<A: App>(call: &Resolved<'_, A>, args: Value, ms: u64) -> Result<Value, ApiError> {
    call.server
        .inner
        .pairing
        .hub
        .rpc(
            &call.record.tid,
            call.spec.tool,
            args,
            Duration::from_millis(ms),
        )
        .await
        .map_err(|f| failed(call, f))
}

/// Relays the operation with `args`, within the forward timeout.
async fn forward<A: App>(call: &Resolved<'_, A>, args: Value) -> Relayed<Value> {
    let ms = call.server.inner.pairing.options.forward_timeout_ms;
    Ok(answer(call, relay(call, args, ms).await?))
}

/// The cached `hello` (503 `paused` before the app sent one).
fn hello<A: App>(call: &Resolved<'_, A>) -> Result<std::sync::Arc<Hello>, ApiError> {
    call.server
        .inner
        .pairing
        .hub
        .hello(&call.record.tid)
        .ok_or_else(|| failed(call, RpcFail::Paused))
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

pub(super) async fn observe<A: App>(call: &Resolved<'_, A>, _: EmptyRequest) -> Relayed<Value> {
    let hello = hello(call)?;
    let ms = call.server.inner.pairing.options.forward_timeout_ms;
    let dynamic = relay(call, json!({}), ms).await?;
    let field = |k: &str| dynamic.get(k).cloned().unwrap_or(Value::Null);
    let body = json!({
        "state": field("state"),
        "actions": field("actions"),
        "description": description(&hello),
        "context": field("context"),
    });
    Ok(answer(call, body))
}

pub(super) async fn describe<A: App>(call: &Resolved<'_, A>, _: EmptyRequest) -> Relayed<Value> {
    Ok(answer(call, description(&*hello(call)?)))
}

pub(super) async fn state<A: App>(call: &Resolved<'_, A>, _: StateRequest) -> Relayed<Value> {
    forward(call, call.args.clone()).await
}

pub(super) async fn query_state<A: App>(
    call: &Resolved<'_, A>,
    _: QueryStateRequest,
) -> Relayed<Value> {
    forward(call, call.args.clone()).await
}

pub(super) async fn actions<A: App>(call: &Resolved<'_, A>, _: EmptyRequest) -> Relayed<Value> {
    forward(call, json!({})).await
}

pub(super) async fn query_dom<A: App>(
    call: &Resolved<'_, A>,
    _: QueryDomRequest,
) -> Relayed<Value> {
    forward(call, call.args.clone()).await
}

pub(super) async fn describe_visible<A: App>(
    call: &Resolved<'_, A>,
    _: EmptyRequest,
) -> Relayed<Value> {
    forward(call, json!({})).await
}

pub(super) async fn context<A: App>(call: &Resolved<'_, A>, _: EmptyRequest) -> Relayed<Value> {
    forward(call, json!({})).await
}

pub(super) async fn would_dispatch<A: App>(
    call: &Resolved<'_, A>,
    _: WouldDispatchRequest,
) -> Relayed<Value> {
    forward(call, call.args.clone()).await
}

/// `/message`: `send_message` with the whole body; a proposal is waited on for `timeoutMs`.
pub(super) async fn message<A: App>(call: &Resolved<'_, A>, req: MessageRequest) -> Relayed<Value> {
    let hub = &call.server.inner.pairing.hub;
    let tid = call.record.tid.as_str();
    let timeout = wait_ms(call, req.dispatch.timeout_ms);
    let answered = relay(call, call.args.clone(), timeout + MESSAGE_SLACK_MS).await?;
    if answered.get("status").and_then(Value::as_str) != Some("pending-confirmation") {
        return Ok(answer(call, answered));
    }
    let Some(id) = answered.get("confirmId").and_then(Value::as_str) else {
        return Ok(answer(call, answered));
    };
    let id = id.to_string();
    hub.expect_confirm(tid, &id);
    let resolved = hub
        .wait_confirm(tid, &id, Duration::from_millis(timeout))
        .await;
    Ok(answer(
        call,
        resolution_answer(hub, tid, &id, resolved, false),
    ))
}

pub(super) async fn confirm_result<A: App>(
    call: &Resolved<'_, A>,
    req: ConfirmResultRequest,
) -> Relayed<Value> {
    let hub = &call.server.inner.pairing.hub;
    let tid = call.record.tid.as_str();
    let timeout = wait_ms(call, req.timeout_ms);
    let id = req.confirm_id;
    if !hub.knows_confirm(tid, &id) {
        return Err(ApiError::invalid(format!("unknown confirmId: {id}")));
    }
    let resolved = hub
        .wait_confirm(tid, &id, Duration::from_millis(timeout))
        .await;
    Ok(answer(
        call,
        resolution_answer(hub, tid, &id, resolved, true),
    ))
}

pub(super) async fn wait<A: App>(
    call: &Resolved<'_, A>,
    req: WaitRequest,
) -> Relayed<WaitResponse> {
    let timeout = wait_ms(call, req.timeout_ms);
    let changed = call
        .server
        .inner
        .pairing
        .hub
        .wait_change(&call.record.tid, req.path, Duration::from_millis(timeout))
        .await
        .map_err(|f| failed(call, f))?;
    let body = match changed {
        Some(state_after) => WaitResponse {
            status: WaitStatus::Changed,
            state_after,
        },
        None => WaitResponse {
            status: WaitStatus::Timeout,
            state_after: Value::Null,
        },
    };
    Ok(answer(call, body))
}

pub(super) async fn narrate<A: App>(
    call: &Resolved<'_, A>,
    req: NarrateRequest,
) -> Relayed<NarrateResponse> {
    let limit = call.server.host().config().budgets.log_entry_bytes;
    OverBudget::check("text", req.text.len(), limit)?;
    let at = call.server.now();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let entry = json!({
        "id": format!("narrate-{at}-{}", &suffix[..8]),
        "at": at,
        "kind": LogKind::Narrate,
        "intent": req.intent.unwrap_or_else(|| call.spec.label.to_string()),
        "detail": req.text,
        "tid": call.record.tid,
    });
    let hub = &call.server.inner.pairing.hub;
    if !hub.push(&call.record.tid, ServerFrame::LogPush { entry }) {
        return Err(failed(call, RpcFail::Paused));
    }
    Ok(answer(call, NarrateResponse { ok: true }))
}

pub(super) async fn recent_actions<A: App>(
    call: &Resolved<'_, A>,
    req: RecentActionsRequest,
) -> Relayed<Value> {
    let hub = &call.server.inner.pairing.hub;
    let entries = hub.recent(&call.record.tid, req.count(), req.kind.as_deref());
    Ok(answer(call, json!({ "entries": entries })))
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

/// `timeoutMs` with the operation's default, clamped to the server's `maxWaitMs`.
fn wait_ms<A: App>(call: &Resolved<'_, A>, requested: Option<u64>) -> u64 {
    call.spec
        .wait_ms(requested, call.server.options().max_wait_ms)
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

    fn header(reply: &ApiError, name: &str) -> Option<String> {
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
            assert_eq!(reply.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
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
