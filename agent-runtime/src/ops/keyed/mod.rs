//! Keyed calls: a `/message` with an `idempotencyKey` is answered once (`docs/lap.md` §5.7) and,
//! with a durable store, applied once across crashes and replicas (`docs/stores.md` §Exactly
//! once). Every step is a value passed from one to the next; nothing travels on the side:
//!
//! 1. `detached` runs the call on its own task (so it completes even when its caller goes
//!    away) after claiming its key: in this process first (`idempotency`: the in-memory
//!    records, whose [`idempotency::Claim`] is the first call or a repeat to replay),
//!    then, with a durable store, in the store (`durable`: what the store says of the key, a
//!    `Durable` to run or replay).
//! 2. A call that claimed its key in the store builds a
//!    [`KeyedDispatch`](crate::engine::session::keyed::KeyedDispatch): the key and its
//!    message, which the call's work hands to the dispatch as an argument (the gate passes it to
//!    a hosted session's `SessionBackend::message`, which passes it to the session), and which
//!    the message's envelope carries to the session's writer. The commit records the key in its
//!    transaction.
//! 3. The commit reports a [`KeyOutcome`](crate::engine::session::keyed::KeyOutcome) through a
//!    oneshot channel: recorded here, or recorded by another commit (the message applied
//!    elsewhere: this call answers what that one answered). `detached` reads it with the
//!    dispatch's [`KeyReceipt`](crate::engine::session::keyed::KeyReceipt) once the work
//!    answered, and stores the answer.
//!
//! This folder sits below the server's state and the gate: what it needs of the server it
//! asks through [`KeyedServer`], which the state implements (`super::tail`).

mod detached;
mod durable;
mod idempotency;

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tea_agent_schema::protocol::Action;

use super::error::ApiError;
use super::reply::Reply;
use crate::engine::store::IdempotencyRecords;
use crate::security::TokenRecord;

pub(crate) use detached::{run_keyed, KeyedWork};
#[cfg(feature = "pairing-client")]
pub(crate) use idempotency::Claim;
pub(crate) use idempotency::IdempotencyStore;
pub use idempotency::IDEMPOTENCY_WINDOW;

/// What a keyed call needs of the server around it.
pub(crate) trait KeyedServer: Clone + Send + Sync + 'static {
    /// Now (ms since the epoch), by the host's clock.
    fn now(&self) -> u64;

    /// The in-process idempotency records.
    fn idempotency(&self) -> &IdempotencyStore;

    /// Where first answers of keyed calls are also kept (durable stores only).
    fn durable_idempotency(&self) -> Option<&Arc<dyn IdempotencyRecords>>;

    /// When the stored answers past the window were last deleted (ms).
    fn durable_idempotency_swept(&self) -> &AtomicU64;

    /// How often the stored answers past the window are deleted (ms).
    fn idempotency_sweep(&self) -> u64;

    /// The success tail's activation of `record` (or touch), as for a first answer: whether
    /// this call activated the token, or the error to answer.
    fn activate(&self, record: &TokenRecord)
        -> impl Future<Output = Result<bool, ApiError>> + Send;

    /// `work` raced against the revocation of `tid` (403 `revoked`).
    fn with_revocation<F>(&self, tid: &str, work: F) -> impl Future<Output = Reply> + Send
    where
        F: Future<Output = Reply> + Send;

    /// The actions of session `id` now (none when it does not load).
    fn actions_now(&self, id: &str) -> impl Future<Output = Vec<Action>> + Send;
}
