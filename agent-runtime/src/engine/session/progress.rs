//! What the caller of one dispatch follows of the effects its message started
//! (`docs/semantics.md` §5.6): the drain waits for them and reads their progress and their
//! cancellation ([`OwnWork`]); a caller that shows progress while it waits (MCP's
//! `notifications/progress`) follows the latest report through a [`DispatchWatch`]. Both read
//! `watch`es: a flood of reports is the latest one, never a queue.

use std::sync::Arc;

use futures::future::select_all;
use parking_lot::Mutex;
use tea_agent_schema::protocol::{CancelledWork, Progress};
use tokio::sync::watch;

use super::work::{End, SlotState, WorkSlot};

// What only MCP uses (a `progressToken`'s notifications, `notifications/cancelled`) is dead
// code in a build without the `mcp` feature.

/// One dispatch's work as its caller follows it: the key it was sent with, the latest
/// progress any of its effects reported, and the caller's cancellation of them.
pub(crate) struct DispatchWatch {
    key: std::sync::OnceLock<String>,
    progress: watch::Sender<Option<Progress>>,
    cancel: Mutex<Cancel>,
    /// The caller shows the progress (an MCP call with a `progressToken`).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    shown: std::sync::atomic::AtomicBool,
}

/// Where a dispatch's cancellation by its caller stands.
enum Cancel {
    /// Not asked; `armed` cancels the effects once the commit started them.
    Open {
        armed: Option<Box<dyn FnOnce() + Send>>,
    },
    /// Asked (before or after the commit).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    Asked,
}

impl std::fmt::Debug for DispatchWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchWatch")
            .field("key", &self.key.get())
            .finish_non_exhaustive()
    }
}

impl DispatchWatch {
    /// A watch of one dispatch.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(DispatchWatch {
            key: std::sync::OnceLock::new(),
            progress: watch::channel(None).0,
            cancel: Mutex::new(Cancel::Open { armed: None }),
            shown: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The caller shows the dispatch's progress as it comes: an action tool then waits for
    /// the work (`docs/mcp.md` §Progress and cancellation).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn show_progress(&self) {
        self.shown.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the caller shows the progress.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn shows_progress(&self) -> bool {
        self.shown.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The commit started the dispatch's effects: `cancel` stops them, now when the caller
    /// already asked, or when it asks.
    pub(crate) fn arm(&self, cancel: Box<dyn FnOnce() + Send>) {
        let mut state = self.cancel.lock();
        match &mut *state {
            Cancel::Open { armed } => *armed = Some(cancel),
            Cancel::Asked => {
                drop(state);
                cancel();
            }
        }
    }

    /// The caller gave up on the dispatch and stops its effects (MCP's
    /// `notifications/cancelled`), now or as soon as its commit starts them.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn cancel(&self) {
        let armed = match std::mem::replace(&mut *self.cancel.lock(), Cancel::Asked) {
            Cancel::Open { armed } => armed,
            Cancel::Asked => None,
        };
        if let Some(cancel) = armed {
            cancel();
        }
    }

    /// The dispatch's `idempotencyKey`.
    pub(crate) fn key(&self) -> Option<&str> {
        self.key.get().map(String::as_str)
    }

    /// The dispatch was sent with the `idempotencyKey` `key` (the first one given stays).
    pub(crate) fn set_key(&self, key: &str) {
        let _ = self.key.set(key.to_owned());
    }

    /// Follows the latest progress report of the dispatch's effects.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn follow(&self) -> watch::Receiver<Option<Progress>> {
        self.progress.subscribe()
    }

    /// The latest progress of the dispatch's effects (reported here, or by a paired app).
    pub(crate) fn report(&self, progress: Progress) {
        self.progress.send_if_modified(|latest| {
            let changed = latest.as_ref() != Some(&progress);
            *latest = Some(progress);
            changed
        });
    }
}

/// The effects a waiting dispatch started, as its drain follows them.
#[derive(Debug, Default)]
pub(crate) struct OwnWork {
    slots: Vec<(u64, watch::Receiver<SlotState>, bool)>,
    cancelled: Vec<CancelledWork>,
    follow: Option<Arc<DispatchWatch>>,
}

/// What changed among a dispatch's effects.
#[derive(Debug)]
pub(crate) struct WorkChange {
    /// One of them ended.
    pub ended: bool,
}

impl OwnWork {
    /// The effects `slots`, their progress passed on to `follow`.
    pub(crate) fn of(slots: &[Arc<WorkSlot>], follow: Option<Arc<DispatchWatch>>) -> Self {
        let mut own = OwnWork {
            slots: slots.iter().map(|s| (s.id(), s.follow(), false)).collect(),
            cancelled: Vec::new(),
            follow,
        };
        own.read();
        own
    }

    /// Whether one of them still runs.
    pub(crate) fn running(&self) -> bool {
        self.slots.iter().any(|(_, _, ended)| !ended)
    }

    /// The ones that were cancelled, in the order they ended.
    pub(crate) fn take_cancelled(&mut self) -> Vec<CancelledWork> {
        self.read();
        std::mem::take(&mut self.cancelled)
    }

    /// Waits for a change of one that runs (never resolves when none does).
    pub(crate) async fn changed(&mut self) -> WorkChange {
        let waits: Vec<_> = self
            .slots
            .iter_mut()
            .filter(|(_, _, ended)| !ended)
            .map(|(_, rx, _)| Box::pin(rx.changed()))
            .collect();
        if waits.is_empty() {
            return std::future::pending().await;
        }
        let _ = select_all(waits).await;
        WorkChange { ended: self.read() }
    }

    /// Reads every slot's news: passes the latest progress on and records the ends; true when
    /// one ended.
    fn read(&mut self) -> bool {
        let mut ended_now = false;
        let mut latest = None;
        for (_, rx, ended) in self.slots.iter_mut().filter(|(_, _, ended)| !ended) {
            let state = rx.borrow_and_update().clone();
            // The last report of an effect that ended is passed on too.
            latest = state.progress.or(latest);
            if let Some(end) = state.end {
                *ended = true;
                ended_now = true;
                if let End::Cancelled(c) = end {
                    self.cancelled.push(c);
                }
            }
        }
        if let (Some(progress), Some(follow)) = (latest, &self.follow) {
            follow.report(progress);
        }
        ended_now
    }
}
