//! The gate every call goes through, whatever the surface (`lap.md` §5.1): a credential is
//! verified to a token record, the record's session found, the rate limit taken; then the typed
//! request is read, the handler runs, and the success tail writes activation, touch, the
//! `read` log entry and the audit entry. `/message` also gets idempotency (§5.7) and runs on
//! its own task, so a caller that goes away never cuts a dispatch short. Every long call ends
//! with 403 `revoked` when its token is revoked meanwhile.

use std::panic::AssertUnwindSafe;

use agent_schema::protocol::{ErrorCode, LogKind};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use super::reply::Reply;
use super::table::Operation;
use super::{log_entry, Call, Handled};
use crate::app::App;
use crate::engine::session::Session;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::{
    verify_bearer, AuditEntry, Bucket, TokenRecord, TokenStatus, DEFAULT_ACTIVE_LABEL,
};

/// What answers an admitted caller's operations: the two kinds of session behind the table.
pub(crate) enum Backend<A: App> {
    /// A session hosted in this process.
    Hosted(Session<A>),
    /// A paired session (`pairing.md`): its app runs elsewhere and answers `rpc` frames over
    /// `/agent/ws` (`super::paired`).
    #[cfg(feature = "pairing")]
    Paired,
}

/// A caller the gate admitted: its token record and what answers for the token's session.
pub(crate) struct Caller<A: App> {
    /// The token record, as verified.
    pub(crate) record: TokenRecord,
    /// The session's backend.
    pub(crate) backend: Backend<A>,
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
/// `Bearer agt_…`): 401/403 for the token, 503 paused for a closed or unpaired session, 429.
pub(crate) async fn admit<A: App>(
    server: &ServerState<A>,
    authorization: Option<&str>,
) -> Result<Caller<A>, ApiError> {
    admit_credential(server, Credential::Bearer(authorization)).await
}

/// [`admit`] for any [`Credential`].
pub(crate) async fn admit_credential<A: App>(
    server: &ServerState<A>,
    credential: Credential<'_>,
) -> Result<Caller<A>, ApiError> {
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
    let backend = backend_of(server, &record).await?;
    server
        .inner
        .limiter
        .check(&record.tid, Bucket::Token)
        .await?;
    Ok(Caller { record, backend })
}

/// The backend of `record`'s session: 503 `paused` when the host closed it, or when a paired
/// session has no socket (with the reconnect hint of `pairing.md`).
async fn backend_of<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
) -> Result<Backend<A>, ApiError> {
    #[cfg(feature = "pairing")]
    if crate::engine::paired::is_paired(record) {
        return super::paired::check_paired(server, record).map(|()| Backend::Paired);
    }
    server
        .host()
        .load_session(&record.session_id)
        .await
        .map(Backend::Hosted)
        .ok_or_else(ApiError::paused)
}

/// An operation's handler, with its answer serialized: the caller's backend decides which of
/// the operation's two implementations runs (`super::table`).
pub(crate) type Handler<A, R> =
    for<'a> fn(&'a Resolved<'a, A>, R) -> BoxFuture<'a, Result<Handled, ApiError>>;

/// What a handler receives: the state, the caller and, for a paired session, the request
/// body as it came (relayed as the `rpc` arguments).
pub(crate) struct Resolved<'a, A: App> {
    /// The shared state.
    pub(crate) server: &'a ServerState<A>,
    /// The caller's token record.
    pub(crate) record: &'a TokenRecord,
    /// The caller's backend.
    pub(crate) backend: &'a Backend<A>,
    /// The request body (an object, or `{}`), for a paired session's `rpc` arguments.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) args: Value,
}

impl<'a, A: App> Resolved<'a, A> {
    /// The hosted call, when the backend is a hosted session.
    pub(crate) fn hosted(&self) -> Option<Call<'a, A>> {
        match self.backend {
            Backend::Hosted(session) => Some(Call {
                server: self.server,
                record: self.record,
                session,
            }),
            #[cfg(feature = "pairing")]
            Backend::Paired => None,
        }
    }
}

/// Runs `op` for an admitted caller with its typed `request` (steps 7–9, plus idempotency for
/// a keyed `/message`). Never fails: an error is an error reply. `keyed` is the request's
/// `(idempotencyKey, msg)`, when the operation is keyed and the request carries one.
pub(crate) async fn serve<A: App, R: Send + 'static>(
    server: &ServerState<A>,
    caller: Caller<A>,
    op: Operation,
    request: R,
    args: Value,
    keyed: Option<(String, Value)>,
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
        let run = run(server.clone(), op, caller, request, args, handler);
        return with_revocation(server, &tid, run).await;
    }
    let record = caller.record.clone();
    let work = run(server.clone(), op, caller, request, args, handler);
    super::detached::run_keyed(server, &record, keyed, work).await
}

/// Runs the handler (a panic is a 500) and the success tail; a failure inside the server logs
/// an `error` entry in a hosted session's log.
async fn run<A: App, R: Send + 'static>(
    server: ServerState<A>,
    op: Operation,
    caller: Caller<A>,
    request: R,
    args: Value,
    handler: Handler<A, R>,
) -> Reply {
    let resolved = Resolved {
        server: &server,
        record: &caller.record,
        backend: &caller.backend,
        args,
    };
    let handled = AssertUnwindSafe(handler(&resolved, request))
        .catch_unwind()
        .await
        .unwrap_or_else(|p| {
            Err(ApiError::internal(format!(
                "handler panicked: {}",
                crate::engine::session::panic_text(&*p)
            )))
        });
    match handled {
        Ok(h) => success_tail(&resolved, h).await,
        Err(e) => {
            match &caller.backend {
                Backend::Hosted(session)
                    if e.status().is_server_error() && e.code() != ErrorCode::Paused =>
                {
                    let entry = log_entry(
                        LogKind::Error,
                        op.spec().label.to_string(),
                        &caller.record.tid,
                        server.now(),
                    );
                    session.append_log(entry);
                }
                _ => {}
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

async fn success_tail<A: App>(call: &Resolved<'_, A>, handled: Handled) -> Reply {
    let server = call.server;
    let record = call.record;
    #[cfg(feature = "pairing")]
    if matches!(call.backend, Backend::Paired) {
        super::paired::activated(server, record);
    }
    activate(server, record).await;
    if let (Some(intent), Backend::Hosted(session)) = (handled.read, call.backend) {
        let entry = log_entry(LogKind::Read, intent, &record.tid, server.now());
        session.append_log(entry);
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
