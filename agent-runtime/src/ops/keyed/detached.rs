//! Detached, keyed calls (`docs/lap.md` §5.7): a `/message` runs to completion on its own task even
//! if its caller goes away, and a call with an `idempotencyKey` is answered once: a retry with
//! the same key and message gets the first answer (replayed, also across a restart or from
//! another replica with a durable store), a different message under the key is 409. Hosted and
//! paired sessions share this.

use std::future::Future;
use std::pin::Pin;

use axum::http::StatusCode;
use serde_json::Value;

use super::durable::{
    answer_not_kept, answered, claim_or_replay, different_message, store_answer, Durable,
};
use super::idempotency::{Claim, FirstCall};
use super::KeyedServer;
use crate::engine::session::keyed::{KeyOutcome, KeyReceipt, KeyedDispatch};
use crate::ops::error::ApiError;
use crate::ops::reply::Reply;
use crate::security::TokenRecord;

/// A keyed call's work, given the key to hand to its dispatch. Boxed: this module's code is
/// then compiled once per server type, not once per operation (`docs/architecture.md` §Build).
pub(crate) type KeyedWork =
    Box<dyn FnOnce(Option<KeyedDispatch>) -> Pin<Box<dyn Future<Output = Reply> + Send>> + Send>;

/// Runs `work` on its own task for the caller `record`, under `keyed` = `(idempotencyKey,
/// msg)` when the call carries a key. With a durable store the key is claimed there too, and
/// `work` is given the [`KeyedDispatch`] to hand to the dispatch of its message, whose commit
/// records the key (`docs/stores.md` §Exactly once); otherwise it is given `None`.
pub(crate) async fn run_keyed<S: KeyedServer>(
    server: &S,
    record: &TokenRecord,
    keyed: Option<(String, Value)>,
    work: KeyedWork,
) -> Reply {
    let tid = record.tid.clone();
    if let Some((key, msg)) = &keyed {
        if let Some(replay) = answered(server, record, key, msg).await {
            return replay;
        }
    }
    let mut first = match &keyed {
        None => None,
        Some((key, msg)) => match server.idempotency().claim(&tid, key, msg, server.now()) {
            Err(over) => return Reply::error(over.into()),
            Ok(Claim::First(first)) => Some(first),
            Ok(Claim::Shed(shed)) => {
                return Reply::error(if shed.same_message(msg) {
                    answer_not_kept(key)
                } else {
                    different_message(key)
                });
            }
            Ok(Claim::Repeat(first)) => {
                if !first.same_message(msg) {
                    return Reply::error(different_message(key));
                }
                let replay = server
                    .with_revocation(&tid, async {
                        match first.answer().await {
                            Some(a) => Reply::from_stored(a),
                            None => Reply::error(ApiError::internal(
                                "the first call with this idempotencyKey failed without an answer",
                            )),
                        }
                    })
                    .await;
                if replay.status() == StatusCode::OK {
                    if let Err(e) = server.activate(record).await {
                        return Reply::error(e);
                    }
                }
                return replay.replayed();
            }
        },
    };
    // First in this process: the store says whether it is first anywhere.
    let mut durable = false;
    if let (Some(_), Some((key, msg))) = (&first, &keyed) {
        match claim_or_replay(server, record, key, msg).await {
            Durable::Claimed => durable = true,
            Durable::Unavailable => {}
            // Nothing ran: the key is given back here too, so a retry asks the store again.
            Durable::Failed(e) => {
                return match first.take() {
                    Some(first) => given_back(first, e),
                    None => Reply::error(e),
                };
            }
            Durable::Replay(reply) => {
                if let Some(first) = first.take() {
                    first.answer(reply.clone().into_stored());
                }
                return reply;
            }
        }
    }
    // Claimed in the store: the commit of the message records the key, and says so.
    let (dispatch, receipt): (Option<KeyedDispatch>, Option<KeyReceipt>) = match (&keyed, durable) {
        (Some((key, msg)), true) => {
            let (dispatch, receipt) =
                KeyedDispatch::new(tid.clone(), key.clone(), msg.to_string(), server.now());
            (Some(dispatch), Some(receipt))
        }
        _ => (None, None),
    };
    let work = work(dispatch);
    let task_server = server.clone();
    let task_record = record.clone();
    let task = tokio::spawn(async move {
        let reply = work.await;
        let Some(first) = first else {
            return reply;
        };
        let mut reply = reply;
        let mut ours = true;
        if let (Some(receipt), Some((key, msg))) = (receipt, &keyed) {
            let outcome = receipt.outcome();
            // The relay gave the key back: this answer is not the key's (its claim in the
            // store lapses with its lease), and a retry runs the message again.
            if outcome == KeyOutcome::Released {
                first.release(reply.clone().into_stored());
                return reply;
            }
            // Another commit recorded the key: that one is the first call; its answer
            // (or one rebuilt from its commit) is this call's too.
            if outcome == KeyOutcome::UsedElsewhere {
                match claim_or_replay(&task_server, &task_record, key, msg).await {
                    Durable::Replay(answer) => {
                        reply = answer;
                        ours = false;
                    }
                    // That answer is not to be read now: this one is not the key's either.
                    Durable::Failed(e) => return given_back(first, e),
                    Durable::Claimed | Durable::Unavailable => {}
                }
            }
        }
        let stored = reply.clone().into_stored();
        if ours {
            if let Some((key, msg)) = keyed {
                let created_at = task_server.now();
                store_answer(
                    &task_server,
                    &task_record.tid,
                    key,
                    msg.to_string(),
                    created_at,
                    &stored,
                )
                .await;
            }
        }
        first.answer(stored);
        reply
    });
    server
        .with_revocation(&tid, async {
            task.await.unwrap_or_else(|e| {
                Reply::error(ApiError::internal(format!("message task failed: {e}")))
            })
        })
        .await
}

/// The store failed this call's key (`e`): the in-process claim `first` is given back with
/// the error, which is the call's answer, so a retry with the key asks the store again.
fn given_back(first: FirstCall, e: ApiError) -> Reply {
    let reply = Reply::error(e);
    first.release(reply.clone().into_stored());
    reply
}
