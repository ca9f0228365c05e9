//! What travels between a session's callers and its task: the queued message
//! ([`Envelope`]: the message, its ticket, its [`Origin`]) and the notes the task sends drain
//! waiters after each commit ([`CommitNote`]). Plain types; the task, the effects, the drain
//! and the persistence all use them.

use agent_schema::protocol::DrainError;
use serde_json::Value;
use tokio::sync::oneshot;

/// A message waiting in a session's inbox.
pub(crate) struct Envelope<M> {
    pub msg: M,
    pub ticket: u64,
    pub origin: Origin,
    /// Fired after the commit, for the one caller waiting on this message.
    pub committed: Option<oneshot::Sender<()>>,
    /// The `idempotencyKey` its commit records (a keyed `/message`).
    pub key: Option<std::sync::Arc<super::keyed::KeyedCommit>>,
}

/// Where a queued message comes from; approved confirmations need work after their commit.
pub(crate) enum Origin {
    /// An agent, the human, or an effect.
    Plain,
    /// A human approval of a proposal (boxed: it is rare, and it would make every queued
    /// message several times larger).
    Approved(Box<Approval>),
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
