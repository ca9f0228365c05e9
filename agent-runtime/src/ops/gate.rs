//! The gate every call goes through, whatever the surface (`docs/lap.md` §5.1): a credential is
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

use super::call::{log_entry, Backend, Caller, Handled, Resolved};
use super::error::ApiError;
use super::reply::Reply;
use super::spec::OperationSpec;
use super::state::ServerState;
use super::tail::{activate, with_revocation};
use crate::app::App;
use crate::engine::session::keyed::KeyedDispatch;
use crate::security::{verify_bearer, AuditEntry, Bucket, TokenRecord};

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
    let caller = find_caller(server, credential).await?;
    take_rate_limit(server, &caller).await?;
    Ok(caller)
}

/// Steps 2–4 of the gate: the credential verified to its record (401/403) and the record's
/// session found (503 paused), without the rate limit (taken by [`take_rate_limit`]).
pub(crate) async fn find_caller<A: App>(
    server: &ServerState<A>,
    credential: Credential<'_>,
) -> Result<Caller<A>, ApiError> {
    let (tokens, now, ttl) = (
        &**server.tokens(),
        server.now(),
        server.options().sliding_ttl_ms(),
    );
    let record = match credential {
        Credential::Bearer(authorization) => verify_bearer(authorization, tokens, now, ttl).await,
        #[cfg(feature = "mcp")]
        Credential::Tid(tid) => crate::security::verify_tid(tid, tokens, now, ttl).await,
    }?;
    caller_of(server, record).await
}

/// Step 4 of the gate for a token record verified just before in the same request (an MCP
/// 2026-07-28 request whose bearer the admission layer verified): the record's session (503
/// paused), without the rate limit.
pub(crate) async fn caller_of<A: App>(
    server: &ServerState<A>,
    record: TokenRecord,
) -> Result<Caller<A>, ApiError> {
    let backend = backend_of(server, &record).await?;
    Ok(Caller { record, backend })
}

/// Step 5 of the gate: the token's rate limit (429).
pub(crate) async fn take_rate_limit<A: App>(
    server: &ServerState<A>,
    caller: &Caller<A>,
) -> Result<(), ApiError> {
    server
        .limiter()
        .check(&caller.record.tid, Bucket::Token)
        .await?;
    Ok(())
}

/// The backend of `record`'s session: 503 `paused` when the host closed it (or its stored
/// state cannot be migrated, saying why), or when a paired
/// session has no socket (with the reconnect hint of `docs/pairing.md`).
pub(super) async fn backend_of<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
) -> Result<Backend<A>, ApiError> {
    #[cfg(feature = "pairing")]
    if crate::engine::paired::is_paired(record) {
        return super::paired::check_paired(server, record).map(|()| Backend::Paired);
    }
    match server.host().try_load_session(&record.session_id).await {
        Ok(Some(session)) => Ok(Backend::Hosted(session)),
        Ok(None) => Err(ApiError::paused()),
        // Kept in the store, not loaded: `docs/stores.md` §Upgrades.
        Err(refused) => Err(ApiError::paused().with_detail(refused.reason)),
    }
}

/// An operation's handler, with its answer serialized: the caller's backend decides which of
/// the operation's two implementations runs (`super::table`). The third argument is the
/// `idempotencyKey` a keyed operation's hosted handler hands to its dispatch, for the commit
/// to record (`super::keyed`); `None` for every other call.
pub(crate) type Handler<A, R> = for<'a> fn(
    &'a Resolved<'a, A>,
    R,
    Option<KeyedDispatch>,
) -> BoxFuture<'a, Result<Handled, ApiError>>;

/// Runs the operation of `spec` for an admitted caller with its typed `request` (steps 7–9, plus idempotency for
/// a keyed `/message`). Never fails: an error is an error reply. `keyed` is the request's
/// `(idempotencyKey, msg)`, when the operation is keyed and the request carries one.
pub(crate) async fn serve<A: App, R: Send + 'static>(
    server: &ServerState<A>,
    caller: Caller<A>,
    spec: &'static OperationSpec,
    request: R,
    args: Value,
    keyed: Option<(String, Value)>,
    handler: Handler<A, R>,
) -> Reply {
    let conduct = spec.conduct;
    if conduct.touch_on_arrival {
        let touched =
            crate::security::lifecycle::touch(&**server.tokens(), &caller.record.tid, server.now())
                .await;
        if let Err(e) = touched {
            let refused = crate::security::LifecycleError::Store(e);
            super::tail::store_failed(server, &caller.record, "touch").await;
            return Reply::error(refused.into());
        }
    }
    let tid = caller.record.tid.clone();
    if !conduct.detached {
        let run = run(server.clone(), spec, caller, request, args, None, handler);
        return with_revocation(server, &tid, run).await;
    }
    let record = caller.record.clone();
    let task_server = server.clone();
    super::keyed::run_keyed(server, &record, keyed, move |key| {
        run(task_server, spec, caller, request, args, key, handler)
    })
    .await
}

/// Runs the handler with `key` (a panic is a 500) and the success tail; a failure inside the
/// server logs an `error` entry in a hosted session's log.
async fn run<A: App, R: Send + 'static>(
    server: ServerState<A>,
    spec: &'static OperationSpec,
    caller: Caller<A>,
    request: R,
    args: Value,
    key: Option<KeyedDispatch>,
    handler: Handler<A, R>,
) -> Reply {
    let resolved = Resolved {
        server: &server,
        record: &caller.record,
        backend: &caller.backend,
        spec,
        args,
    };
    let handled = AssertUnwindSafe(handler(&resolved, request, key))
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
                        spec.label.to_string(),
                        &caller.record.tid,
                        server.now(),
                    );
                    session.append_log(entry);
                }
                _ => {}
            }
            Reply::error(e)
        }
    }
}

async fn success_tail<A: App>(call: &Resolved<'_, A>, handled: Handled) -> Reply {
    let server = call.server;
    let record = call.record;
    let activated = match activate(server, record).await {
        Ok(activated) => activated,
        Err(e) => return Reply::error(e),
    };
    #[cfg(feature = "pairing")]
    if activated && matches!(call.backend, Backend::Paired) {
        super::paired::activated(server, record);
    }
    #[cfg(not(feature = "pairing"))]
    let _ = activated;
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
