//! What travels between a session's callers and its task: the queued message
//! ([`Envelope`]: the message, its ticket, its [`Origin`], with a keyed message's key) and the notes the task sends drain
//! waiters after each commit ([`CommitNote`]). Plain types; the task, the effects, the drain
//! and the persistence all use them.

use serde_json::Value;
use tea_agent_schema::protocol::DrainError;
use tokio::sync::oneshot;

use std::sync::Arc;

use super::keyed::KeyedDispatch;
use super::progress::DispatchWatch;
use super::work::WorkSlot;

/// A message waiting in a session's inbox.
pub(crate) struct Envelope<M> {
    pub msg: M,
    pub ticket: u64,
    pub origin: Origin,
    /// Fired after the commit (or the refusal), for the one caller waiting on this message.
    pub committed: Option<oneshot::Sender<Applied>>,
}

/// What the task did with a watched message.
#[derive(Debug, Clone)]
pub(crate) enum Applied {
    /// Applied and committed: the effects its commit started, and the commit as its log
    /// entry names it.
    Committed(Vec<Arc<WorkSlot>>, CommitMark),
    /// An agent's message refused when its turn came: the action was no longer offered in
    /// the state it would have been applied to (the detail says why).
    Refused(String),
}

/// A message's own commit, as its log entry names it (`seq`, and why the human cannot undo
/// it: `docs/semantics.md` §12).
#[derive(Debug, Clone, Default)]
pub(crate) struct CommitMark {
    pub seq: Option<u64>,
    pub no_undo: Option<String>,
}

/// Where a queued message comes from; an agent's message is checked again against the action
/// gates when its turn comes, a keyed message's commit records its key, an approved
/// confirmation needs work after its commit.
pub(crate) enum Origin {
    /// The human.
    Plain,
    /// An effect (the app itself).
    App,
    /// An agent's message (boxed, like an approval).
    Agent(Box<AgentDispatch>),
    /// A human approval of a proposal (boxed: it is rare, and it would make every queued
    /// message several times larger).
    Approved(Box<Approval>),
}

/// What the task needs to know about an agent's message.
pub(crate) struct AgentDispatch {
    /// The `idempotencyKey` of a keyed `/message`: its commit records it.
    pub key: Option<KeyedDispatch>,
    /// The sending token's id, for the `blocked` log entry of a refusal and the effects its
    /// commit starts.
    pub tid: Option<String>,
    /// Checked again against the action gates at its turn (enforced gates).
    pub gated: bool,
    /// What the caller follows of the effects its commit starts.
    pub follow: Option<Arc<DispatchWatch>>,
}

impl Origin {
    /// A message from an agent: with the key its commit records when it has one. Under
    /// enforced action gates (`gated`) the task checks it again at its turn
    /// (`docs/semantics.md` §5.1); its effects are the token's work (§5.6).
    pub(crate) fn agent(
        key: Option<KeyedDispatch>,
        gated: bool,
        tid: Option<&str>,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Origin {
        Origin::Agent(Box::new(AgentDispatch {
            key,
            tid: tid.map(str::to_owned),
            gated,
            follow,
        }))
    }
}

impl Origin {
    /// The agent's message, when the task checks it again at its turn.
    pub(crate) fn gated(&self) -> Option<&AgentDispatch> {
        match self {
            Origin::Agent(agent) if agent.gated => Some(agent),
            _ => None,
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
