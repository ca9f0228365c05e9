//! The operations of a paired session (`docs/pairing.md` §LAP → frames), behind the same gate as a
//! hosted session's: reads and `/message` are relayed to the app runtime as `rpc` frames
//! named by the operation's MCP tool and its answer is the body; `/describe`
//! and the description in `/observe` come from the cached `hello`; `/confirm-result`, `/wait`,
//! `/narrate` and `/recent-actions` are answered from the frames the runtime pushes.
//!
//! The app's answers are relayed as they are: LLui's runtime and ours answer with the
//! operation's response shape, and the server does not re-shape it.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tea_agent_schema::protocol::{
    ConfirmResultRequest, EmptyRequest, ErrorCode, LogKind, MessageRequest, NarrateRequest,
    NarrateResponse, QueryDomRequest, QueryStateRequest, QueryStateResponse, RecentActionsRequest,
    StateRequest, WaitRequest, WaitStatus, WouldDispatchRequest,
};

use super::context::{AnswerResult, Answered};
use super::error::ApiError;
use super::state::ServerState;
use crate::algo::state_path::{not_pageable, page_value, paged, Page};
use crate::app::App;
use crate::config::OverBudget;
use crate::engine::paired::frames::{null, ConfirmDecision, Hello, Raw, ServerFrame};
use crate::engine::paired::hub::Hub;
use crate::engine::paired::link::{Proposal, Resolution, RpcFail};
use crate::engine::paired::records::within_grace;
use crate::engine::session::progress::DispatchWatch;
use crate::security::{retry_after_secs, TokenRecord, TokenStatus};

/// Extra time an rpc of `/message` gets past the dispatch's own `timeoutMs`.
const MESSAGE_SLACK_MS: u64 = 1000;

/// A call relayed to a paired app: the server's state, the caller and the operation, and the
/// request body as it came (the `rpc` arguments).
pub(super) struct Relaying<'a, A: App> {
    /// The shared state (the hub, the options, the clock).
    pub(super) server: &'a ServerState<A>,
    /// The caller's token record.
    pub(super) record: &'a TokenRecord,
    /// The operation's spec.
    pub(super) spec: &'static super::spec::OperationSpec,
    /// The request body (an object, or `{}`).
    pub(super) args: &'a Value,
    /// What the surface follows of the work a `/message` starts (MCP's progress and
    /// `notifications/cancelled`), if it follows it.
    pub(super) follow: Option<Arc<DispatchWatch>>,
}

/// The 503 `paused` answer for `record`: the `X-LLui-Reconnect` hint, and `Retry-After` when
/// the app may come back.
pub(crate) fn paused(record: Option<&TokenRecord>, now: u64, retry_after: u64) -> ApiError {
    let (reconnect, retry) = match record {
        None => ("unknown", None),
        Some(r) if r.status == TokenStatus::Revoked => ("revoked", None),
        Some(r) if r.status == TokenStatus::PendingResume => {
            if within_grace(r, now) {
                let left = r.pending_resume_until.unwrap_or(now) - now;
                ("pending", Some(retry_after_secs(left)))
            } else {
                ("expired", None)
            }
        }
        Some(_) => ("pending", Some(retry_after)),
    };
    ApiError::paused_with(reconnect, retry)
}

/// The gate's check for a paired session: a socket is paired (else 503 `paused`).
pub(crate) fn check_paired<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
) -> Result<(), ApiError> {
    let pairing = &server.pairing();
    if pairing.hub.has_socket(&record.tid) {
        Ok(())
    } else {
        Err(paused(
            Some(record),
            server.now(),
            pairing.options.retry_after.as_secs(),
        ))
    }
}

/// The success tail's step for a paired session: the first success pushes `active`.
pub(crate) fn activated<A: App>(server: &ServerState<A>, record: &TokenRecord) {
    if record.status == TokenStatus::AwaitingClaude {
        let _ = server
            .pairing()
            .hub
            .push(&record.tid, ServerFrame::Active {});
    }
}

/// The error of a failed relay.
fn failed<A: App>(call: &Relaying<'_, A>, fail: RpcFail) -> ApiError {
    match fail {
        RpcFail::Paused => paused(
            Some(call.record),
            call.server.now(),
            call.server.pairing().options.retry_after.as_secs(),
        ),
        RpcFail::NotReading => {
            ApiError::not_reading(call.server.pairing().options.retry_after.as_secs())
        }
        RpcFail::Timeout => ApiError::new(ErrorCode::Timeout),
        RpcFail::Error { code, detail } => ApiError::relayed(code, detail),
    }
}

/// A paired answer: audited as `lap-call {tool, paired}`; the app keeps its own log.
pub(super) fn answer<A: App, R: serde::Serialize>(call: &Relaying<'_, A>, body: R) -> Answered<R> {
    Answered::audited(body, json!({"tool": call.spec.tool, "paired": true}))
}

/// Sends the operation's `rpc` with `args` and waits up to `ms` for the app's answer.
async fn relay<A: App>(call: &Relaying<'_, A>, args: Value, ms: u64) -> Result<Raw, ApiError> {
    call.server
        .pairing()
        .hub
        .rpc(
            &call.record.tid,
            call.spec.tool,
            args,
            Duration::from_millis(ms),
            call.follow.as_ref(),
        )
        .await
        .map_err(|f| failed(call, f))
}

/// Relays the operation with `args`, within the forward timeout.
pub(super) async fn forward<A: App>(call: &Relaying<'_, A>, args: Value) -> AnswerResult<Raw> {
    let ms = crate::clock::millis(call.server.pairing().options.forward_timeout);
    Ok(answer(call, relay(call, args, ms).await?))
}

/// The cached `hello` (503 `paused` before the app sent one).
fn hello<A: App>(call: &Relaying<'_, A>) -> Result<std::sync::Arc<Hello>, ApiError> {
    call.server
        .pairing()
        .hub
        .hello(&call.record.tid)
        .ok_or_else(|| failed(call, RpcFail::Paused))
}

/// The describe document of a cached `hello`, written from its raw text (never parsed).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Description<'a> {
    name: &'a str,
    version: &'a str,
    state_schema: &'a RawValue,
    messages: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a RawValue>,
    docs: &'a RawValue,
    conventions: tea_agent_schema::describe::Conventions,
    schema_hash: &'a str,
}

/// The describe document of a cached `hello`.
pub(crate) fn description(hello: &Hello) -> Description<'_> {
    const NULL: &str = "null";
    Description {
        name: &hello.app_name,
        version: &hello.app_version,
        state_schema: &hello.state_schema,
        messages: &hello.msg_schema,
        annotations: hello.annotations.as_deref(),
        docs: hello
            .docs
            .as_deref()
            .unwrap_or_else(|| serde_json::from_str(NULL).unwrap_or_else(|_| unreachable!())),
        conventions: tea_agent_schema::describe::Conventions::default(),
        schema_hash: &hello.schema_hash,
    }
}

/// The dynamic half of `/observe` as the app answers it (values left as text; `seq` when
/// the app counts its commits, as the Rust pairing client does).
#[derive(Deserialize)]
struct Observed {
    state: Option<Raw>,
    actions: Option<Raw>,
    context: Option<Raw>,
    #[serde(default)]
    seq: Option<u64>,
}

/// The `/observe` answer: the app's dynamic half plus the hello's description.
#[derive(Serialize)]
struct Observation<'a> {
    state: Raw,
    actions: Raw,
    description: Description<'a>,
    context: Raw,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
}

pub(super) async fn observe<A: App>(call: &Relaying<'_, A>, _: EmptyRequest) -> AnswerResult<Raw> {
    let hello = hello(call)?;
    let ms = crate::clock::millis(call.server.pairing().options.forward_timeout);
    let dynamic = relay(call, json!({}), ms).await?;
    let dynamic: Observed = serde_json::from_str(dynamic.get()).unwrap_or(Observed {
        state: None,
        actions: None,
        context: None,
        seq: None,
    });
    let body = Observation {
        state: dynamic.state.unwrap_or_else(null),
        actions: dynamic.actions.unwrap_or_else(null),
        description: description(&hello),
        context: dynamic.context.unwrap_or_else(null),
        seq: dynamic.seq,
    };
    Ok(answer(call, raw_text(&body)?))
}

pub(super) async fn describe<A: App>(call: &Relaying<'_, A>, _: EmptyRequest) -> AnswerResult<Raw> {
    let hello = hello(call)?;
    Ok(answer(call, raw_text(&description(&hello))?))
}

/// `body` as JSON text, to be answered as it is.
fn raw_text<T: Serialize>(body: &T) -> Result<Raw, ApiError> {
    serde_json::to_string(body)
        .and_then(RawValue::from_string)
        .map_err(|e| ApiError::internal(e.to_string()))
}

pub(super) async fn state<A: App>(call: &Relaying<'_, A>, _: StateRequest) -> AnswerResult<Raw> {
    forward(call, call.args.clone()).await
}

/// `/query-state`: relayed as it came; a page (`offset`, `limit`: the app may not know
/// them) relays the path alone and pages the app's answer here.
pub(super) async fn query_state<A: App>(
    call: &Relaying<'_, A>,
    request: QueryStateRequest,
) -> AnswerResult<Raw> {
    if !request.is_page() {
        return forward(call, call.args.clone()).await;
    }
    let ms = crate::clock::millis(call.server.pairing().options.forward_timeout);
    let whole = relay(call, json!({"path": request.path}), ms).await?;
    let page = Page {
        offset: request.offset.unwrap_or(0),
        limit: request.limit,
    };
    let read: QueryStateResponse = match serde_json::from_str(whole.get()) {
        Ok(read) => read,
        // Not the operation's shape: relayed as it came.
        Err(_) => return Ok(answer(call, whole)),
    };
    let paged = match read {
        QueryStateResponse {
            found: true,
            value: Some(value),
            ..
        } => paged(
            page_value(&value, page).map_err(|kind| not_pageable(&request.path, kind)),
            page,
        ),
        miss => miss,
    };
    Ok(answer(call, raw_text(&paged)?))
}

pub(super) async fn actions<A: App>(call: &Relaying<'_, A>, _: EmptyRequest) -> AnswerResult<Raw> {
    forward(call, json!({})).await
}

pub(super) async fn query_dom<A: App>(
    call: &Relaying<'_, A>,
    _: QueryDomRequest,
) -> AnswerResult<Raw> {
    forward(call, call.args.clone()).await
}

pub(super) async fn describe_visible<A: App>(
    call: &Relaying<'_, A>,
    _: EmptyRequest,
) -> AnswerResult<Raw> {
    forward(call, json!({})).await
}

pub(super) async fn context<A: App>(call: &Relaying<'_, A>, _: EmptyRequest) -> AnswerResult<Raw> {
    forward(call, json!({})).await
}

pub(super) async fn would_dispatch<A: App>(
    call: &Relaying<'_, A>,
    _: WouldDispatchRequest,
) -> AnswerResult<Raw> {
    forward(call, call.args.clone()).await
}

/// The keys of a `/message` answer that say a proposal is pending.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Proposed {
    status: Option<String>,
    confirm_id: Option<String>,
}

/// `/message`: `send_message` with the whole body; a proposal is waited on for `timeoutMs`.
pub(super) async fn message<A: App>(
    call: &Relaying<'_, A>,
    req: MessageRequest,
) -> AnswerResult<Raw> {
    let hub = &call.server.pairing().hub;
    let tid = call.record.tid.as_str();
    let timeout = wait_ms(call, req.dispatch.timeout_ms);
    let answered = relay(call, call.args.clone(), timeout + MESSAGE_SLACK_MS).await?;
    let id = match serde_json::from_str::<Proposed>(answered.get()) {
        Ok(Proposed {
            status: Some(status),
            confirm_id: Some(id),
        }) if status == "pending-confirmation" => id,
        _ => return Ok(answer(call, answered)),
    };
    // The hub knew the id before relaying the answer (an outcome sent with it is kept);
    // what was proposed is kept for `/pending` (`docs/lap.md` §5.8).
    hub.expect_proposal(tid, &id, proposal(call, &req));
    // In a fleet, recorded for the replica the app may re-pair with (`docs/pairing.md` §A
    // fleet of replicas).
    #[cfg(feature = "fleet")]
    if let Some(fleet) = &call.server.pairing().fleet {
        fleet
            .record_proposal(hub, tid, &id, recorded_state_budget(call))
            .await;
    }
    await_outcome(call, &id, timeout, false).await
}

/// The most bytes of a `stateAfter` the fleet records.
#[cfg(feature = "fleet")]
pub(super) fn recorded_state_budget<A: App>(call: &Relaying<'_, A>) -> usize {
    let options = &call.server.pairing().options;
    crate::engine::paired::fleet::recorded_state_budget(
        options.outcome_bytes,
        options.outcomes_bytes,
    )
}

/// What `/message` proposed, as `/pending` lists it: the message itself only within
/// `confirm_bytes` (with its reason), else `{"type": variant}`.
fn proposal<A: App>(call: &Relaying<'_, A>, req: &MessageRequest) -> Proposal {
    let msg = &req.dispatch.msg;
    let reason = req.dispatch.reason.clone();
    let size = crate::config::json_len(&msg.0) + reason.as_ref().map_or(0, String::len);
    let limit = call.server.host().config().budgets.confirm_bytes;
    Proposal {
        variant: msg.variant().to_string(),
        msg: if size <= limit {
            msg.0.clone()
        } else {
            json!({"type": msg.variant()})
        },
        reason,
        proposed_at: call.server.now(),
    }
}

pub(super) async fn confirm_result<A: App>(
    call: &Relaying<'_, A>,
    req: ConfirmResultRequest,
) -> AnswerResult<Raw> {
    let hub = &call.server.pairing().hub;
    let tid = call.record.tid.as_str();
    let timeout = wait_ms(call, req.timeout_ms);
    let id = req.confirm_id;
    if !hub.knows_confirm(tid, &id) && !relayed_elsewhere(call, &id).await? {
        return Err(ApiError::invalid(format!("unknown confirmId: {id}")));
    }
    await_outcome(call, &id, timeout, true).await
}

/// In a fleet, whether another replica relayed proposal `id` (before the app re-paired
/// here): then this relay takes it over, with its decision if the fleet recorded one
/// (`docs/pairing.md` §A fleet of replicas). A store that cannot say: 500.
async fn relayed_elsewhere<A: App>(call: &Relaying<'_, A>, id: &str) -> Result<bool, ApiError> {
    #[cfg(feature = "fleet")]
    if let Some(fleet) = &call.server.pairing().fleet {
        let (hub, tid) = (&call.server.pairing().hub, call.record.tid.as_str());
        return fleet
            .adopt(hub, tid, id, call.server.now())
            .await
            .map_err(|e| {
                tracing::error!(tid, confirm_id = id, "fleet: a proposal not read: {e}");
                crate::telemetry::fleet_hop_failed("store");
                ApiError::from(e)
            });
    }
    let _ = (call, id);
    Ok(false)
}

/// Waits up to `timeout_ms` for the outcome of proposal `id` and answers it: `poll` for
/// `/confirm-result` (`still-pending`), else `/message` (`pending-confirmation`).
async fn await_outcome<A: App>(
    call: &Relaying<'_, A>,
    id: &str,
    timeout_ms: u64,
    poll: bool,
) -> AnswerResult<Raw> {
    let hub = &call.server.pairing().hub;
    let tid = call.record.tid.as_str();
    let resolved = hub
        .wait_confirm(tid, id, Duration::from_millis(timeout_ms))
        .await;
    Ok(answer(
        call,
        raw_text(&resolution_answer(hub, tid, id, resolved, poll))?,
    ))
}

/// A `/wait` answer with the app's state as it sent it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Waited {
    status: WaitStatus,
    state_after: Raw,
}

pub(super) async fn wait<A: App>(call: &Relaying<'_, A>, req: WaitRequest) -> AnswerResult<Waited> {
    let timeout = wait_ms(call, req.timeout_ms);
    let changed = call
        .server
        .pairing()
        .hub
        .wait_change(&call.record.tid, req.path, Duration::from_millis(timeout))
        .await
        .map_err(|f| failed(call, f))?;
    let body = match changed {
        Some(state_after) => Waited {
            status: WaitStatus::Changed,
            state_after,
        },
        None => Waited {
            status: WaitStatus::Timeout,
            state_after: null(),
        },
    };
    Ok(answer(call, body))
}

pub(super) async fn narrate<A: App>(
    call: &Relaying<'_, A>,
    req: NarrateRequest,
) -> AnswerResult<NarrateResponse> {
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
    let hub = &call.server.pairing().hub;
    hub.push(&call.record.tid, ServerFrame::LogPush { entry })
        .map_err(|f| failed(call, f))?;
    Ok(answer(call, NarrateResponse { ok: true }))
}

/// The `/recent-actions` answer, the entries as the app sent them.
#[derive(Serialize)]
pub(super) struct Entries {
    entries: Vec<Raw>,
}

pub(super) async fn recent_actions<A: App>(
    call: &Relaying<'_, A>,
    req: RecentActionsRequest,
) -> AnswerResult<Entries> {
    let hub = &call.server.pairing().hub;
    let entries = hub.recent(&call.record.tid, req.count(), req.kind.as_deref());
    Ok(answer(call, Entries { entries }))
}

/// A confirmation's answer, its state as the app sent it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Decided<'a> {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_after: Option<Raw>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirm_id: Option<&'a str>,
}

/// The answer for a confirmation's resolution (pushing `confirm-expire` on a rejection);
/// still undecided: `still-pending` for `/confirm-result`, `pending-confirmation` for
/// `/message`.
fn resolution_answer<'a>(
    hub: &Hub,
    tid: &str,
    id: &'a str,
    resolved: Option<Resolution>,
    poll: bool,
) -> Decided<'a> {
    let status = |status| Decided {
        status,
        state_after: None,
        reason: None,
        confirm_id: None,
    };
    match resolved {
        Some(r) if r.withdrawn => status("withdrawn"),
        Some(r) if r.decision == ConfirmDecision::Confirmed => Decided {
            state_after: Some(r.state_after.unwrap_or_else(null)),
            ..status("confirmed")
        },
        Some(_) => {
            let _ = hub.push(
                tid,
                ServerFrame::ConfirmExpire {
                    confirm_id: id.to_string(),
                },
            );
            Decided {
                reason: Some("user-cancelled"),
                ..status("rejected")
            }
        }
        None if poll => status("still-pending"),
        None => Decided {
            confirm_id: Some(id),
            ..status("pending-confirmation")
        },
    }
}

/// `timeoutMs` with the operation's default, clamped to the server's `maxWaitMs`.
fn wait_ms<A: App>(call: &Relaying<'_, A>, requested: Option<u64>) -> u64 {
    call.spec
        .wait_ms(requested, call.server.options().max_wait_ms())
}

#[cfg(test)]
#[path = "paired_tests.rs"]
mod tests;
