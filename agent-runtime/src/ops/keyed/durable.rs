//! Keyed `/message` calls across processes (`docs/stores.md` §Exactly once): with a durable
//! store, the first call claims its key in the store before it runs (so a retry on another
//! replica waits for it instead of running too), its commit records the key in the same
//! transaction, and its answer is stored before it is sent. A retry, anywhere and after any
//! crash, finds one of: the answer (replayed), a commit recorded under the key whose answer
//! was lost (an answer rebuilt from that commit), a claim in flight (waited on until it is
//! answered or its lease runs out), or an abandoned claim that no commit recorded (claimed
//! again and run). Whatever the claims do, the commit's record of the key is what makes the
//! message apply at most once: a second commit under the key is refused by the store.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::Value;
use tea_agent_schema::protocol::{DrainReport, ErrorCode, SendResult};

use super::idempotency::WINDOW_MS;
use super::KeyedServer;
use crate::engine::store::IdempotencyEntry;
use crate::ops::error::ApiError;
use crate::ops::reply::{Reply, StoredAnswer};
use crate::security::TokenRecord;

/// How long a claim keeps the key's retries waiting: past it, a claim without a recorded
/// commit counts as abandoned (its process died before the commit) and is taken over, and
/// one with a recorded commit but no answer gets an answer rebuilt from the commit.
pub(crate) const CLAIM_LEASE_MS: u64 = 5_000;

/// How often a retry waiting on a claim looks again.
const POLL: Duration = Duration::from_millis(50);

/// How long a retry waits on claims in all before it answers 504 (claims taken over again
/// and again, or a store that keeps failing).
const WAIT_CAP_MS: u64 = 4 * CLAIM_LEASE_MS;

/// What the store says of a keyed call.
pub(super) enum Durable {
    /// The key is this call's: run it.
    Claimed,
    /// Answer this (the first call's answer, a rebuilt one, or an error).
    Replay(Reply),
    /// No durable store: go on with the in-process claim alone.
    Unavailable,
    /// The durable store failed to look the key up or to claim it: nothing was run, and the
    /// call answers this error (a retry with the key runs it then). Going on without the claim
    /// would let another replica apply the message again.
    Failed(ApiError),
}

/// 500: the store failed while this call looked its key up or claimed it (`detail` logged).
fn claim_failed(key: &str, what: &str, e: &crate::engine::store::StoreError) -> ApiError {
    tracing::error!(target: "tea_agent_runtime::store", key, "idempotency {what} failed: {e}");
    ApiError::new(ErrorCode::Internal).with_detail(format!(
        "the store failed to claim idempotencyKey {key}; nothing was changed (retry with the \
         same key)"
    ))
}

/// 409: the key was used for another message.
pub(super) fn different_message(key: &str) -> ApiError {
    ApiError::new(ErrorCode::Conflict).with_detail(format!(
        "idempotencyKey {key} was used for a different message"
    ))
}

/// 409: the key's first call ran in this process, but its answer was shed for the host's
/// budget of what sessions retain (`docs/lap.md` §5.7): the message is not applied again.
pub(super) fn answer_not_kept(key: &str) -> ApiError {
    ApiError::new(ErrorCode::Conflict)
        .with_reason("answer-not-kept")
        .with_detail(format!(
            "idempotencyKey {key} was used for this message, whose answer is no longer kept \
             (shed for the server's memory budget); it is not applied again: read the state \
             for its effect"
        ))
}

/// The first call's stored answer under `(record.tid, key)`, replayed (409 for another
/// message under the key); `None` when there is none yet, or no durable store. A lookup the
/// store fails is the call's answer (500), as in [`claim_or_replay`].
pub(super) async fn answered<S: KeyedServer>(
    server: &S,
    record: &TokenRecord,
    key: &str,
    msg: &Value,
) -> Option<Reply> {
    let store = server.durable_idempotency()?;
    let entry = match store.get_idempotent(&record.tid, key).await {
        Ok(entry) => entry?,
        Err(e) => return Some(Reply::error(claim_failed(key, "lookup", &e))),
    };
    if entry.created_at + WINDOW_MS <= server.now() || entry.status == 0 {
        return None;
    }
    if serde_json::from_str::<Value>(&entry.msg).ok().as_ref() != Some(msg) {
        return Some(Reply::error(different_message(key)));
    }
    Some(replay(server, record, stored(entry)).await)
}

/// Looks up `(record.tid, key)` in the durable store and either claims it for this call or
/// answers what the first call answered (waiting while another process's claim is live).
pub(super) async fn claim_or_replay<S: KeyedServer>(
    server: &S,
    record: &TokenRecord,
    key: &str,
    msg: &Value,
) -> Durable {
    let Some(store) = server.durable_idempotency() else {
        return Durable::Unavailable;
    };
    let tid = &record.tid;
    let started = server.now();
    loop {
        let now = server.now();
        if now.saturating_sub(started) > WAIT_CAP_MS {
            return Durable::Replay(Reply::error(ApiError::new(ErrorCode::Timeout).with_detail(
                format!(
                    "the first call with idempotencyKey {key} is still in flight elsewhere; \
                     retry later with the same key"
                ),
            )));
        }
        let entry = match store.get_idempotent(tid, key).await {
            Ok(entry) => entry,
            Err(e) => return Durable::Failed(claim_failed(key, "lookup", &e)),
        };
        if let Some(e) = entry.filter(|e| e.created_at + WINDOW_MS > now) {
            if serde_json::from_str::<Value>(&e.msg).ok().as_ref() != Some(msg) {
                return Durable::Replay(Reply::error(different_message(key)));
            }
            if e.status != 0 {
                return Durable::Replay(replay(server, record, stored(e)).await);
            }
            if e.claimed_at + CLAIM_LEASE_MS > now {
                tokio::time::sleep(POLL).await;
                continue;
            }
            if let Some((session, seq)) = &e.commit {
                let answer = rebuilt(server, session, *seq).await;
                return Durable::Replay(replay(server, record, answer).await);
            }
            // Abandoned before any commit recorded it: claimed again below.
        }
        let claim = IdempotencyEntry {
            tid: tid.clone(),
            key: key.to_owned(),
            created_at: now,
            msg: msg.to_string(),
            status: 0,
            body: String::new(),
            headers: "[]".into(),
            commit: None,
            claimed_at: now,
        };
        let expired = now.saturating_sub(WINDOW_MS);
        let stale = now.saturating_sub(CLAIM_LEASE_MS);
        match store.claim_idempotent(claim, expired, stale).await {
            Ok(true) => return Durable::Claimed,
            // Another call claimed it meanwhile: look again.
            Ok(false) => {}
            Err(e) => return Durable::Failed(claim_failed(key, "claim", &e)),
        }
    }
}

fn stored(e: IdempotencyEntry) -> StoredAnswer {
    StoredAnswer {
        status: StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body: e.body,
        headers: serde_json::from_str(&e.headers).unwrap_or_default(),
    }
}

/// A replay of `answer`, activating the token on a success as the first answer did.
async fn replay<S: KeyedServer>(server: &S, record: &TokenRecord, answer: StoredAnswer) -> Reply {
    let reply = Reply::from_stored(answer);
    if reply.status() == StatusCode::OK {
        if let Err(e) = server.activate(record).await {
            return Reply::error(e);
        }
    }
    reply.replayed()
}

/// The answer of a keyed message that commit `seq` of `session` applied, when the first
/// call's answer was lost (its process stopped after the commit): `dispatched`, with the
/// session's actions now, an empty `stateDiff` (what the commit changed is not kept) and the
/// header `idempotent-commit: <seq>`.
async fn rebuilt<S: KeyedServer>(server: &S, session: &str, seq: u64) -> StoredAnswer {
    let actions = server.actions_now(session).await;
    let result = SendResult::Dispatched {
        state_diff: Vec::new(),
        actions: actions.into(),
        drain: DrainReport {
            effects_observed: 1,
            duration_ms: 0,
            timed_out: false,
            errors: Vec::new(),
            warnings: Vec::new(),
            cancelled: Vec::new(),
        },
        state_after: None,
        // The commit that applied it.
        seq: Some(seq),
    };
    StoredAnswer {
        status: StatusCode::OK,
        body: serde_json::to_string(&result).unwrap_or_else(|_| "{}".into()),
        headers: vec![("idempotent-commit".into(), seq.to_string())],
    }
}

/// With a durable store: keeps the first answer of a keyed call, before it is sent, and
/// sweeps the records past the window every sweep period.
pub(super) async fn store_answer<S: KeyedServer>(
    server: &S,
    tid: &str,
    key: String,
    msg: String,
    created_at: u64,
    answer: &StoredAnswer,
) {
    let Some(store) = server.durable_idempotency() else {
        return;
    };
    let entry = IdempotencyEntry {
        tid: tid.to_owned(),
        key,
        created_at,
        msg,
        status: answer.status.as_u16(),
        body: answer.body.clone(),
        headers: serde_json::to_string(&answer.headers).unwrap_or_else(|_| "[]".into()),
        commit: None,
        claimed_at: created_at,
    };
    if let Err(e) = store.put_idempotent(entry).await {
        tracing::error!(target: "tea_agent_runtime::store", "storing an idempotency answer failed: {e}");
    }
    // The stored answers past the window go at least every sweep period while keyed calls
    // come, not only at mints (`docs/stores.md` §Bounds on disk).
    let now = server.now();
    let period = server.idempotency_sweep();
    let swept = server.durable_idempotency_swept();
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
        let before = now.saturating_sub(WINDOW_MS);
        if let Err(e) = store.sweep_idempotent(before).await {
            tracing::error!(target: "tea_agent_runtime::store", "idempotency sweep failed: {e}");
        }
    }
}
