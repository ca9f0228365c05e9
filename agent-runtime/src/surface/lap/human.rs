//! Human routes (`docs/lap.md` §6): the owner's view of their sessions, dispatch as the human,
//! confirmation decisions (with an optional edited message) and the numbered event stream.
//! Agent bearer tokens are refused on all of them.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, Request};
use axum::http::Method;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use futures::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::body::read_json;
use super::human_access::{access, session_access, NOT_YOURS};
use crate::app::App;
use crate::engine::session::{EditedApprovalError, SessionError};
use crate::ops::error::{json_ok, json_text_ok, ApiError};
use crate::ops::ServerState;
use crate::ops::{dispatch_options, Operation};
use crate::security::{AgentSession, TokenRecord, TokenStatus};
use tea_agent_schema::protocol::ErrorCode;
use tea_agent_schema::protocol::{DispatchRequest, Fields, SendResult, WaitFor};

/// The human routes.
pub(crate) fn human_routes<A: App>(server: &ServerState<A>) -> Router {
    let s = server.clone();
    let list = move |req: Request| human_sessions(s.clone(), req);
    let s = server.clone();
    let one = move |Path(id): Path<String>, req: Request| human_session(s.clone(), id, req);
    let s = server.clone();
    let dispatch = move |Path(id): Path<String>, req: Request| human_dispatch(s.clone(), id, req);
    let s = server.clone();
    let decide = move |Path((id, confirm)): Path<(String, String)>, req: Request| {
        human_decide(s.clone(), id, confirm, req)
    };
    let s = server.clone();
    let cancel = move |Path((id, work)): Path<(String, String)>, req: Request| {
        human_cancel(s.clone(), id, work, req)
    };
    let s = server.clone();
    let transcript = move |Path(id): Path<String>, q: Query<TranscriptQuery>, req: Request| {
        human_transcript(s.clone(), id, q.0, req)
    };
    let s = server.clone();
    let events = move |Path(id): Path<String>, q: Query<EventsQuery>, req: Request| {
        human_events(s.clone(), id, q.0, req)
    };
    Router::new()
        .route("/agent/human/sessions", any(list))
        .route("/agent/human/sessions/{id}", any(one))
        .route("/agent/human/sessions/{id}/dispatch", any(dispatch))
        .route("/agent/human/sessions/{id}/confirms/{confirm}", any(decide))
        .route("/agent/human/sessions/{id}/work/{work}/cancel", any(cancel))
        .route(
            "/agent/human/sessions/{id}/transcript",
            get(transcript).fallback(|| async { ApiError::method_not_allowed() }),
        )
        .route(
            "/agent/human/sessions/{id}/events",
            get(events).fallback(|| async { ApiError::method_not_allowed() }),
        )
}

fn internal(e: SessionError) -> ApiError {
    match e {
        SessionError::Closed => ApiError::forbidden(NOT_YOURS),
        SessionError::Internal(d) => ApiError::internal(d),
        SessionError::NotMigrated(d) => ApiError::paused().with_detail(d),
    }
}

async fn agents_of<A: App>(
    server: &ServerState<A>,
    session_id: &str,
) -> Result<Vec<AgentSession>, ApiError> {
    Ok(server
        .tokens()
        .list_by_session(session_id)
        .await?
        .iter()
        .filter(|r| matches!(r.status, TokenStatus::AwaitingClaude | TokenStatus::Active))
        .map(TokenRecord::to_agent_session)
        .collect())
}

async fn human_sessions<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let uid = match access(&server, &parts, Method::GET, None).await {
        Ok((uid, _)) => uid,
        Err(e) => return e.into_response(),
    };
    let owned = server.host().load_sessions_of(&uid).await;
    let mut sessions = Vec::with_capacity(owned.len());
    for s in &owned {
        let agents = match agents_of(&server, s.id()).await {
            Ok(agents) => agents,
            Err(e) => return e.into_response(),
        };
        sessions.push(json!({
            "sessionId": s.id(),
            "createdAt": s.created_at(),
            "pendingConfirms": s.pending().len(),
            "agents": agents,
            "kind": "hosted",
        }));
    }
    #[cfg(feature = "pairing")]
    {
        let mut paired = match super::human_paired::list_entries(&server, &uid).await {
            Ok(paired) => paired,
            Err(e) => return e.into_response(),
        };
        sessions.append(&mut paired);
    }
    json_ok(&json!({ "sessions": sessions }))
}

async fn human_session<A: App>(server: ServerState<A>, id: String, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    #[cfg(feature = "pairing")]
    {
        use super::human_paired::{owner_route, OwnerRoute};
        if let Some(answer) = owner_route(&server, &parts, &id, OwnerRoute::View).await {
            return answer;
        }
    }
    let session = match session_access(&server, &parts, Method::GET, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    // Read before the session's view, so no lock of the session is held across the await.
    let agents = match agents_of(&server, session.id()).await {
        Ok(agents) => agents,
        Err(e) => return e.into_response(),
    };
    let actions = match session.list_actions() {
        Ok(a) => a,
        Err(e) => return internal(e).into_response(),
    };
    // The owner's own data, whole (`docs/security.md` §The owner sees their own data).
    let owner = match session.owner_state() {
        Ok(owner) => owner,
        Err(e) => return internal(e).into_response(),
    };
    let view = HumanView {
        state: owner.state,
        hidden_from_agents: owner.hidden_from_agents,
        redacts: session.redacts(),
        actions,
        pending: session.pending(),
        log: session.recent_log(usize::MAX, None),
        last_event_id: session.last_event_id(),
        agents,
        work: session.running_work(),
    };
    match serde_json::to_string(&view) {
        Ok(text) => json_text_ok(text),
        Err(e) => ApiError::internal(format!("session view: {e}")).into_response(),
    }
}

/// The owner's view of a session: the whole state, `@redact` fields included.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HumanView {
    state: serde_json::Value,
    /// JSON Pointers of the values in `state` that agents do not see.
    hidden_from_agents: Vec<String>,
    /// Whether agents see less than `state` at all (the app redacts): the event stream's
    /// states are then the agents' view, and a console reads this view again on each.
    redacts: bool,
    actions: Vec<tea_agent_schema::protocol::Action>,
    pending: Vec<tea_agent_schema::protocol::ConfirmEntry>,
    log: Vec<tea_agent_schema::protocol::LogEntry>,
    last_event_id: u64,
    agents: Vec<AgentSession>,
    /// The running effects (`docs/semantics.md` §5.6).
    work: Vec<tea_agent_schema::protocol::Work>,
}

async fn human_dispatch<A: App>(server: ServerState<A>, id: String, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let session = match session_access(&server, &parts, Method::POST, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let result = async {
        let request: DispatchRequest = serde_json::from_value(read_json(body).await?)
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        let opts = dispatch_options(
            &request,
            Operation::Message.spec(),
            server.options().max_wait_ms(),
        );
        // The owner's answer shows their own data: with a redacting app, the diff and the
        // state after are the whole state's, read when the call arrives and when it answers.
        let whole = session.redacts() && opts.wait_for != WaitFor::None;
        let before = if whole {
            Some(session.whole_state().map_err(internal)?)
        } else {
            None
        };
        let mut result = session
            .dispatch_as_human(&request.msg.0, opts)
            .await
            .map_err(internal)?;
        if let (
            Some(before),
            SendResult::Dispatched {
                state_diff,
                state_after,
                ..
            },
        ) = (before, &mut result)
        {
            let after = session.whole_state().map_err(internal)?;
            *state_diff = crate::algo::diff::diff(&before, &after);
            if state_after.is_some() {
                *state_after = Some(after);
            }
        }
        Ok::<_, ApiError>(serde_json::to_value(result).unwrap_or_default())
    }
    .await;
    match result {
        Ok(body) => json_ok(&body),
        Err(e) => e.into_response(),
    }
}

async fn human_decide<A: App>(
    server: ServerState<A>,
    id: String,
    confirm_id: String,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let session = match session_access(&server, &parts, Method::POST, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let result = async {
        let mut fields = Fields::from_body(read_json(body).await?);
        let decision = fields.string_or_none("decision");
        let outcome = match decision.as_deref() {
            Some("approve") => session.approve(&confirm_id, fields.get("msg")).await,
            Some("reject") => session.reject(&confirm_id).await,
            _ => {
                return Err(ApiError::invalid(
                    r#"decision must be "approve" or "reject""#,
                ))
            }
        };
        outcome.map_err(|e| match e {
            EditedApprovalError::NotFound => ApiError::new(ErrorCode::NotFound),
            EditedApprovalError::AlreadyDecided(s) => ApiError::new(ErrorCode::Conflict)
                .with_detail(format!(
                    "confirmation {confirm_id} is already {}",
                    s.as_str()
                )),
            EditedApprovalError::Invalid(d) => ApiError::invalid(d),
            EditedApprovalError::Closed => ApiError::forbidden(NOT_YOURS),
            EditedApprovalError::NotStored(d) => ApiError::internal(format!(
                "the decision on confirmation {confirm_id} was not stored: {d}"
            )),
        })?;
        Ok(match decision.as_deref() {
            Some("approve") => json!({"status": "approved"}),
            _ => json!({"status": "rejected"}),
        })
    }
    .await;
    match result {
        Ok(body) => json_ok(&body),
        Err(e) => e.into_response(),
    }
}

/// `POST …/work/{work}/cancel`: the human cancels one running effect of the session
/// (`docs/semantics.md` §5.6): `{"status": "cancelled"}`, or `{"status": "not-running"}`
/// when it already ended.
async fn human_cancel<A: App>(
    server: ServerState<A>,
    id: String,
    work: String,
    req: Request,
) -> Response {
    let (parts, _) = req.into_parts();
    let session = match session_access(&server, &parts, Method::POST, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let Ok(work) = work.parse::<u64>() else {
        return ApiError::invalid("the work id must be a non-negative integer").into_response();
    };
    let status = if session.cancel_work(work) {
        "cancelled"
    } else {
        "not-running"
    };
    json_ok(&json!({ "status": status }))
}

/// Query of the transcript route: `tid` limits it to one agent token.
#[derive(Debug, Deserialize)]
pub(crate) struct TranscriptQuery {
    tid: Option<String>,
}

/// `GET …/transcript`: the session's transcript (`docs/lap.md` §6.1), as a file the console
/// downloads; 404 `not-found` when the session does not record one
/// (`HostConfig::transcripts`).
async fn human_transcript<A: App>(
    server: ServerState<A>,
    id: String,
    query: TranscriptQuery,
    req: Request,
) -> Response {
    let (parts, _) = req.into_parts();
    let session = match session_access(&server, &parts, Method::GET, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    if !session.records_transcript() {
        return ApiError::new(ErrorCode::NotFound)
            .with_detail("this server does not record transcripts (HostConfig::transcripts)")
            .into_response();
    }
    match serde_json::to_string(&session.transcript(query.tid.as_deref())) {
        Ok(text) => json_text_ok(text),
        Err(e) => ApiError::internal(format!("transcript: {e}")).into_response(),
    }
}

/// Query of the events route.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    #[serde(rename = "lastEventId")]
    last_event_id: Option<String>,
}

async fn human_events<A: App>(
    server: ServerState<A>,
    id: String,
    query: EventsQuery,
    req: Request,
) -> Response {
    let (parts, _) = req.into_parts();
    let session = match session_access(&server, &parts, Method::GET, &id).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let header_id = parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let last = header_id.or(query.last_event_id);
    let subscription = session.subscribe_anywhere(last.as_deref()).await;
    Sse::new(event_stream(subscription, server.stopped()))
        .keep_alive(
            KeepAlive::new()
                .interval(Duration::from_secs(15))
                .text("keepalive"),
        )
        .into_response()
}

/// The session's events until the server shuts down; then one last event, `shutting-down`,
/// that asks the browser to reconnect in a second (`retry`), and the end of the stream: the
/// `EventSource` reconnects with its `Last-Event-ID` and resumes on the next instance
/// (`docs/operations.md` §Shutdown).
fn event_stream(
    subscription: crate::engine::session::Subscription,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let stopped = Box::pin(stopped);
    // Counted in `agent_sse_subscribers` until the stream ends or its client goes away.
    let live = crate::telemetry::Live::sse_subscriber();
    stream::unfold(Some((subscription, stopped, live)), |state| async move {
        let (mut sub, mut stopped, live) = state?;
        tokio::select! {
            e = sub.next() => {
                let e = e?;
                let event = Event::default()
                    .id(e.id.to_string())
                    .event(e.name)
                    .data(e.text);
                Some((Ok(event), Some((sub, stopped, live))))
            }
            () = &mut stopped => {
                let event = Event::default()
                    .event("shutting-down")
                    .retry(Duration::from_secs(1))
                    .data("{}");
                Some((Ok(event), None))
            }
        }
    })
}
