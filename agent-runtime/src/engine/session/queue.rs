//! What travels between a session's callers and its task: the queued message
//! ([`Envelope`]: the message, its ticket, its [`Origin`], with a keyed message's key) and the notes the task sends drain
//! waiters after each commit ([`CommitNote`]). Plain types; the task, the effects, the drain
//! and the persistence all use them.

use agent_schema::protocol::DrainError;
use serde_json::Value;
use tokio::sync::oneshot;

use super::keyed::KeyedDispatch;

/// A message waiting in a session's inbox.
pub(crate) struct Envelope<M> {
    pub msg: M,
    pub ticket: u64,
    pub origin: Origin,
    /// Fired after the commit, for the one caller waiting on this message.
    pub committed: Option<oneshot::Sender<()>>,
}

/// Where a queued message comes from; a keyed message's commit records its key, an approved
/// confirmation needs work after its commit.
pub(crate) enum Origin {
    /// An agent, the human, or an effect.
    Plain,
    /// An agent's `/message` with an `idempotencyKey`: its commit records the key (boxed, like
    /// an approval).
    Keyed(Box<KeyedDispatch>),
    /// A human approval of a proposal (boxed: it is rare, and it would make every queued
    /// message several times larger).
    Approved(Box<Approval>),
}

impl Origin {
    /// A message from an agent, with the key its commit records when it has one.
    pub(crate) fn agent(key: Option<KeyedDispatch>) -> Origin {
        match key {
            Some(key) => Origin::Keyed(Box::new(key)),
            None => Origin::Plain,
        }
    }
}

/// What the commit of an approved proposal must record.
pub(crate) struct Approval {
    pub confirm_id: String,
    /// The applied message as JSON (the edited one after an edit).
    pub applied: Value,
    /// Set when the human edited the message.
    pub edited: bool,
    pub intent: String,
    pub variant: String,
    pub tid: Option<String>,
}

/// What the task tells drain waiters.
#[derive(Debug, Clone)]
pub(crate) enum CommitNote {
    /// One `update` was applied.
    Commit { ticket: u64 },
    /// An update panicked or an effect failed.
    Error(DrainError),
}
