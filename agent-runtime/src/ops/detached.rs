//! Detached, keyed calls (`docs/lap.md` §5.7): a `/message` runs to completion on its own task even
//! if its caller goes away, and a call with an `idempotencyKey` is answered once: a retry with
//! the same key and message gets the first answer (replayed, also across a restart or from
//! another replica with a durable store), a different message under the key is 409. Hosted and
//! paired sessions share this.

use std::future::Future;

use agent_schema::protocol::ErrorCode;
use axum::http::StatusCode;
use serde_json::Value;

use super::error::ApiError;
use super::idempotency::Claim;
use super::reply::Reply;
use super::state::ServerState;
use super::tail::{activate, with_revocation};
use crate::app::App;
use crate::security::TokenRecord;

/// Runs `work` on its own task for the caller `record`, under `keyed` = `(idempotencyKey,
/// msg)` when the call carries a key.
pub(crate) async fn run_keyed<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
    keyed: Option<(String, Value)>,
    work: impl Future<Output = Reply> + Send + 'static,
) -> Reply {
    let tid = record.tid.clone();
    if let Some((key, msg)) = &keyed {
        if let Some(replay) = durable_replay(server, record, key, msg).await {
            return replay;
        }
    }
    let first = match &keyed {
        None => None,
        Some((key, msg)) => match server.idempotency().claim(&tid, key, msg, server.now()) {
            Err(over) => return Reply::from_error(&over.into()),
            Ok(Claim::First(tx)) => Some(tx),
            Ok(Claim::Repeat(first)) => {
                if !first.same_message(msg) {
                    return Reply::from_error(&different_message(key));
                }
                let replay = with_revocation(server, &tid, async {
                    match first.answer().await {
                        Some(a) => Reply::from_stored(a),
                        None => Reply::from_error(&ApiError::internal(
                            "the first call with this idempotencyKey failed without an answer",
                        )),
                    }
                })
                .await;
                if replay.status() == StatusCode::OK {
                    activate(server, record).await;
                }
                return replay.replayed();
            }
        },
    };
    let durable_key = keyed.map(|(key, msg)| (key, msg.to_string(), server.now()));
    let task_server = server.clone();
    let tid_of_task = tid.clone();
    let task = tokio::spawn(async move {
        let reply = work.await;
        if let Some(tx) = first {
            let stored = reply.clone().into_stored();
            if let Some((key, msg, created_at)) = durable_key {
                store_answer(&task_server, &tid_of_task, key, msg, created_at, &stored).await;
            }
            tx.send_replace(Some(stored));
        }
        reply
    });
    with_revocation(server, &tid, async {
        task.await.unwrap_or_else(|e| {
            Reply::from_error(&ApiError::internal(format!("message task failed: {e}")))
        })
    })
    .await
}

/// 409: the key was used for another message.
fn different_message(key: &str) -> ApiError {
    ApiError::new(ErrorCode::Conflict).with_detail(format!(
        "idempotencyKey {key} was used for a different message"
    ))
}

/// With a durable store: the first answer stored under `(tid, key)` in an earlier process (or
/// on another replica), replayed; a different message under the key is 409.
async fn durable_replay<A: App>(
    server: &ServerState<A>,
    record: &TokenRecord,
    key: &str,
    msg: &Value,
) -> Option<Reply> {
    let store = server.durable_idempotency()?;
    let entry = match store.get_idempotent(&record.tid, key).await {
        Ok(entry) => entry?,
        Err(e) => {
            tracing::error!(target: "agent_runtime::store", "idempotency lookup failed: {e}");
            return None;
        }
    };
    if entry.created_at + super::IDEMPOTENCY_WINDOW_MS <= server.now() {
        return None;
    }
    if serde_json::from_str::<Value>(&entry.msg).ok().as_ref() != Some(msg) {
        return Some(Reply::from_error(&different_message(key)));
    }
    let headers: Vec<(String, String)> = serde_json::from_str(&entry.headers).unwrap_or_default();
    let answer = super::idempotency::StoredAnswer {
        status: StatusCode::from_u16(entry.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body: entry.body,
        headers,
    };
    let replay = Reply::from_stored(answer);
    if replay.status() == StatusCode::OK {
        activate(server, record).await;
    }
    Some(replay.replayed())
}

/// With a durable store: keeps the first answer of a keyed call, before it is sent.
async fn store_answer<A: App>(
    server: &ServerState<A>,
    tid: &str,
    key: String,
    msg: String,
    created_at: u64,
    answer: &super::idempotency::StoredAnswer,
) {
    let Some(store) = server.durable_idempotency() else {
        return;
    };
    let entry = crate::engine::store::IdempotencyEntry {
        tid: tid.to_owned(),
        key,
        created_at,
        msg,
        status: answer.status.as_u16(),
        body: answer.body.clone(),
        headers: serde_json::to_string(&answer.headers).unwrap_or_else(|_| "[]".into()),
    };
    if let Err(e) = store.put_idempotent(entry).await {
        tracing::error!(target: "agent_runtime::store", "storing an idempotency answer failed: {e}");
    }
    // The stored answers past the window go at least every sweep period while keyed calls
    // come, not only at mints (`docs/stores.md` §Bounds on disk).
    let now = server.now();
    let period = server.host().config().budgets.idempotency_sweep_ms;
    let swept = &server.durable_idempotency_swept();
    let last = swept.load(std::sync::atomic::Ordering::Relaxed);
    if now.saturating_sub(last) >= period
        && swept
            .compare_exchange(
                last,
                now,
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
            )
            .is_ok()
    {
        let before = now.saturating_sub(super::IDEMPOTENCY_WINDOW_MS);
        if let Err(e) = store.sweep_idempotent(before).await {
            tracing::error!(target: "agent_runtime::store", "idempotency sweep failed: {e}");
        }
    }
}
