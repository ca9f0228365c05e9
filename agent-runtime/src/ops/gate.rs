//! The gate every call goes through, whatever the surface (`lap.md` §5.1): a credential is
//! verified to a token record, the record's session found, the rate limit taken; then the typed
//! request is read, the handler runs, and the success tail writes activation, touch, the
//! `read` log entry and the audit entry. `/message` also gets idempotency (§5.7) and runs on
//! its own task, so a caller that goes away never cuts a dispatch short. Every long call ends
//! with 403 `revoked` when its token is revoked meanwhile.

use std::panic::AssertUnwindSafe;

use agent_schema::protocol::{
    ConfirmResultRequest, EmptyRequest, ErrorCode, LogKind, MessageRequest, NarrateRequest,
    QueryDomRequest, QueryStateRequest, RecentActionsRequest, StateRequest, WaitRequest,
    WouldDispatchRequest,
};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use super::reply::Reply;
use super::table::Operation;
use super::{log_entry, Call, Handled};
use crate::app::App;
use crate::ops::error::ApiError;
use crate::security::{
    verify_bearer, AuditEntry, Bucket, TokenRecord, TokenStatus, DEFAULT_ACTIVE_LABEL,
};
use crate::ops::ServerState;
use crate::engine::session::Session;

/// A caller the gate admitted: its token record and the token's session.
pub(crate) struct Caller<A: App> {
    /// The token record, as verified.
    pub record: TokenRecord,
    /// The token's session.
    pub session: Session<A>,
}

/// The two kinds of session a token can drive.
pub(crate) enum Admission<A: App> {
    /// A session hosted in this process, through the whole gate.
    Hosted(Caller<A>),
    /// A paired session (`pairing.md`): the token is verified; the pairing check, the rate
    /// limit and the rest run in [`crate::ops::paired::serve`].
    #[cfg(feature = "pairing")]
    Paired(TokenRecord),
}

/// What a caller presents to the gate.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Credential<'a> {
    /// The value of an `Authorization` header (`Bearer agt_…`), if any.
    Bearer(Option<&'a str>),
    /// An in-process trusted credential: the id of a token this server verified earlier (an
    /// MCP session bound with `connect_session` and rebuilt after a restart, whose raw token
    /// is not kept). The record's expiry and status are checked as for a bearer.
    #[cfg(feature = "mcp")]
    Tid(&'a str),
}

/// Steps 2–5 of the gate for `authorization` (the value of an `Authorization` header,
/// `Bearer agt_…`): 401/403 for the token, 503 paused for a closed session, 429.
pub(crate) async fn admit<A: App>(
    server: &ServerState<A>,
    authorization: Option<&str>,
) -> Result<Admission<A>, ApiError> {
    admit_credential(server, Credential::Bearer(authorization)).await
}

/// [`admit`] for any [`Credential`].
pub(crate) async fn admit_credential<A: App>(
    server: &ServerState<A>,
    credential: Credential<'_>,
) -> Result<Admission<A>, ApiError> {
    let (tokens, now, ttl) = (
        &**server.tokens(),
        server.now(),
        server.options().sliding_ttl_ms,
    );
    let record = match credential {
        Credential::Bearer(authorization) => verify_bearer(authorization, tokens, now, ttl).await,
        #[cfg(feature = "mcp")]
        Credential::Tid(tid) => crate::security::verify_tid(tid, tokens, now, ttl).await,
    }?;
    #[cfg(feature = "pairing")]
    if crate::engine::paired::is_paired(&record) {
        return Ok(Admission::Paired(record));
    }
    let session = server
        .host()
        .load_session(&record.session_id)
        .await
        .ok_or_else(ApiError::paused)?;
    server
        .inner
        .limiter
        .check(&record.tid, Bucket::Token)
        .await?;
    Ok(Admission::Hosted(Caller { record, session }))
}

/// What a request may carry for the gate: an idempotency key with the message it guards.
pub(crate) trait OpRequest: Send + 'static {
    /// `(idempotencyKey, msg)`, on a keyed `/message`.
    fn idempotency(&self) -> Option<(&str, &Value)> {
        None
    }
}

impl OpRequest for MessageRequest {
    fn idempotency(&self) -> Option<(&str, &Value)> {
        let key = self.idempotency_key.as_deref()?;
        Some((key, &self.dispatch.msg.0))
    }
}

impl OpRequest for EmptyRequest {}
impl OpRequest for StateRequest {}
impl OpRequest for QueryStateRequest {}
impl OpRequest for RecentActionsRequest {}
impl OpRequest for WouldDispatchRequest {}
impl OpRequest for ConfirmResultRequest {}
impl OpRequest for WaitRequest {}
impl OpRequest for NarrateRequest {}
impl OpRequest for QueryDomRequest {}

/// An operation's handler, with its answer serialized.
pub(crate) type Handler<A, R> =
    for<'a> fn(&'a Call<'a, A>, R) -> BoxFuture<'a, Result<Handled, ApiError>>;

/// Runs `op` for an admitted caller with its typed `request` (steps 7–9, plus idempotency for
/// a keyed `/message`). Never fails: an error is an error reply.
pub(crate) async fn serve<A: App, R: OpRequest>(
    server: &ServerState<A>,
    caller: Caller<A>,
    op: Operation,
    request: R,
    handler: Handler<A, R>,
) -> Reply {
    let conduct = op.spec().conduct;
    if conduct.touch_on_arrival {
        server
            .tokens()
            .touch(&caller.record.tid, server.now())
            .await;
    }
    let tid = caller.record.tid.clone();
    if !conduct.detached {
        let run = run(server.clone(), op, caller, request, handler);
        return with_revocation(server, &tid, run).await;
    }
    let keyed = request
        .idempotency()
        .map(|(key, msg)| (key.to_owned(), msg.clone()));
    let record = caller.record.clone();
    let work = run(server.clone(), op, caller, request, handler);
    super::detached::run_keyed(server, &record, keyed, work).await
}

/// Runs the handler (a panic is a 500) and the success tail; a failure inside the server logs
/// an `error` entry.
async fn run<A: App, R: OpRequest>(
    server: ServerState<A>,
    op: Operation,
    caller: Caller<A>,
    request: R,
    handler: Handler<A, R>,
) -> Reply {
    let call = Call {
        server: &server,
        record: &caller.record,
        session: &caller.session,
    };
    let handled = AssertUnwindSafe(handler(&call, request))
        .catch_unwind()
        .await
        .unwrap_or_else(|p| {
            Err(ApiError::internal(format!(
                "handler panicked: {}",
                crate::engine::session::panic_text(&*p)
            )))
        });
    match handled {
        Ok(h) => success_tail(&call, h).await,
        Err(e) => {
            if e.status.is_server_error() && e.code != ErrorCode::Paused {
                let entry = log_entry(
                    LogKind::Error,
                    op.spec().label.to_string(),
                    call.tid(),
                    server.now(),
                );
                caller.session.append_log(entry);
            }
            Reply::from_error(&e)
        }
    }
}

/// Activation (`awaiting-claude` → `active`) or touch of a successful call.
pub(crate) async fn activate<A: App>(server: &ServerState<A>, record: &TokenRecord) {
    let now = server.now();
    if record.status == TokenStatus::AwaitingClaude {
        let label = record.label.as_deref().unwrap_or(DEFAULT_ACTIVE_LABEL);
        server.tokens().mark_active(&record.tid, label, now).await;
    } else {
        server.tokens().touch(&record.tid, now).await;
    }
}

async fn success_tail<A: App>(call: &Call<'_, A>, handled: Handled) -> Reply {
    let server = call.server;
    let record = call.record;
    activate(server, record).await;
    if let Some(intent) = handled.read {
        let entry = log_entry(LogKind::Read, intent, &record.tid, server.now());
        call.session.append_log(entry);
    }
    let (event, detail) = handled.audit;
    let entry = AuditEntry::new(server.now(), event, detail)
        .with_tid(record.tid.clone())
        .with_uid(record.uid.clone());
    server.audit(entry).await;
    Reply::ok(handled.body)
}

/// Races `work` against the revocation of `tid` (→ 403 `revoked`).
pub(crate) async fn with_revocation<A: App>(
    server: &ServerState<A>,
    tid: &str,
    work: impl std::future::Future<Output = Reply>,
) -> Reply {
    let mut revoked = server.inner.revocations.subscribe();
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
