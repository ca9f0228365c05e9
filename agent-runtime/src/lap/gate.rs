//! The LAP gate (`lap.md` §5.1): body cap, bearer, session, rate limit, body, handler, and the
//! success tail (activation, touch, log, audit). `/message` also gets idempotency (§5.7) and
//! runs on its own task, so a client that disconnects never cuts a dispatch short.

use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures::FutureExt;
use serde_json::Value;

use super::body::{check_content_length, read_json, Fields};
use super::endpoints::{check_message_request, handle, Endpoint, Handled, Limits};
use super::error::ApiError;
use super::idempotency::{Claim, StoredAnswer};
use super::server::AgentServer;
use crate::app::App;
use crate::security::{
    verify_bearer, AuditEntry, Bucket, TokenRecord, TokenStatus, DEFAULT_ACTIVE_LABEL,
};
use crate::session::{activity, Session};
use agent_schema::protocol::LogKind;

/// A finished answer, kept as bytes so an idempotent repeat can replay it exactly.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: StatusCode,
    body: String,
    headers: Vec<(String, String)>,
}

impl Reply {
    fn ok(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            body,
            headers: Vec::new(),
        }
    }

    fn from_error(e: &ApiError) -> Reply {
        let mut headers = Vec::new();
        if let Some(r) = e.reconnect {
            headers.push(("x-llui-reconnect".to_string(), r.to_string()));
        }
        Reply {
            status: e.status,
            body: e.body().to_string(),
            headers,
        }
    }

    fn into_stored(self) -> StoredAnswer {
        StoredAnswer {
            status: self.status,
            body: self.body,
            headers: self.headers,
        }
    }

    fn from_stored(s: StoredAnswer) -> Reply {
        Reply {
            status: s.status,
            body: s.body,
            headers: s.headers,
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (k, v) in self.headers {
            if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
                headers.insert(k, v);
            }
        }
        response
    }
}

/// The LAP routes: one per endpoint under the base path; anything else falls through.
pub(crate) fn lap_routes<A: App>(server: &AgentServer<A>) -> Router {
    let base = server
        .options()
        .lap_base_path
        .trim_end_matches('/')
        .to_string();
    let mut router = Router::new();
    for endpoint in Endpoint::ALL {
        let server = server.clone();
        router = router.route(
            &format!("{base}{}", endpoint.tail()),
            any(move |req: Request| lap_call(server.clone(), endpoint, req)),
        );
    }
    router
}

struct Caller<A: App> {
    record: TokenRecord,
    session: Session<A>,
}

/// Steps 1–5 of the gate.
async fn admit<A: App>(
    server: &AgentServer<A>,
    parts: &axum::http::request::Parts,
) -> Result<Caller<A>, ApiError> {
    check_content_length(&parts.headers)?;
    let auth = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let tokens = &server.inner.tokens;
    // A revoked record is refused by `verify_bearer` (403 `revoked`).
    let record = verify_bearer(
        auth,
        &**tokens,
        server.now(),
        server.options().sliding_ttl_ms,
    )
    .await?;
    let session = server
        .host()
        .session(&record.session_id)
        .ok_or_else(ApiError::paused)?;
    server
        .inner
        .limiter
        .check(&record.tid, Bucket::Token)
        .await?;
    Ok(Caller { record, session })
}

async fn lap_call<A: App>(server: AgentServer<A>, endpoint: Endpoint, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let caller = match admit(&server, &parts).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let fields = match read_json(body).await {
        Ok(v) => Fields::from_body(v),
        Err(e) => return e.into_response(),
    };
    let tid = caller.record.tid.clone();
    if matches!(endpoint, Endpoint::Wait | Endpoint::ConfirmResult) {
        server.inner.tokens.touch(&tid, server.now()).await;
    }
    if endpoint == Endpoint::Message {
        return message_call(server, caller, fields).await.into_response();
    }
    let run = run_endpoint(server.clone(), endpoint, caller, fields);
    with_revocation(&server, &tid, run).await.into_response()
}

/// Runs the handler and the success tail; failures log an `error` entry.
async fn run_endpoint<A: App>(
    server: AgentServer<A>,
    endpoint: Endpoint,
    caller: Caller<A>,
    fields: Fields,
) -> Reply {
    let limits = Limits {
        max_wait_ms: server.options().max_wait_ms,
    };
    let tid = caller.record.tid.clone();
    let describe = server.host().describe_json();
    let handled = AssertUnwindSafe(handle(
        endpoint,
        &caller.session,
        describe,
        &tid,
        fields.clone(),
        limits,
    ))
    .catch_unwind()
    .await
    .unwrap_or_else(|p| {
        Err(ApiError::internal(format!(
            "handler panicked: {}",
            crate::session::panic_text(&*p)
        )))
    });
    match handled {
        Ok(h) => success_tail(&server, endpoint, &caller, &fields, h).await,
        Err(e) => {
            if e.status.is_server_error() && e.code != "paused" {
                let mut entry = activity::entry(LogKind::Error, server.now());
                entry.intent = Some(endpoint.error_label().to_string());
                entry.tid = Some(tid);
                caller.session.append_log(entry);
            }
            Reply::from_error(&e)
        }
    }
}

/// Activation and touch of a successful call.
async fn activate<A: App>(server: &AgentServer<A>, record: &TokenRecord) {
    let now = server.now();
    if record.status == TokenStatus::AwaitingClaude {
        let label = record.label.as_deref().unwrap_or(DEFAULT_ACTIVE_LABEL);
        server
            .inner
            .tokens
            .mark_active(&record.tid, label, now)
            .await;
    } else {
        server.inner.tokens.touch(&record.tid, now).await;
    }
}

async fn success_tail<A: App>(
    server: &AgentServer<A>,
    endpoint: Endpoint,
    caller: &Caller<A>,
    fields: &Fields,
    handled: Handled,
) -> Reply {
    let record = &caller.record;
    activate(server, record).await;
    if handled.log_read {
        if let Some(entry) = endpoint.read_entry(fields, &record.tid, server.now()) {
            caller.session.append_log(entry);
        }
    }
    if let Some((event, detail)) = handled.audit {
        let entry = AuditEntry::new(server.now(), event, detail)
            .with_tid(record.tid.clone())
            .with_uid(record.uid.clone());
        server.audit(entry).await;
    }
    Reply::ok(handled.body.into_json())
}

/// Races a long-poll against the revocation of `tid` (→ 403 `revoked`).
async fn with_revocation<A: App>(
    server: &AgentServer<A>,
    tid: &str,
    work: impl std::future::Future<Output = Reply>,
) -> Reply {
    let mut revoked = server.inner.revocations.subscribe();
    let tid = tid.to_string();
    let wait_revoked = async move {
        loop {
            match revoked.recv().await {
                Ok(t) if t == tid => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    std::future::pending::<()>().await
                }
            }
        }
    };
    tokio::select! {
        reply = work => reply,
        _ = wait_revoked => Reply::from_error(&ApiError::revoked()),
    }
}

async fn message_call<A: App>(
    server: AgentServer<A>,
    caller: Caller<A>,
    fields: Fields,
) -> Response {
    let limits = Limits {
        max_wait_ms: server.options().max_wait_ms,
    };
    let key = match check_message_request(&fields, limits) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let tid = caller.record.tid.clone();
    let msg = fields.get("msg").cloned().unwrap_or(Value::Null);
    let first = match &key {
        None => None,
        Some(key) => match server
            .inner
            .idempotency
            .claim(&tid, key, &msg, server.now())
        {
            Claim::First(tx) => Some(tx),
            Claim::Repeat(record) => {
                if !record.same_message(&msg) {
                    return ApiError::new(StatusCode::CONFLICT, "conflict")
                        .with_detail(format!(
                            "idempotencyKey {} was used for a different message",
                            key
                        ))
                        .into_response();
                }
                let answer = with_revocation(&server, &tid, async {
                    match record.answer().await {
                        Some(a) => Reply::from_stored(a),
                        None => Reply::from_error(&ApiError::internal(
                            "the first call with this idempotencyKey failed without an answer",
                        )),
                    }
                })
                .await;
                if answer.status == StatusCode::OK {
                    activate(&server, &caller.record).await;
                }
                let mut response = answer.into_response();
                response.headers_mut().insert(
                    HeaderName::from_static("idempotent-replayed"),
                    HeaderValue::from_static("true"),
                );
                return response;
            }
        },
    };
    // The dispatch runs to completion on its own task even if this request is dropped.
    let task_server = server.clone();
    let task = tokio::spawn(async move {
        let reply = run_endpoint(task_server, Endpoint::Message, caller, fields).await;
        if let Some(tx) = first {
            tx.send_replace(Some(reply.clone().into_stored()));
        }
        reply
    });
    let reply = with_revocation(&server, &tid, async {
        task.await.unwrap_or_else(|e| {
            Reply::from_error(&ApiError::internal(format!("message task failed: {e}")))
        })
    })
    .await;
    reply.into_response()
}
