//! The effects a session is running (`docs/semantics.md` §5.6): one [`WorkSlot`] per effect
//! task on the session's [`WorkBoard`], with its latest progress, its cancellation signal and
//! the handle that aborts it. A slot is on the board from the effect's start to its end; the
//! board's version changes whenever a slot starts, ends, is cancelled or reports progress, so
//! readers (the event streams, `/wait`) follow it through one `watch`, never a queue.
//!
//! Each slot is charged to the host's budget of what sessions retain while it is on the board
//! ([`slot_cost`], held: running work is never shed for the budget, `docs/stores.md` §Memory).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tea_agent_schema::protocol::{CancelledWork, Progress, StartedBy, Work};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::retained::{block, with_slack, HeldCharge};
use crate::app::EffectWork;

/// What a slot on the board takes on the heap, as charged to the host's budget: the slot, its
/// two channels, what started it (shared by the effects of one message, charged to each) and
/// the longest progress text it may report.
pub(crate) fn slot_cost(starter: &Starter) -> usize {
    // A `watch` channel's shared part: its value, lock, version and notifiers.
    const CHANNEL: usize = 160;
    let text = |s: &Option<String>| s.as_ref().map_or(0, |s| block(s.len()));
    with_slack(
        block(16 + std::mem::size_of::<WorkSlot>())
        + 2 * block(CHANNEL + std::mem::size_of::<SlotState>())
        + block(16 + std::mem::size_of::<Starter>())
        + text(&starter.tid)
        + text(&starter.key)
        + text(&starter.variant)
        + text(&starter.intent)
        + block(4 * tea_agent_schema::protocol::PROGRESS_TEXT_CHARS)
        // Its node in the board's map.
        + 2 * std::mem::size_of::<(u64, Arc<WorkSlot>)>(),
    )
}

/// What started a running effect: the message whose commit returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Starter {
    pub started_by: StartedBy,
    /// The agent token whose message it was.
    pub tid: Option<String>,
    /// The `idempotencyKey` of that message, when it had one.
    pub key: Option<String>,
    /// The message's variant.
    pub variant: Option<String>,
    /// That variant's intent.
    pub intent: Option<String>,
}

impl Starter {
    /// The app's own work (`init`'s effects, an effect's messages).
    pub(crate) fn app() -> Self {
        Starter {
            started_by: StartedBy::App,
            tid: None,
            key: None,
            variant: None,
            intent: None,
        }
    }
}

/// How a slot ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The effect returned (or failed) without being cancelled.
    Done,
    /// It was cancelled: it returned after the signal, or was aborted after the grace.
    Cancelled(CancelledWork),
}

/// What waiters follow of one slot.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SlotState {
    /// The latest progress report.
    pub progress: Option<Progress>,
    /// Set once, when the effect ends.
    pub end: Option<End>,
}

/// One running effect.
pub(crate) struct WorkSlot {
    id: u64,
    seq: u64,
    starter: Arc<Starter>,
    cancel: watch::Sender<bool>,
    /// Who asked it to stop, once someone did.
    cancelled_by: Mutex<Option<String>>,
    state: watch::Sender<SlotState>,
    abort: Mutex<Option<AbortHandle>>,
    board: Weak<WorkBoard>,
    /// What it is charged ([`slot_cost`]).
    cost: usize,
}

impl std::fmt::Debug for WorkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkSlot")
            .field("id", &self.id)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl WorkSlot {
    /// The work's id in its session.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The seq of the commit that started it.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// What started it.
    pub(crate) fn starter(&self) -> &Starter {
        &self.starter
    }

    /// Follows the slot's progress and end.
    pub(crate) fn follow(&self) -> watch::Receiver<SlotState> {
        self.state.subscribe()
    }

    /// Keeps the handle that aborts the effect's task.
    pub(crate) fn set_abort(&self, abort: AbortHandle) {
        *self.abort.lock() = Some(abort);
    }

    /// Aborts the effect's task.
    pub(crate) fn abort(&self) {
        if let Some(abort) = self.abort.lock().take() {
            abort.abort();
        }
    }

    /// Who asked it to stop, if anyone did.
    pub(crate) fn cancelled_by(&self) -> Option<String> {
        self.cancelled_by.lock().clone()
    }

    /// Asks the effect to stop on behalf of `by`; false when it was already asked or ended.
    pub(crate) fn request_cancel(&self, by: &str) -> bool {
        if self.state.borrow().end.is_some() {
            return false;
        }
        {
            let mut cancelled_by = self.cancelled_by.lock();
            if cancelled_by.is_some() {
                return false;
            }
            *cancelled_by = Some(by.to_owned());
        }
        self.cancel.send_replace(true);
        self.bump();
        true
    }

    /// Ends the slot with `end` and takes it off the board; false when it had ended already
    /// (the effect's return and the grace's abort race: the first one ends it).
    pub(crate) fn finish(&self, end: End) -> bool {
        let ended = self.state.send_if_modified(|s| {
            if s.end.is_some() {
                return false;
            }
            s.end = Some(end);
            true
        });
        if ended {
            if let Some(board) = self.board.upgrade() {
                board.running.lock().remove(&self.id);
                board.held.lock().sub(self.cost);
                board.bump();
            }
        }
        ended
    }

    /// The slot as agents and the console read it.
    fn work(&self) -> Work {
        let state = self.state.borrow();
        Work {
            id: self.id,
            seq: self.seq,
            started_by: self.starter.started_by,
            tid: self.starter.tid.clone(),
            variant: self.starter.variant.clone(),
            intent: self.starter.intent.clone(),
            progress: state.progress.clone(),
            cancelling: self.cancelled_by.lock().is_some(),
        }
    }

    fn bump(&self) {
        if let Some(board) = self.board.upgrade() {
            board.bump();
        }
    }
}

impl EffectWork for WorkSlot {
    fn progress(&self, progress: Progress) {
        let progress = match progress.text {
            Some(ref text)
                if text.chars().count() > tea_agent_schema::protocol::PROGRESS_TEXT_CHARS =>
            {
                let text = text.clone();
                progress.with_text(text)
            }
            _ => progress,
        };
        let replaced = self.state.send_if_modified(|s| {
            if s.end.is_some() {
                return false;
            }
            s.progress = Some(progress);
            true
        });
        if replaced {
            self.bump();
        }
    }

    fn cancel_signal(&self) -> watch::Receiver<bool> {
        self.cancel.subscribe()
    }
}

/// A session's running effects.
#[derive(Debug)]
pub(crate) struct WorkBoard {
    running: Mutex<BTreeMap<u64, Arc<WorkSlot>>>,
    next_id: AtomicU64,
    version: watch::Sender<u64>,
    /// What the slots on the board are charged, together.
    held: Mutex<HeldCharge>,
}

impl WorkBoard {
    /// An empty board, its slots charged to `held`.
    pub(crate) fn new(held: HeldCharge) -> Arc<Self> {
        Arc::new(WorkBoard {
            running: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
            version: watch::channel(0).0,
            held: Mutex::new(held),
        })
    }

    /// Bytes the slots on the board are charged.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.held.lock().bytes()
    }

    /// Puts a new effect on the board, started by the commit `seq` of `starter`'s message.
    pub(crate) fn start(self: &Arc<Self>, seq: u64, starter: Arc<Starter>) -> Arc<WorkSlot> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let cost = slot_cost(&starter);
        let slot = Arc::new(WorkSlot {
            id,
            seq,
            starter,
            cancel: watch::channel(false).0,
            cancelled_by: Mutex::new(None),
            state: watch::channel(SlotState::default()).0,
            abort: Mutex::new(None),
            board: Arc::downgrade(self),
            cost,
        });
        self.running.lock().insert(id, slot.clone());
        self.held.lock().add(cost);
        self.bump();
        slot
    }

    /// The running effects, oldest first.
    pub(crate) fn list(&self) -> Vec<Work> {
        let slots: Vec<Arc<WorkSlot>> = self.running.lock().values().cloned().collect();
        slots.iter().map(|s| s.work()).collect()
    }

    /// The running effects `pick` selects.
    pub(crate) fn select(&self, pick: impl Fn(&WorkSlot) -> bool) -> Vec<Arc<WorkSlot>> {
        self.running
            .lock()
            .values()
            .filter(|s| pick(s))
            .cloned()
            .collect()
    }

    /// Follows the board: its version changes at every start, end, cancellation and progress
    /// report.
    pub(crate) fn follow(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_coalesced_and_ignored_after_the_end() {
        let board = WorkBoard::new(
            crate::engine::session::Retained::unbounded()
                .session()
                .held(),
        );
        let slot = board.start(3, Arc::new(Starter::app()));
        let mut follow = slot.follow();
        for i in 0..10_000 {
            slot.progress(Progress::steps(i, 10_000));
        }
        assert_eq!(
            follow.borrow_and_update().progress,
            Some(Progress::steps(9_999, 10_000))
        );
        assert_eq!(board.list().len(), 1);
        assert!(slot.finish(End::Done));
        assert!(!slot.finish(End::Done));
        slot.progress(Progress::fraction(0.5));
        assert_eq!(
            slot.follow().borrow().progress,
            Some(Progress::steps(9_999, 10_000))
        );
        assert!(board.list().is_empty());
        assert!(!slot.request_cancel("human"));
    }

    #[test]
    fn a_cancel_is_asked_once() {
        let board = WorkBoard::new(
            crate::engine::session::Retained::unbounded()
                .session()
                .held(),
        );
        let slot = board.start(1, Arc::new(Starter::app()));
        let signal = slot.cancel_signal();
        assert!(slot.request_cancel("agent"));
        assert!(!slot.request_cancel("human"));
        assert!(*signal.borrow());
        assert_eq!(slot.cancelled_by().as_deref(), Some("agent"));
        assert!(board.list()[0].cancelling);
    }

    /// Running work is charged to the host's budget while it is on the board, refunded when
    /// it ends, and never shed: the rings give way to it.
    #[test]
    fn running_work_is_charged_and_refunded() {
        let retained = crate::engine::session::Retained::new(100_000);
        let session = retained.session();
        let board = WorkBoard::new(session.held());
        let starter = Arc::new(Starter {
            tid: Some("t".repeat(40)),
            ..Starter::app()
        });
        let cost = slot_cost(&starter);
        assert!(cost > std::mem::size_of::<WorkSlot>() + 4 * 200, "{cost}");
        let a = board.start(1, starter.clone());
        let b = board.start(1, starter);
        assert_eq!(board.held_bytes(), 2 * cost);
        assert_eq!((retained.total(), retained.held()), (2 * cost, 2 * cost));
        assert!(a.finish(End::Done));
        assert!(!a.finish(End::Done));
        assert_eq!(retained.total(), cost);
        drop(b);
        // Still on the board (its task holds it elsewhere): still charged.
        assert_eq!(retained.total(), cost);
        drop(board);
        assert_eq!((retained.total(), retained.held()), (0, 0));
    }
}
