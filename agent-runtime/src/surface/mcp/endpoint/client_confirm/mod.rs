//! Confirmation in the MCP client (`docs/mcp.md` §Confirmation in the client; off unless
//! `McpOptions::confirm_in_client`): a `@requiresConfirm` message an agent sends is proposed as
//! always (the console shows it at once), and the user of an MCP client that can ask them
//! (elicitation) is asked in place too: on the legacy revisions with `elicitation/create`
//! while the call waits, on 2026-07-28 with an `input_required` result whose `requestState`
//! ([`state`]) binds the proposal, the token and an expiry. The answer decides through the
//! session's one approval path ([`Session::approve_as`], the console's checks of an edit); the
//! first decision wins, the other sees it decided.
//!
//! This is the only place an agent's call can decide a proposal, and only with the option on
//! and an answer from the client's form (`docs/security.md` §Confirmation in the MCP client).

mod form;
mod state;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelledNotificationParam, ClientCapabilities,
    ClientResult, ElicitRequest, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext};
use rmcp::RoleServer;
use serde_json::Value;
use tea_agent_schema::protocol::{ConfirmEntry, ConfirmResultResponse, ConfirmStatus};

use self::form::Answer;
use self::state::{Claims, Refusal, StateSeal};
use super::McpState;
use crate::app::App;
use crate::engine::session::{Decider, EditedApprovalError, Session};
use crate::ops::{self, Operation};
use crate::security::TokenRecord;
use crate::surface::mcp::action_tools::ActionCatalog;
use crate::surface::mcp::format::{failure, success};

/// The key of the one input request of a 2026-07-28 confirmation.
const INPUT_KEY: &str = "confirm";

/// How the client of one `tools/call` may be asked to confirm.
pub(crate) enum InClient {
    /// Not at all: the option is off, or the client did not declare elicitation (form mode).
    No,
    /// A legacy session whose client declared elicitation: `elicitation/create` on its peer.
    Elicit(Peer<RoleServer>),
    /// 2026-07-28 with elicitation among the request's client capabilities: an
    /// `input_required` result, and what a retry gives back.
    InputRequired(Retry),
}

/// What a 2026-07-28 retry carries back (both absent on a first call).
#[derive(Default)]
pub(crate) struct Retry {
    responses: Option<InputResponses>,
    state: Option<String>,
}

impl InClient {
    /// How the client of `request` (taken by rmcp's handler, with `context`) may be asked, the
    /// option being `on`; `stateless` on 2026-07-28. A retry's `inputResponses` and
    /// `requestState` are taken out of `request` when the client may be asked (with the
    /// option off the request is left as it came).
    pub(crate) fn of(
        on: bool,
        stateless: bool,
        request: &mut CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> InClient {
        if !on || !context.client_capabilities().is_some_and(|c| elicits(&c)) {
            return InClient::No;
        }
        if stateless {
            InClient::InputRequired(Retry {
                responses: request.input_responses.take(),
                state: request.request_state.take(),
            })
        } else {
            InClient::Elicit(context.peer.clone())
        }
    }

    /// Whether the client may be asked.
    pub(crate) fn asks(&self) -> bool {
        !matches!(self, InClient::No)
    }

    /// The retry of a 2026-07-28 confirmation: it carries a `requestState`.
    pub(crate) fn retry(&self) -> Option<&Retry> {
        match self {
            InClient::InputRequired(retry) if retry.state.is_some() => Some(retry),
            _ => None,
        }
    }
}

/// The client shows forms: `elicitation` declared with `form`, or empty (which means form).
fn elicits(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Whether the `send_message` request `body` of `caller` would be proposed and its client
/// asked: a hosted session (a paired app's proposals stay the console's) and a
/// `@requiresConfirm` variant of `catalog`.
pub(crate) fn proposes(
    in_client: &InClient,
    caller: &ops::Caller,
    catalog: &ActionCatalog,
    body: &Value,
) -> bool {
    let variant = body
        .get("msg")
        .and_then(|m| m.get("type"))
        .and_then(Value::as_str);
    in_client.asks()
        && !caller.backend.is_relay()
        && variant
            .and_then(|v| catalog.annotations(v))
            .is_some_and(|a| a.requires_confirm)
}

/// `body` answered at once when proposed (`timeoutMs` 0: the call asks the client instead of
/// waiting), and how long the caller asked to wait for the message's outcome.
pub(crate) fn at_once<A: App>(server: &McpState<A>, mut body: Value) -> (Value, u64) {
    let requested = body.get("timeoutMs").and_then(Value::as_u64);
    let wait = Operation::Message
        .spec()
        .wait_ms(requested, server.options().max_wait_ms());
    if let Value::Object(fields) = &mut body {
        fields.insert("timeoutMs".into(), Value::from(0));
    }
    (body, wait)
}

/// The `confirmId` of a `send_message` answer `pending-confirmation`.
pub(crate) fn proposed(answer: &ops::Success) -> Option<String> {
    if !answer.text().contains("\"pending-confirmation\"") {
        return None;
    }
    let value: Value = serde_json::from_str(answer.text()).ok()?;
    if value.get("status").and_then(Value::as_str) != Some("pending-confirmation") {
        return None;
    }
    value.get("confirmId")?.as_str().map(str::to_owned)
}

/// Asks the client of `record`'s call about the proposal `confirm_id` it just made, and
/// answers the call: on a legacy session once the user, the console or the expiry decided
/// (the outcome as `send_message` answers it), on 2026-07-28 with the `input_required`
/// result. A client that gives no answer leaves the proposal to the console, answered as
/// without this option.
pub(crate) async fn ask<A: App>(
    server: &McpState<A>,
    catalog: &ActionCatalog,
    record: &TokenRecord,
    confirm_id: &str,
    wait_ms: u64,
    in_client: &InClient,
) -> CallToolResponse {
    let Some(session) = server.host().load_session(&record.session_id).await else {
        return pending(confirm_id);
    };
    let Some(entry) = session.confirmation(confirm_id) else {
        return pending(confirm_id);
    };
    let warning = catalog
        .annotations(&entry.variant)
        .and_then(|a| a.warning.as_deref());
    let Some(params) = form::params(&entry, warning) else {
        return pending(confirm_id);
    };
    let ttl = server.options().mcp.confirm_in_client_ttl;
    match in_client {
        InClient::No => pending(confirm_id),
        InClient::Elicit(peer) => {
            let asked = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            let options = PeerRequestOptions::with_timeout(ttl);
            let Ok(handle) = peer.send_request_with_option(asked, options).await else {
                return pending(confirm_id);
            };
            let request_id = handle.id.clone();
            tokio::select! {
                answered = handle.await_response() => match answered {
                    Ok(ClientResult::ElicitResult(result)) => {
                        let answer = form::read(&result, &entry);
                        decide(&session, &entry, &record.tid, answer, wait_ms).await
                    }
                    // No answer (an error, a timeout): the console's, as without the option.
                    _ => outcome(&session, &entry, &record.tid, 0).await,
                },
                // The console (or the expiry) decided first: the client may close its form.
                decided = session.wait_own_confirm(confirm_id, &record.tid, crate::clock::millis(ttl)) => {
                    let reason = "decided in the app's console, or expired".to_owned();
                    let cancel = CancelledNotificationParam::new(Some(request_id), Some(reason));
                    let _ = peer.notify_cancelled(cancel).await;
                    answer_outcome(decided, confirm_id)
                }
            }
        }
        InClient::InputRequired(_) => {
            let claims = Claims {
                confirm_id: confirm_id.to_owned(),
                session: record.session_id.clone(),
                tid: record.tid.clone(),
                expires_ms: server.now().saturating_add(crate::clock::millis(ttl)),
            };
            let sealed = StateSeal::new(server.identity().key()).seal(&claims);
            let mut requests = InputRequests::new();
            requests.insert(
                INPUT_KEY.into(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
            InputRequiredResult::new(Some(requests), Some(sealed)).into()
        }
    }
}

/// A 2026-07-28 retry of `record`'s call with `retry`'s `requestState` and `inputResponses`:
/// the state checked (its MAC, its token, its expiry, the proposal still pending), then the
/// answer decides and the call answers the outcome as `send_message` does. Anything refused
/// is a tool error saying why, nothing decided; the message is never sent again.
pub(crate) async fn answer_retry<A: App>(
    server: &McpState<A>,
    record: &TokenRecord,
    retry: &Retry,
    wait_ms: u64,
) -> CallToolResponse {
    let sealed = retry.state.as_deref().unwrap_or_default();
    let seal = StateSeal::new(server.identity().key());
    let claims = match seal.open(sealed, &record.tid, server.now()) {
        Ok(claims) if claims.session == record.session_id => claims,
        Ok(_) => return failure(Refusal::Foreign.text()).into(),
        Err(refusal) => return failure(refusal.text()).into(),
    };
    let id = &claims.confirm_id;
    let Some(session) = server.host().load_session(&claims.session).await else {
        return failure("requestState refused: its session is gone. Nothing was decided.").into();
    };
    let Some(entry) = session.confirmation(id) else {
        return failure(format!(
            "requestState refused: confirmation {id} is no longer known (decided or expired \
             a while ago). Nothing was decided."
        ))
        .into();
    };
    if entry.status != ConfirmStatus::Pending {
        let now = session
            .wait_own_confirm(id, &record.tid, 0)
            .await
            .map(|o| ops::message_answer(o, id.clone()));
        let now = now.and_then(|o| serde_json::to_string(&o).ok());
        return failure(format!(
            "requestState refused: confirmation {id} is already {} (a replay, or another \
             decision came first). Nothing was decided now. Its outcome: {}",
            entry.status.as_str(),
            now.unwrap_or_else(|| "unknown".into())
        ))
        .into();
    }
    let result = retry
        .responses
        .as_ref()
        .and_then(|r| r.get(INPUT_KEY))
        .and_then(form::result_of);
    let Some(result) = result else {
        return failure(format!(
            "inputResponses.{INPUT_KEY} is missing or not an elicitation result. Nothing was \
             decided: confirmation {id} is still pending."
        ))
        .into();
    };
    let answer = form::read(&result, &entry);
    decide(&session, &entry, &record.tid, answer, wait_ms).await
}

/// Decides `entry` as the client's user answered (the console's own path, recorded as
/// decided by the client), then answers its outcome, waiting up to `wait_ms` for an approved
/// message to commit. A decision that came first elsewhere is answered as it is.
async fn decide<A: App>(
    session: &Session<A>,
    entry: &ConfirmEntry,
    tid: &str,
    answer: Answer,
    wait_ms: u64,
) -> CallToolResponse {
    let id = &entry.id;
    let decided = match answer {
        Answer::Approve(edited) => {
            session
                .approve_as(id, edited.as_ref(), Decider::Client)
                .await
        }
        Answer::Reject => session.reject_as(id, Decider::Client).await,
        Answer::Undecided => return outcome(session, entry, tid, 0).await,
        Answer::Unreadable(why) => {
            return failure(format!(
                "The confirmation form's answer was not read: {why}. Nothing was decided: \
                 confirmation {id} is still pending; the user may decide it in the app's \
                 console, and get_confirm_result tells its outcome."
            ))
            .into()
        }
    };
    match decided {
        Ok(()) | Err(EditedApprovalError::AlreadyDecided(_)) => {
            outcome(session, entry, tid, wait_ms).await
        }
        Err(EditedApprovalError::Invalid(detail)) => failure(format!(
            "The edited payload was refused, as the app's console refuses it: {detail}. \
             Nothing was decided: confirmation {id} is still pending; the user may decide it \
             in the app's console, and get_confirm_result tells its outcome."
        ))
        .into(),
        Err(e) => failure(format!("The decision on confirmation {id} failed: {e}.")).into(),
    }
}

/// The outcome of `entry` as `send_message` answers it, waited for up to `wait_ms`.
async fn outcome<A: App>(
    session: &Session<A>,
    entry: &ConfirmEntry,
    tid: &str,
    wait_ms: u64,
) -> CallToolResponse {
    let now = session.wait_own_confirm(&entry.id, tid, wait_ms).await;
    answer_outcome(now, &entry.id)
}

fn answer_outcome(outcome: Option<ConfirmResultResponse>, confirm_id: &str) -> CallToolResponse {
    let outcome = outcome.unwrap_or(ConfirmResultResponse::StillPending);
    let answer = ops::message_answer(outcome, confirm_id.to_owned());
    match serde_json::to_value(answer) {
        Ok(body) => success(body).into(),
        Err(e) => failure(format!("the answer did not serialize: {e}")).into(),
    }
}

/// `pending-confirmation`, as `send_message` answers a proposal nobody decided yet.
fn pending(confirm_id: &str) -> CallToolResponse {
    answer_outcome(None, confirm_id)
}
