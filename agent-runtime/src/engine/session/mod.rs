//! Sessions: one running app instance each, driven by a single task that applies messages in
//! order (`docs/semantics.md` §0).
//!
//! Reads never go through the task: after every commit the task publishes the redacted state,
//! and typed hooks read the state under a short read lock. The task is the only writer.

pub(crate) mod activity;
mod admission;
mod approval;
mod cancel;
mod catch_up;
mod commit_log;
pub(crate) mod confirm;
#[cfg(test)]
mod confirm_tests;
mod decisions;
mod dispatch;
mod dispatch_options;
mod drain;
mod effects;
pub(crate) mod events;
#[cfg(test)]
mod gates_tests;
pub(crate) mod keyed;
#[cfg(test)]
mod keyed_tests;
pub(crate) mod migrate;
mod notes;
mod outcome;
mod owner;
mod patches;
mod pending;
pub(crate) mod persist;
pub(crate) mod progress;
mod proposals;
mod published;
mod queue;
mod reads;
mod release;
mod resume;
pub(crate) mod retained;
mod start;
mod task;
pub(crate) mod transcript;
mod undo;
mod undo_record;
#[cfg(test)]
mod validates_tests;
mod work;

use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;
use tea_agent_schema::protocol::LogEntry;
use tokio::sync::{mpsc, oneshot, watch};

use crate::algo::catalog::Catalog;
use crate::algo::snapshot::Snapshots;
use crate::app::App;
use crate::config::HostConfig;
use crate::security::{AuditEntry, AuditEvent, AuditSink};

pub(crate) use crate::app::SessionClosed;
#[cfg(feature = "mcp")]
pub(crate) use approval::Decider;
pub(crate) use cancel::{CancelRefused, Canceller, WorkSelector};
pub use dispatch::EditedApprovalError;
pub(crate) use dispatch::SendError;
pub use dispatch_options::DispatchOptions;
pub use events::{SessionEvent, Subscription};
pub use outcome::LastOutcome;
pub(crate) use proposals::Withdrawal;
pub use published::Published;
pub(crate) use release::Release;
pub(crate) use retained::Retained;
pub(crate) use transcript::CallRecord;
pub use transcript::{
    Decided, RecordedCall, RecordedDecision, Transcript, TranscriptApp, TranscriptEntry,
    TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION,
};
pub use undo::{UndoError, Undone};

use activity::ActivityLog;
use events::EventBody;
use queue::{Applied, Envelope, Origin};

/// Why a session operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The host closed the session.
    #[error("session closed")]
    Closed,
    /// A hook or the runtime failed (a panic in a hook, for example).
    #[error("{0}")]
    Internal(String),
    /// A stored session whose state no longer deserializes and that [`crate::app::App::migrate`]
    /// could not carry over: it stays in the store untouched and does not load
    /// (`docs/stores.md` §Upgrades).
    #[error("{0}")]
    NotMigrated(String),
}

pub(crate) struct SessionCore<A: App> {
    id: String,
    owner: Option<String>,
    created_at: u64,
    app: Arc<A>,
    catalog: Arc<Catalog>,
    config: HostConfig,
    audit: Arc<dyn AuditSink>,
    state: RwLock<A::State>,
    /// The task's trees (see [`crate::algo::snapshot`]); only the task locks it.
    snapshots: Mutex<Snapshots>,
    inbox: mpsc::UnboundedSender<Envelope<A::Msg>>,
    published: watch::Sender<Published>,
    notes: Arc<notes::Notes>,
    confirms: pending::Confirms,
    confirm_changed: watch::Sender<u64>,
    log: Arc<Mutex<ActivityLog>>,
    /// The newest listing made, whose text the next one shares when the actions did not
    /// change (see [`Session::action_list`]).
    last_listing: Mutex<Option<Arc<crate::algo::affordances::Listing>>>,
    /// Recent commit patches (`docs/semantics.md` §8.7).
    patches: Arc<Mutex<patches::PatchRing>>,
    /// Gives the memory of big commits back (`docs/stores.md` §Memory).
    release: Release,
    events: events::SharedHub,
    outcomes: Mutex<HashMap<String, LastOutcome>>,
    /// The `@validates` sources that could not be evaluated in this session and were logged
    /// (each is logged and counted once per session).
    validates_logged: Mutex<HashSet<Box<str>>>,
    closed: watch::Sender<bool>,
    /// The next ticket; held while a message is queued so tickets reach the inbox in order.
    next_ticket: Mutex<u64>,
    /// The ticket of the newest committed message (tickets commit in increasing order).
    committed_through: AtomicU64,
    /// Where commits are written (none: in memory only).
    persist: Option<persist::Persistence>,
    /// Woken when another process changed the stored session: the task reloads it.
    refresh: tokio::sync::Notify,
    /// True once the session is in its store (at once without one).
    stored: watch::Sender<bool>,
    /// Woken by a new log entry of a durable session: the log saver writes the tail.
    log_dirty: tokio::sync::Notify,
    /// Live [`SessionHold`]s: while any is alive the host never closes the session as idle.
    holders: Arc<AtomicUsize>,
    /// Undo requests to the task (`docs/semantics.md` §12).
    undo: mpsc::UnboundedSender<undo::UndoRequest>,
    /// Their receiving end, taken by the task when it starts.
    undo_rx: Mutex<Option<mpsc::UnboundedReceiver<undo::UndoRequest>>>,
    /// The effects running now (`docs/semantics.md` §5.6).
    work: Arc<work::WorkBoard>,
    /// What the agents called and were answered (`transcript.rs`).
    transcript: Arc<Mutex<transcript::TranscriptRing>>,
}

/// Keeps a session from being closed as idle while it is alive
/// ([`HostConfig::session_idle`](crate::config::HostConfig::session_idle)): what a
/// holder that drives the session without going through the host holds — the pairing client,
/// an app's own UI. Every [`Subscription`] holds one too. Dropping it releases the session.
#[derive(Debug)]
pub struct SessionHold {
    holders: Arc<AtomicUsize>,
}

impl SessionHold {
    /// A hold of no session (unit tests of the parts that take one).
    #[cfg(test)]
    pub(crate) fn unheld() -> Self {
        SessionHold {
            holders: Arc::new(AtomicUsize::new(1)),
        }
    }
}

impl Drop for SessionHold {
    fn drop(&mut self) {
        self.holders.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What every session of a host shares: the app, its checked schema, the options and the
/// audit sink.
pub(crate) struct Parts<A: App> {
    pub app: Arc<A>,
    pub catalog: Arc<Catalog>,
    pub config: HostConfig,
    pub audit: Arc<dyn AuditSink>,
    /// The host's release of big commits' memory, shared by its sessions.
    pub release: Release,
    /// The host's budget of what its sessions' rings retain in all.
    pub retained: Retained,
}

/// One running app instance. Cheap to clone (shared).
pub struct Session<A: App> {
    core: Arc<SessionCore<A>>,
}

impl<A: App> Clone for Session<A> {
    fn clone(&self) -> Self {
        Session {
            core: self.core.clone(),
        }
    }
}

impl<A: App> std::fmt::Debug for Session<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.core.id)
            .field("owner", &self.core.owner)
            .finish_non_exhaustive()
    }
}

/// The text of a panic payload (`non-string panic payload` when it is neither `&str` nor
/// `String`).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl<A: App> Session<A> {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// The owning identity.
    pub fn owner(&self) -> Option<&str> {
        self.core.owner.as_deref()
    }

    /// Creation time (ms since the epoch).
    pub fn created_at(&self) -> u64 {
        self.core.created_at
    }

    /// Wall-clock now (ms since the epoch) by the host's clock.
    pub fn now_ms(&self) -> u64 {
        self.core.now()
    }

    /// True once the host closed the session.
    pub fn is_closed(&self) -> bool {
        *self.core.closed.borrow()
    }

    /// Closes the session: its task stops, waits answer "session closed", event streams end,
    /// the confirmation store is dropped.
    pub fn close(&self) {
        self.core.close();
    }

    /// Resolves when the session is closed.
    pub async fn closed(&self) {
        let mut rx = self.core.closed.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// The newest published (redacted) state.
    pub fn published(&self) -> Published {
        self.core.published.borrow().clone()
    }

    /// The redacted state (built from the published snapshot's tree at each call).
    pub fn state(&self) -> Value {
        self.core.published.borrow().state()
    }

    /// Runs `f` on the typed state (a short read lock; never call back into the session).
    pub fn with_state<R>(&self, f: impl FnOnce(&A::State) -> R) -> R {
        let guard = self.core.state.read();
        f(&guard)
    }

    /// The newest event id.
    pub fn last_event_id(&self) -> u64 {
        self.core.events.lock().newest_id()
    }

    /// Subscribes to the session's events after `last_event_id` (replay) or from a snapshot.
    /// The replay is read from the history as the subscriber reads it. The subscription holds
    /// the session ([`Session::hold`]).
    pub fn subscribe(&self, last_event_id: Option<&str>) -> Subscription {
        let pending = self.pending();
        events::subscribe(&self.core.events, last_event_id, pending, self.hold())
            .with_work(self.core.work.clone())
    }

    /// [`Session::subscribe`], and on a fleet's store (PostgreSQL) a `last_event_id` this
    /// process did not send (another replica did) resumes from the store's commit log: the
    /// first event is the `state` now with the `stateDiff` from the state the client saw
    /// (`docs/lap.md` §6.6), or a snapshot when the log no longer holds those commits.
    pub(crate) async fn subscribe_anywhere(&self, last_event_id: Option<&str>) -> Subscription {
        if let Some(seen) = events::resume_point(&self.core.events, last_event_id) {
            if let Some((now, diff)) = resume::view_patch_since(&self.core, seen).await {
                let (pending, hold) = (self.pending(), self.hold());
                if let Some(sub) =
                    events::subscribe_resumed(&self.core.events, now.seq, diff, pending, hold)
                {
                    return sub.with_work(self.core.work.clone());
                }
            }
        }
        self.subscribe(last_event_id)
    }

    /// Holds the session: the host does not close it as idle while the returned guard is
    /// alive (`docs/semantics.md` §0).
    pub fn hold(&self) -> SessionHold {
        self.core.holders.fetch_add(1, Ordering::AcqRel);
        SessionHold {
            holders: self.core.holders.clone(),
        }
    }

    /// Closes the session as idle for `idle_ms`, audited as `session-expired`.
    pub(crate) fn close_idle(&self, idle_ms: u64) {
        self.core.audit(
            AuditEvent::SessionExpired,
            None,
            serde_json::json!({"sessionId": self.core.id, "idleMs": idle_ms}),
        );
        self.close();
    }

    /// Whether a [`SessionHold`] of this session is alive.
    pub(crate) fn is_held(&self) -> bool {
        self.core.holders.load(Ordering::Acquire) > 0
    }

    /// The log, newest first, at most `n` entries, optionally filtered by kind.
    pub fn recent_log(&self, n: usize, kind: Option<&str>) -> Vec<LogEntry> {
        self.core.log.lock().recent(n, kind)
    }

    /// Resolves once the session is in its store (at once without a store), so another
    /// process can load it.
    pub async fn stored(&self) {
        let mut rx = self.core.stored.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Asks the session task to reload the stored session: another process committed or
    /// changed its confirmations (a no-op without a store).
    pub fn refresh_from_store(&self) {
        if self.core.persist.is_some() {
            self.core.refresh.notify_one();
        }
    }

    /// Appends a log entry and publishes it as a `log` event. An entry over the log-entry
    /// budget is bounded first (see [`crate::config::Budgets::log_entry_bytes`]).
    pub fn append_log(&self, entry: LogEntry) {
        self.core.append_log(entry);
    }
}

impl<A: App> SessionCore<A> {
    /// Closes the session: its task stops, waits answer "session closed", event streams end,
    /// the confirmation store is dropped.
    pub(crate) fn close(&self) {
        self.closed.send_replace(true);
        self.events.lock().close();
        self.confirms.lock().clear();
        self.confirm_changed.send_modify(|v| *v += 1);
    }

    fn append_log(&self, mut entry: LogEntry) {
        // Serialized once (when within its budget): the log and the event history share the
        // text.
        let text: Arc<str> =
            match activity::bounded_text(&mut entry, self.config.budgets.log_entry_bytes) {
                Ok(text) => Arc::from(text),
                Err(_) => return,
            };
        let mut log = self.log.lock();
        log.push_text(entry.kind, text.clone());
        self.events.lock().publish(EventBody::Log(text));
        if self.persist.is_some() {
            self.log_dirty.notify_one();
        }
    }

    fn now(&self) -> u64 {
        self.config.clock.now_ms()
    }

    /// Publishes a new snapshot (the session task only): its patch goes to the ring of recent
    /// patches first, so a reader that sees the new `seq` finds its patch there.
    fn publish(&self, published: Published) {
        let from = self.published.borrow().seq;
        let bytes = self
            .patches
            .lock()
            .push(from, published.seq, published.patch.clone());
        self.published.send_replace(published);
        self.release.after_commit(bytes);
    }

    /// Writes an audit entry (owner as `uid`) without blocking the caller.
    fn audit(&self, event: AuditEvent, tid: Option<String>, detail: Value) {
        let mut entry = AuditEntry::new(self.now(), event, detail).with_uid(self.owner.clone());
        entry.tid = tid;
        let write = self.audit.write(entry);
        // Outside a runtime (a host driven from synchronous code) there is nothing to write on.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(write);
        }
    }

    /// Queues `msg` behind everything already queued and returns its ticket.
    fn enqueue(&self, msg: A::Msg, origin: Origin) -> Result<u64, SessionClosed> {
        self.push(msg, origin, None)
    }

    /// Enqueues `msg` with a signal that fires right after its commit.
    fn enqueue_watched(
        &self,
        msg: A::Msg,
        origin: Origin,
    ) -> Result<(u64, oneshot::Receiver<Applied>), SessionClosed> {
        let (tx, rx) = oneshot::channel();
        let ticket = self.push(msg, origin, Some(tx))?;
        Ok((ticket, rx))
    }

    fn push(
        &self,
        msg: A::Msg,
        origin: Origin,
        committed: Option<oneshot::Sender<Applied>>,
    ) -> Result<u64, SessionClosed> {
        let mut next = self.next_ticket.lock();
        let ticket = *next;
        self.inbox
            .send(Envelope {
                msg,
                ticket,
                origin,
                committed,
            })
            .map_err(|_| SessionClosed)?;
        *next += 1;
        Ok(ticket)
    }

    /// Whether the message with `ticket` has been committed.
    fn is_committed(&self, ticket: u64) -> bool {
        self.committed_through.load(Ordering::Acquire) >= ticket
    }
}

/// Serializes and redacts a state from scratch (the `@redact` plan, then the app's hook); a
/// state that does not serialize is an error (its text starts with
/// `state failed to serialize: `), never a silent `null`.
pub(crate) fn redact<A: App>(
    app: &A,
    plan: &tea_agent_schema::redact::RedactPlan,
    state: &A::State,
) -> Result<Value, String> {
    crate::algo::snapshot::serialize_full(app, plan, state)
}
