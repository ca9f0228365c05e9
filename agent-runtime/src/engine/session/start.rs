//! Starting a session: its shared core built from what the host's sessions share ([`Parts`]),
//! a new one from the app's `init` or one rebuilt from its stored record, and the task spawned
//! with the initial effects.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, watch};

use super::activity::ActivityLog;
use super::confirm::ConfirmStore;
use super::events::EventHub;
use super::queue::Envelope;
use super::{
    decisions, effects, notes, panic_text, patches, pending, persist, retained, task, transcript,
    work, Parts, Published, Session, SessionCore, SessionError,
};
use crate::algo::snapshot::Snapshots;
use crate::app::{overrides_redact, App};

/// The receiving end of a session's inbox, handed to its task.
type Inbox<M> = mpsc::UnboundedReceiver<Envelope<M>>;

/// A session's shared core and its inbox, before the task starts.
type Built<A> = (Arc<SessionCore<A>>, Inbox<<A as App>::Msg>);

impl<A: App> Session<A> {
    /// Starts a new session from the app's `init`; must be called inside a tokio runtime.
    /// With `persist`, the session is written to the store before its first commit.
    pub(crate) fn start(
        id: String,
        owner: Option<String>,
        parts: Parts<A>,
        persist: Option<persist::Persistence>,
    ) -> Result<Self, SessionError> {
        let (state, effects) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parts.app.init())).map_err(
                |p| SessionError::Internal(format!("init panicked: {}", panic_text(&*p))),
            )?;
        let created_at = parts.config.clock.now_ms();
        let first = match &persist {
            Some(p) => Some(persist::FirstWrite::Insert(p.new_record(
                &id,
                owner.clone(),
                created_at,
                &state,
            )?)),
            None => None,
        };
        let (core, rx) = Self::core(id, owner, created_at, 0, state, parts, persist)?;
        let session = Session { core };
        session.spawn(rx, first, effects);
        Ok(session)
    }

    /// Rebuilds a session from its stored record (see [`persist::restore`]); must be called
    /// inside a tokio runtime.
    pub(crate) fn restore(
        record: crate::engine::store::SessionRecord,
        parts: Parts<A>,
        persist: persist::Persistence,
    ) -> Result<Self, SessionError> {
        persist::restore(record, parts, persist)
    }

    pub(super) fn core(
        id: String,
        owner: Option<String>,
        created_at: u64,
        seq: u64,
        state: A::State,
        parts: Parts<A>,
        persist: Option<persist::Persistence>,
    ) -> Result<Built<A>, SessionError> {
        let Parts {
            app,
            catalog,
            config,
            audit,
            release,
            retained,
        } = parts;
        let snapshots = Snapshots::new(
            catalog.redact_plan().clone(),
            overrides_redact(&*app),
            catalog.gates().clone(),
        );
        let redacted = Arc::new(
            snapshots
                .initial(&*app, &state)
                .map_err(SessionError::Internal)?,
        );
        let (inbox, rx) = mpsc::unbounded_channel();
        let first = Published::new(seq, redacted, Arc::from([]), snapshots.unknown_gates());
        let (published, _) = watch::channel(first.clone());
        let notes = notes::Notes::new();
        let (confirm_changed, _) = watch::channel(0);
        let (closed, _) = watch::channel(false);
        let in_memory = persist.is_none();
        let retained = retained.session();
        let (undo, undo_rx) = mpsc::unbounded_channel();
        let core = Arc::new(SessionCore {
            undo,
            undo_rx: Mutex::new(Some(undo_rx)),
            holders: Arc::new(AtomicUsize::new(0)),
            id,
            owner,
            created_at,
            confirms: pending::Confirms::new(
                ConfirmStore::with_budgets(
                    crate::clock::millis(config.confirm_max_age),
                    config.budgets.max_pending_confirms,
                    config.budgets.pending_confirm_bytes,
                ),
                retained.held(),
            ),
            events: Arc::new(Mutex::new(EventHub::with_budgets(
                config.event_history,
                config.budgets.event_bytes,
                config.budgets.event_history_bytes,
                first,
                retained.charge(),
            ))),
            log: Arc::new(Mutex::new(ActivityLog::new(
                config.budgets.log_total_bytes,
                retained.charge(),
            ))),
            last_listing: Mutex::new(None),
            release,
            patches: Arc::new(Mutex::new(patches::PatchRing::new(
                config.budgets.patch_history,
                config.budgets.patch_history_bytes,
                retained.charge(),
            ))),
            transcript: Arc::new(Mutex::new(transcript::TranscriptRing::new(
                config.budgets.transcript_entries,
                config.budgets.transcript_bytes,
                retained.charge(),
            ))),
            app,
            catalog,
            config,
            audit,
            state: RwLock::new(state),
            snapshots: Mutex::new(snapshots),
            inbox,
            published,
            notes,
            confirm_changed,
            outcomes: Mutex::new(HashMap::new()),
            validates_logged: Mutex::new(HashSet::new()),
            closed,
            next_ticket: Mutex::new(1),
            committed_through: AtomicU64::new(0),
            persist,
            refresh: tokio::sync::Notify::new(),
            stored: watch::channel(in_memory).0,
            log_dirty: tokio::sync::Notify::new(),
            work: work::WorkBoard::new(retained.held()),
        });
        // A fleet's session numbers its events by commit, so a stream resumes on any replica
        // (`docs/lap.md` §6.6).
        let shared = core.persist.as_ref().is_some_and(|p| {
            p.store.listener() != crate::engine::store::ChangesListener::NotShared
        });
        if shared {
            core.events.lock().number_by_commit(seq);
        }
        retained::attach(&core.events);
        retained::attach(&core.log);
        retained::attach(&core.patches);
        retained::attach(&core.transcript);
        Ok((core, rx))
    }

    /// Starts the session task (after writing `record`, when given) and the initial effects.
    pub(super) fn spawn(
        &self,
        rx: Inbox<A::Msg>,
        first: Option<persist::FirstWrite>,
        effects: Vec<A::Effect>,
    ) {
        let core = self.core.clone();
        decisions::spawn_confirm_saver(&core);
        persist::spawn_log_saver(&core);
        tokio::spawn(async move {
            if let Some(first) = first {
                persist::first_write(&core, first).await;
            }
            core.stored.send_replace(true);
            let starter = Arc::new(work::Starter::app());
            let seq = core.published.borrow().seq;
            for effect in effects {
                effects::spawn_effect(&core, effect, seq, &starter);
            }
            task::run(core, rx).await;
        });
    }
}
