//! The gate every call goes through, whatever the surface (`docs/lap.md` §5.1): a credential is
//! verified to a token record, the record's session found, the rate limit taken; then the typed
//! request is read, the handler runs, and the success tail writes activation, touch, the
//! `read` log entry and the audit entry. `/message` also gets idempotency (§5.7) and runs on
//! its own task, so a caller that goes away never cuts a dispatch short. Every long call ends
//! with 403 `revoked` when its token is revoked meanwhile.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;
use tea_agent_schema::protocol::{ErrorCode, LogKind};

use super::backend::{Caller, Served, SessionBackend};
use super::context::{log_entry, Call, Serialized};
use super::error::ApiError;
use super::hosted::HostedSession;
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
    /// The value of an `Authorization` header presented at `/agent/mcp`: an `agt_` token, or,
    /// with OAuth on, an access token of a grant (whose audience is `/agent/mcp` alone, so
    /// LAP's [`Credential::Bearer`] never takes one).
    #[cfg(feature = "mcp")]
    McpBearer(Option<&'a str>),
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
) -> Result<Caller, ApiError> {
    admit_credential(server, Credential::Bearer(authorization)).await
}

/// [`admit`] for any [`Credential`].
pub(crate) async fn admit_credential<A: App>(
    server: &ServerState<A>,
    credential: Credential<'_>,
) -> Result<Caller, ApiError> {
    let caller = find_caller(server, credential).await?;
    take_rate_limit(server, &caller).await?;
    Ok(caller)
}

/// Steps 2–4 of the gate: the credential verified to its record (401/403) and the record's
/// session found (503 paused), without the rate limit (taken by [`take_rate_limit`]).
pub(crate) async fn find_caller<A: App>(
    server: &ServerState<A>,
    credential: Credential<'_>,
) -> Result<Caller, ApiError> {
    let (tokens, now, ttl) = (
        &**server.tokens(),
        server.now(),
        server.options().sliding_ttl_ms(),
    );
    let record = match credential {
        Credential::Bearer(authorization) => verify_bearer(authorization, tokens, now, ttl).await,
        #[cfg(feature = "mcp")]
        Credential::McpBearer(authorization) => verify_mcp_bearer(server, authorization).await,
        #[cfg(feature = "mcp")]
        Credential::Tid(tid) => crate::security::verify_tid(tid, tokens, now, ttl).await,
    }?;
    caller_of(server, record).await
}

/// Verifies the bearer of a request to `/agent/mcp` (the value of its `Authorization`
/// header): an OAuth access token (`Bearer oat_…`) when OAuth is on, else an `agt_` token.
#[cfg(feature = "mcp")]
pub(crate) async fn verify_mcp_bearer<A: App>(
    server: &ServerState<A>,
    authorization: Option<&str>,
) -> Result<TokenRecord, crate::security::AuthError> {
    let (tokens, now, ttl) = (
        &**server.tokens(),
        server.now(),
        server.options().sliding_ttl_ms(),
    );
    #[cfg(feature = "oauth")]
    if let Some(oauth) = server.oauth() {
        if crate::security::oauth::is_access_token(authorization) {
            let verified =
                crate::security::oauth::verify_access(authorization, oauth, tokens, now, ttl);
            return verified.await;
        }
    }
    verify_bearer(authorization, tokens, now, ttl).await
}

/// Step 4 of the gate for a token record verified just before in the same request (an MCP
/// 2026-07-28 request whose bearer the admission layer verified): the record's session (503
/// paused), without the rate limit.
pub(crate) async fn caller_of<A: App>(
    server: &ServerState<A>,
    record: TokenRecord,
) -> Result<Caller, ApiError> {
    let backend = backend_of(server, &record).await?;
    Ok(Caller {
        record,
        backend,
        follow: None,
        proposed: None,
    })
}

/// Step 5 of the gate: the token's rate limit (429).
pub(crate) async fn take_rate_limit<A: App>(
    server: &ServerState<A>,
    caller: &Caller,
) -> Result<(), ApiError> {
    let taken = server.take_rate(&caller.record.tid, Bucket::Token);
    if let Err(e) = taken.await {
        if matches!(e, crate::security::Refusal::Limited(_)) {
            crate::telemetry::rate_limited(Bucket::Token.as_str());
        }
        return Err(e.into());
    }
    Ok(())
}

/// The backend of `record`'s session: 503 `paused` when the host closed it (or its stored
/// state cannot be migrated, saying why), or when a paired
/// session has no socket (with the reconnect hint of `docs/pairing.md`).
pub(super) async fn backend_of<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
) -> Result<Arc<dyn SessionBackend>, ApiError> {
    #[cfg(feature = "pairing")]
    if crate::engine::paired::drives_paired_session(record) {
        // The socket on another replica of the fleet: the call is carried there.
        #[cfg(feature = "fleet")]
        if let Some(fleet) = &server.pairing().fleet {
            if !server.pairing().hub.has_socket(&record.tid) {
                return super::fleet::backend_elsewhere(server, fleet, record).await;
            }
        }
        super::paired::check_paired(server, record)?;
        let relay = super::paired_backend::PairedRelay::new(server.clone());
        return Ok(Arc::new(relay));
    }
    match server.host().try_load_session(&record.session_id).await {
        Ok(Some(session)) => {
            let (host, max_wait_ms) = (server.host().clone(), server.options().max_wait_ms());
            Ok(Arc::new(HostedSession::new(session, host, max_wait_ms)))
        }
        Ok(None) => Err(ApiError::paused()),
        // Kept in the store, not loaded: `docs/stores.md` §Upgrades.
        Err(refused) => Err(ApiError::paused().with_detail(refused.reason)),
    }
}

/// An operation's method on the caller's backend (`super::table`). The last argument is the
/// `idempotencyKey` a keyed operation hands to a hosted session's dispatch, for the commit to
/// record (`super::keyed`); `None` for every other call.
pub(crate) type Handler<R> =
    for<'a> fn(&'a dyn SessionBackend, &'a Call<'a>, R, Option<KeyedDispatch>) -> Served<'a>;

/// Runs the operation of `spec` for an admitted caller with its typed `request` (steps 7–9,
/// plus idempotency for a keyed `/message`). Never fails: an error is an error reply. `keyed`
/// is the request's `(idempotencyKey, msg)`, when the operation is keyed and the request
/// carries one.
pub(crate) async fn serve<A: App, R: Send + 'static>(
    server: &ServerState<A>,
    caller: Caller,
    spec: &'static OperationSpec,
    request: R,
    args: Value,
    keyed: Option<(String, Value)>,
    handler: Handler<R>,
) -> Reply {
    if !crate::security::scopes::allows(caller.record.scope.as_deref(), spec.scope) {
        return Reply::error(ApiError::insufficient_scope(spec));
    }
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
        if !conduct.touch_on_arrival {
            return with_revocation(server, &tid, run).await;
        }
        // A long poll ends when the server shuts down, with a hint to call again
        // (`docs/operations.md` §Shutdown): it reads, so nothing is lost. `biased`: one that
        // arrives after the shutdown began is answered before it starts waiting.
        let stopped = server.stopped();
        return tokio::select! {
            biased;
            () = stopped => Reply::error(ApiError::shutting_down()),
            reply = with_revocation(server, &tid, run) => reply,
        };
    }
    let record = caller.record.clone();
    let task_server = server.clone();
    let work: super::keyed::KeyedWork =
        Box::new(move |key| Box::pin(run(task_server, spec, caller, request, args, key, handler)));
    super::keyed::run_keyed(server, &record, keyed, work).await
}

/// Runs the handler with `key` (a panic is a 500) and the success tail; a failure inside the
/// server logs an `error` entry in a hosted session's log.
async fn run<A: App, R: Send + 'static>(
    server: ServerState<A>,
    spec: &'static OperationSpec,
    caller: Caller,
    request: R,
    args: Value,
    key: Option<KeyedDispatch>,
    handler: Handler<R>,
) -> Reply {
    let call = Call {
        record: &caller.record,
        spec,
        args,
        follow: caller.follow.clone(),
        proposed: caller.proposed.clone(),
    };
    let served = AssertUnwindSafe(handler(&*caller.backend, &call, request, key))
        .catch_unwind()
        .await
        .unwrap_or_else(|p| {
            Err(ApiError::internal(format!(
                "handler panicked: {}",
                crate::engine::session::panic_text(&*p)
            )))
        });
    match served {
        Ok(served) => success_tail(&server, &caller, served).await,
        Err(e) => {
            if e.status().is_server_error() && e.code() != ErrorCode::Paused {
                let entry = log_entry(
                    LogKind::Error,
                    spec.label.to_string(),
                    &caller.record.tid,
                    server.now(),
                );
                caller.backend.append_log(entry);
            }
            Reply::error(e)
        }
    }
}

async fn success_tail<A: App>(
    server: &ServerState<A>,
    caller: &Caller,
    served: Serialized,
) -> Reply {
    let record = &caller.record;
    let activated = match activate(server, record).await {
        Ok(activated) => activated,
        Err(e) => return Reply::error(e),
    };
    if activated {
        caller.backend.activated(record);
    }
    if let Some(intent) = served.read {
        let entry = log_entry(LogKind::Read, intent, &record.tid, server.now());
        caller.backend.append_log(entry);
    }
    if server.audit_sink().enabled() {
        let (event, detail) = served.audit;
        let entry = AuditEntry::new(server.now(), event, detail.into_value())
            .with_tid(record.tid.clone())
            .with_uid(record.uid.clone());
        server.audit(entry).await;
    }
    Reply::ok(served.body)
}
