//! The side of the replica holding a paired socket (feature `fleet`): a hop's call answered as a local call of
//! its relay, as a stream of [`HopLine`]s (`alive` every third of the ping interval while the
//! app works, the latest `progress` of a followed `/message`, then the answer).
//!
//! The hop carries no credential of the agent: the replica where the call arrived verified the
//! bearer (once) and took the rate limit; the holder trusts only what the store says of the
//! token id (its record: paired, not revoked, not expired) and that the hop is signed with the
//! fleet's key (checked by the route, `surface/fleet`). A socket it no longer holds answers 503
//! `paused`, marked `not_holder`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::mpsc;

use super::fleet::wire::{HopCall, HopLine, Watching};
use crate::app::App;
use crate::engine::paired::fleet::Fleet;
use crate::engine::paired::frames::ServerFrame;
use crate::engine::session::progress::DispatchWatch;
use crate::ops::context::{Call, Serialized};
use crate::ops::error::ApiError;
use crate::ops::paired_backend::PairedRelay;
use crate::ops::state::ServerState;
use crate::ops::Operation;
use crate::security::{TokenRecord, TokenStatus};

/// Aborts the task answering a hop when its answer is dropped (the caller went away), as a
/// local call's future is dropped with its connection.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The answer of hop `call`, line by line.
pub(crate) fn answer<A: App>(
    server: ServerState<A>,
    fleet: Arc<Fleet>,
    call: HopCall,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let (tx, rx) = mpsc::channel::<String>(8);
    let task = tokio::spawn(async move {
        let line = run(&server, &fleet, call, &tx).await;
        let _ = tx.send(line.to_line()).await;
    });
    let guard = AbortOnDrop(task.abort_handle());
    futures::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        rx.recv()
            .await
            .map(|line| (Ok(Bytes::from(line)), (rx, guard)))
    })
}

/// The error line of `e`.
fn error_line(e: &ApiError, not_holder: bool) -> HopLine {
    HopLine::Error {
        error: e.to_parts(),
        not_holder,
    }
}

/// The token record of a hop, from the store: a paired, live record, else the answer a local
/// call would get.
async fn record_of<A: App>(server: &ServerState<A>, tid: &str) -> Result<TokenRecord, ApiError> {
    let now = server.now();
    let retry = server.pairing().options.retry_after.as_secs();
    match server.tokens().find_by_tid(tid).await {
        Err(e) => {
            tracing::error!(tid, "fleet: a hop's token not read: {e}");
            Err(e.into())
        }
        Ok(None) => Err(crate::ops::paired::paused(None, now, retry)),
        Ok(Some(r)) if r.status == TokenStatus::Revoked => Err(ApiError::revoked()),
        Ok(Some(r)) if !crate::engine::paired::drives_paired_session(&r) => Err(
            ApiError::forbidden("the token of a hop does not drive a paired session"),
        ),
        Ok(Some(r)) if r.expires_at <= now => Err(crate::ops::paired::paused(Some(&r), now, retry)),
        Ok(Some(r)) => Ok(r),
    }
}

/// Runs hop `call` and answers its last line, sending `alive` and `progress` lines on `tx`
/// meanwhile.
async fn run<A: App>(
    server: &ServerState<A>,
    fleet: &Fleet,
    call: HopCall,
    tx: &mpsc::Sender<String>,
) -> HopLine {
    // A watcher's hop is answered as the operation that reads the same.
    let (op, args) = match call.watch {
        Some(Watching::Change { timeout_ms }) => (
            Some(Operation::Wait),
            serde_json::json!({ "timeoutMs": timeout_ms }),
        ),
        Some(Watching::Actions) => (Some(Operation::Actions), Value::Null),
        Some(Watching::Description) => (Some(Operation::Describe), Value::Null),
        None => (Operation::from_tool(&call.tool), call.args),
    };
    let Some(op) = op else {
        let e = ApiError::invalid(format!("a hop names no operation: {:?}", call.tool));
        return error_line(&e, false);
    };
    crate::telemetry::fleet_served(op.tool());
    let record = match record_of(server, &call.tid).await {
        Ok(r) => r,
        Err(e) => return error_line(&e, false),
    };
    let pairing = server.pairing();
    if !pairing.hub.has_socket(&record.tid) {
        let retry = pairing.options.retry_after.as_secs();
        let e = crate::ops::paired::paused(Some(&record), server.now(), retry);
        tracing::info!(tid = %record.tid, "fleet: a hop for a socket this replica no longer holds");
        return error_line(&e, true);
    }
    let args = match args {
        Value::Object(_) => args,
        _ => Value::Object(Default::default()),
    };
    let follow = (call.follow && op == Operation::Message).then(DispatchWatch::new);
    let _kept = follow.as_ref().map(|w| fleet.follow(&call.hop, w.clone()));
    let mut progress = follow.as_ref().map(|w| w.follow());
    // A keyed message to an app that deduplicates keys: said before it is relayed.
    if op == Operation::Message && args.get("idempotencyKey").is_some() {
        let dedupes = pairing
            .hub
            .hello(&record.tid)
            .is_some_and(|h| h.takes(crate::engine::paired::frames::IDEMPOTENCY_KEYS));
        if dedupes && tx.send(HopLine::Alive { dedupes }.to_line()).await.is_err() {
            return error_line(&ApiError::internal("the caller went away"), false);
        }
    }
    let relay = PairedRelay::new(server.clone());
    // Only a `/message` sends an rpc whose work the app follows.
    let local = Call {
        record: &record,
        spec: op.spec(),
        args: args.clone(),
        follow: follow.clone(),
        proposed: None,
    };
    let served = crate::ops::table::run_direct(&relay, &local, op, args);
    tokio::pin!(served);
    let every = match pairing.options.ping_interval {
        Duration::ZERO => Duration::from_secs(10),
        ping => (ping / 3).max(Duration::from_millis(100)),
    };
    let mut alive = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            answered = &mut served => return answered_line(answered),
            _ = alive.tick() => {
                if tx.send(HopLine::Alive { dedupes: false }.to_line()).await.is_err() {
                    // The caller went away: the call ends here, as a local one would.
                    return error_line(&ApiError::internal("the caller went away"), false);
                }
            }
            changed = async {
                match progress.as_mut() {
                    Some(rx) => rx.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            } => {
                if !changed {
                    progress = None;
                    continue;
                }
                let latest = progress.as_mut().and_then(|rx| rx.borrow_and_update().clone());
                if let Some(progress) = latest {
                    let _ = tx.send(HopLine::Progress { progress }.to_line()).await;
                }
            }
        }
    }
}

/// The last line of a hop: the answer, or its error.
fn answered_line(answered: Result<Serialized, ApiError>) -> HopLine {
    match answered {
        Ok(served) => match RawValue::from_string(served.body.into_text()) {
            Ok(body) => {
                let (event, detail) = served.audit;
                HopLine::Answer {
                    body,
                    read: served.read,
                    event,
                    detail: detail.into_value(),
                }
            }
            Err(e) => error_line(&ApiError::internal(format!("the answer: {e}")), false),
        },
        Err(e) => error_line(&e, false),
    }
}

/// A call carried here activated the token: the app is told (`active`), as a local call's
/// success tail tells it.
pub(crate) fn activated<A: App>(server: &ServerState<A>, tid: &str) {
    let _ = server.pairing().hub.push(tid, ServerFrame::Active {});
}

/// A newer socket of `tid` on another replica, at lease `epoch`, supersedes the one held here:
/// it is closed (1000), as a newer socket on one replica closes the older one, and its close
/// leaves the token's life cycle to the newer socket.
pub(crate) fn superseded<A: App>(server: &ServerState<A>, fleet: &Fleet, tid: &str, epoch: i64) {
    if fleet.superseded(tid, epoch) {
        tracing::info!(
            tid,
            "fleet: a newer socket on another replica supersedes this one"
        );
        let code = crate::engine::paired::outbound::close_code::NORMAL;
        server.pairing().hub.drop_current(tid, code, server.now());
    }
}
