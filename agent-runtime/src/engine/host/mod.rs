//! The host: one app, its checked schema (`Catalog`), and the sessions running it.

mod eviction;
mod reload;
mod remembered;
mod stored;
mod table;

pub(crate) use eviction::LiveAgents;

#[cfg(test)]
mod startup_tests;

use std::sync::{Arc, Once, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::algo::catalog::{Catalog, CatalogError};
use crate::app::App;
use crate::config::HostConfig;
use crate::engine::session::persist::Persistence;
use crate::engine::session::{Parts, Session, SessionError};
use crate::engine::session::{Release, Retained};
use crate::engine::store::{SessionStore, StoreResult};
use crate::security::{AuditSink, TracingAuditSink};
use remembered::RememberedIds;
use table::SessionTable;

struct HostInner<A: App> {
    app: Arc<A>,
    catalog: Arc<Catalog>,
    config: HostConfig,
    audit: Arc<dyn AuditSink>,
    sessions: RwLock<SessionTable<A>>,
    /// Where sessions are written (none: in memory only, the default).
    store: Option<Arc<dyn SessionStore>>,
    /// Serializes reloads from the store, so two requests cannot rebuild one session twice.
    reloading: tokio::sync::Mutex<()>,
    /// Serializes creations counted on the store (`stored.rs`).
    creating: tokio::sync::Mutex<()>,
    /// Starts the idle sweeper with the first session (it needs a tokio runtime).
    sweeper: Once,
    /// Starts the listener for other processes' changes (shared stores only).
    listener: Once,
    /// Stored sessions refused as not migrated, already audited by this process (at most
    /// [`MAX_REFUSED_AUDITED`], emptied when full).
    refused: RememberedIds,
    /// Gives the memory of its sessions' big commits back, one release per burst.
    release: Release,
    /// What its sessions' rings retain in all, within `Budgets::retained_bytes` (one
    /// session's at most a [`SESSION_SHARE`]th of it).
    retained: Retained,
    /// Sessions deleted from the store (closed here, or announced by another process): a
    /// load that read the record before the delete never brings one back. At most
    /// [`MAX_DELETED_REMEMBERED`], emptied when full (a load in flight lasts milliseconds).
    deleted: RememberedIds,
}

/// A stored session that cannot be loaded (`docs/stores.md` §Upgrades).
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    /// Its owner (only they, or its agents, are told why).
    pub(crate) owner: Option<String>,
    /// Why.
    pub(crate) reason: String,
}

/// Refused sessions remembered so each is audited once (a bound, not a guarantee).
const MAX_REFUSED_AUDITED: usize = 1024;

/// One session's rings hold at most this fraction of the host's budget of what sessions
/// retain (`docs/stores.md` §Memory): a flooded session sheds its own oldest entries before it
/// pushes out other sessions'.
const SESSION_SHARE: usize = 8;

/// Deleted sessions remembered against loads in flight.
const MAX_DELETED_REMEMBERED: usize = 4096;

/// Stored sessions looked at per query of the stored-session expiry and of eviction.
const STALE_BATCH: u64 = 256;

/// Queries of one expiry or eviction run at most (a bound on its time).
const STALE_ROUNDS: usize = 16;

/// The refusal of a creation whose caps could not be counted (logged for the operator).
fn counting_failed(e: &dyn std::fmt::Display) -> CreateSessionError {
    tracing::error!(target: "tea_agent_runtime::store", "counting sessions failed: {e}");
    CreateSessionError::Store(
        "the session store could not count its sessions; try again later".into(),
    )
}

/// Hosts the sessions of one app. Cheap to clone (shared).
pub struct Host<A: App> {
    inner: Arc<HostInner<A>>,
}

impl<A: App> Clone for Host<A> {
    fn clone(&self) -> Self {
        Host {
            inner: self.inner.clone(),
        }
    }
}

impl<A: App> std::fmt::Debug for Host<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("app", &self.inner.app.name())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Why [`Host::create_session`] made no session.
#[derive(Debug, thiserror::Error)]
pub enum CreateSessionError {
    /// The host or the owner already holds the most open sessions allowed
    /// ([`HostConfig::max_sessions`], [`HostConfig::max_sessions_per_owner`]).
    #[error("{0}")]
    Capacity(String),
    /// The session could not start.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The store could not count the sessions the caps are checked against: refused rather
    /// than let the caps pass (the failure is logged for the operator).
    #[error("{0}")]
    Store(String),
}

impl<A: App> Host<A> {
    /// Builds a host with default options (lenient policy, system clock, `tracing` audit).
    /// Fails with every start-up error of the app's types at once; [`crate::describe`] runs
    /// the same checks, for a snapshot test.
    pub fn new(app: A) -> Result<Self, CatalogError> {
        Self::with_config(app, HostConfig::default(), Arc::new(TracingAuditSink))
    }

    /// Builds a host: runs the start-up checks of the app's types ([`Catalog::build`]:
    /// the `Msg` schema against the derive's records, tags, examples, expressions, `@redact`
    /// tags, constraint keywords), compiles nothing lazily that could fail later, and caches
    /// the describe document.
    pub fn with_config(
        app: A,
        config: HostConfig,
        audit: Arc<dyn AuditSink>,
    ) -> Result<Self, CatalogError> {
        Self::build(app, config, audit, None)
    }

    /// Like [`Host::with_config`], with durable sessions: every session is written to `store`
    /// and every commit is stored before it is published and before its effects start. A
    /// session missing from memory (the process restarted, or it was idle for
    /// [`HostConfig::session_idle`] and dropped) is reloaded from the store on its next
    /// use.
    pub fn with_store(
        app: A,
        config: HostConfig,
        audit: Arc<dyn AuditSink>,
        store: Arc<dyn SessionStore>,
    ) -> Result<Self, CatalogError> {
        Self::build(app, config, audit, Some(store))
    }

    fn build(
        app: A,
        config: HostConfig,
        audit: Arc<dyn AuditSink>,
        store: Option<Arc<dyn SessionStore>>,
    ) -> Result<Self, CatalogError> {
        let catalog = Catalog::build::<A>(&app)?;
        let config_budget = config.budgets.retained_bytes;
        Ok(Host {
            inner: Arc::new(HostInner {
                app: Arc::new(app),
                catalog: Arc::new(catalog),
                config,
                audit,
                sessions: RwLock::new(SessionTable::new()),
                store,
                reloading: tokio::sync::Mutex::new(()),
                creating: tokio::sync::Mutex::new(()),
                sweeper: Once::new(),
                listener: Once::new(),
                refused: RememberedIds::new(MAX_REFUSED_AUDITED),
                release: Release::default(),
                retained: Retained::with_share(config_budget, config_budget / SESSION_SHARE),
                deleted: RememberedIds::new(MAX_DELETED_REMEMBERED),
            }),
        })
    }

    /// The session store, when sessions are durable.
    pub fn session_store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.inner.store.as_ref()
    }

    fn parts(&self) -> Parts<A> {
        Parts {
            app: self.inner.app.clone(),
            catalog: self.inner.catalog.clone(),
            config: self.inner.config.clone(),
            audit: self.inner.audit.clone(),
            release: self.inner.release.clone(),
            retained: self.inner.retained.clone(),
        }
    }

    fn persistence(&self) -> Option<Persistence> {
        let store = self.inner.store.clone()?;
        Some(Persistence::new(store, self.inner.catalog.schema_hash()))
    }

    /// The app.
    pub fn app(&self) -> &A {
        &self.inner.app
    }

    /// The checked schema: annotations, validator, describe document.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The options.
    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// The audit sink.
    pub fn audit_sink(&self) -> &Arc<dyn AuditSink> {
        &self.inner.audit
    }

    /// The cached describe document (with `schemaHash`).
    pub fn describe(&self) -> &Value {
        self.inner.catalog.describe()
    }

    /// The describe document, serialized once.
    pub fn describe_json(&self) -> &serde_json::value::RawValue {
        self.inner.catalog.describe_json()
    }

    /// The describe document as the `/describe` answer (shares the serialized text).
    pub fn description(&self) -> tea_agent_schema::protocol::Description {
        self.inner.catalog.description()
    }

    /// The lean describe document `/observe` embeds (no `annotations`).
    pub fn observe_description(&self) -> tea_agent_schema::protocol::Description {
        self.inner.catalog.observe_description()
    }

    /// The table of sessions, write-locked; when it is at `max_sessions`, closed sessions are
    /// dropped and idle ones expired first, so a new one may fit.
    fn sessions_making_room(&self, now: u64) -> std::sync::RwLockWriteGuard<'_, SessionTable<A>> {
        let config = &self.inner.config;
        let mut sessions = self
            .inner
            .sessions
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= config.max_sessions {
            sessions.prune_closed();
            if config.session_idle_ms() > 0 {
                sessions.expire_idle(now, config.session_idle_ms());
            }
        }
        sessions
    }

    /// Starts a new session owned by `owner`; must be called inside a tokio runtime.
    ///
    /// Fails with [`CreateSessionError::Capacity`] when the host holds `max_sessions` open sessions,
    /// or `owner` holds `max_sessions_per_owner` of them (sessions idle for
    /// [`HostConfig::session_idle`] are closed first and do not count).
    pub fn create_session(&self, owner: Option<String>) -> Result<Session<A>, CreateSessionError> {
        let config = &self.inner.config;
        self.start_sweeper();
        self.start_listener();
        let now = config.clock.now_ms();
        // Checked and inserted under one write lock, so concurrent mints cannot overshoot.
        let mut sessions = self.sessions_making_room(now);
        if sessions.len() >= config.max_sessions {
            return Err(CreateSessionError::Capacity(format!(
                "the host holds its maximum of {} open sessions",
                config.max_sessions
            )));
        }
        if let Some(owner) = owner.as_deref() {
            let mut owned = sessions.open_count_of(owner);
            if owned >= config.max_sessions_per_owner && config.session_idle_ms() > 0 {
                sessions.expire_idle(now, config.session_idle_ms());
                owned = sessions.open_count_of(owner);
            }
            if owned >= config.max_sessions_per_owner {
                return Err(CreateSessionError::Capacity(format!(
                    "you already have {owned} open sessions (at most {}); mint for one of them with {{\"session\": \"<sessionId>\"}}",
                    config.max_sessions_per_owner
                )));
            }
        }
        let id = uuid::Uuid::new_v4().to_string();
        let session = Session::start(id, owner, self.parts(), self.persistence())?;
        sessions.insert(session.clone(), now);
        Ok(session)
    }

    /// The open session `id`. Counts as a use of the session (it does not expire while used).
    pub fn session(&self, id: &str) -> Option<Session<A>> {
        let sessions = self
            .inner
            .sessions
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let entry = sessions.get(id).filter(|e| !e.session.is_closed())?;
        entry.touch(self.inner.config.clock.now_ms());
        Some(entry.session.clone())
    }

    /// Closes and forgets every session unused for [`HostConfig::session_idle`] (no request
    /// looked it up and nothing was committed or logged); returns how many. A background task
    /// does this periodically once the host has a session; call it to sweep now.
    pub fn expire_idle_sessions(&self) -> usize {
        let idle_ms = self.inner.config.session_idle_ms();
        if idle_ms == 0 {
            return 0;
        }
        let now = self.inner.config.clock.now_ms();
        self.inner
            .sessions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .expire_idle(now, idle_ms)
    }

    /// With a shared store, spawns (once) the task that hands other processes' changes to
    /// the sessions held here. It holds the host weakly and ends with it.
    fn start_listener(&self) {
        let Some(store) = self.inner.store.as_ref() else {
            return;
        };
        self.inner.listener.call_once(|| {
            let Some(mut changes) = store.changes() else {
                return;
            };
            let weak: Weak<HostInner<A>> = Arc::downgrade(&self.inner);
            tokio::spawn(async move {
                loop {
                    let change = match changes.recv().await {
                        Ok(change) => change,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    };
                    let mut fields = change.split(' ');
                    let id = fields.next().unwrap_or_default();
                    let second = fields.next();
                    let seq = second.and_then(|s| s.parse::<u64>().ok());
                    let confirms = fields.next() != Some("0");
                    let Some(inner) = weak.upgrade() else { return };
                    if second == Some("deleted") {
                        (Host { inner }).forget_deleted(id);
                        continue;
                    }
                    if let Some(session) = (Host { inner }).session(id) {
                        // This process's own commits come back too: nothing to reload.
                        let newer = seq.is_none_or(|seq| seq > session.published().seq);
                        if confirms || newer {
                            session.refresh_from_store();
                        }
                    }
                }
            });
        });
    }

    /// Spawns (once) the task that expires idle sessions every `session_idle / 4` (at least
    /// 10 ms, at most 30 s) and, with a store, stale stored sessions every minute. It holds the
    /// host weakly and ends with it.
    fn start_sweeper(&self) {
        let idle_ms = self.inner.config.session_idle_ms();
        let stored_ttl = match self.inner.store {
            Some(_) => self.inner.config.stored_session_ttl_ms(),
            None => 0,
        };
        if idle_ms == 0 && stored_ttl == 0 {
            return;
        }
        self.inner.sweeper.call_once(|| {
            let weak: Weak<HostInner<A>> = Arc::downgrade(&self.inner);
            let period_ms = match idle_ms {
                0 => 30_000,
                ms => (ms / 4).clamp(10, 30_000),
            };
            let period = Duration::from_millis(period_ms);
            let stored_every = (stored::STORED_SWEEP_MS / period_ms).max(1);
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(period);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut ticks: u64 = 0;
                loop {
                    ticker.tick().await;
                    let Some(inner) = weak.upgrade() else { return };
                    let host = Host { inner };
                    let expired = host.expire_idle_sessions();
                    if expired > 0 {
                        tracing::debug!("closed {expired} idle sessions");
                    }
                    if stored_ttl > 0 && ticks.is_multiple_of(stored_every) {
                        host.expire_stored_sessions().await;
                    }
                    ticks = ticks.wrapping_add(1);
                }
            });
        });
    }

    /// The open sessions owned by `owner`, oldest first.
    pub fn sessions_of(&self, owner: &str) -> Vec<Session<A>> {
        let mut list: Vec<Session<A>> = self
            .inner
            .sessions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .open_of(owner)
            .cloned()
            .collect();
        list.sort_by_key(|s| s.created_at());
        list
    }

    /// Closes and forgets session `id` and, with a store, deletes it there (the delete is
    /// awaited; a shared store announces it, and the other replicas drop the session too).
    /// Answers whether it was open here. `Err` when the store failed to delete it: the
    /// session is closed here but still stored, so it is not closed for good (and may be
    /// loaded again); the caller must report the failure.
    pub async fn close_session(&self, id: &str) -> StoreResult<bool> {
        let was_open = self.forget_deleted(id);
        if let Some(store) = &self.inner.store {
            if let Err(e) = store.delete_session(id).await {
                tracing::error!(target: "tea_agent_runtime::store", "deleting session {id} failed: {e}");
                self.inner.deleted.remove(id);
                return Err(e);
            }
        }
        Ok(was_open)
    }

    /// Closes and forgets session `id`, deleted from the store: remembered, so a load that
    /// read its record before the delete does not bring it back. Answers whether it was open.
    fn forget_deleted(&self, id: &str) -> bool {
        let removed = {
            let mut sessions = self
                .inner
                .sessions
                .write()
                .unwrap_or_else(|e| e.into_inner());
            self.inner.deleted.insert(id);
            sessions.remove(id)
        };
        match removed {
            Some(s) => {
                s.close();
                true
            }
            None => false,
        }
    }

    /// Bytes the sessions retain in all, as what their entries take on the heap: their rings
    /// (event histories, activity logs, recent commit patches, transcripts), the answers of
    /// keyed `/message`s, and what cannot be shed ([`Host::held_bytes`]). At most
    /// [`Budgets::retained_bytes`](crate::config::Budgets::retained_bytes), beyond the entries
    /// being added at that instant, unless what cannot be shed is over it on its own
    /// (`docs/stores.md` §Memory).
    pub fn retained_bytes(&self) -> usize {
        self.inner.retained.total()
    }

    /// The part of [`Host::retained_bytes`] that is never shed for the budget: pending and
    /// recently decided confirmations, running work, and keyed `/message` records still in
    /// flight or whose answers were shed (`docs/stores.md` §Memory).
    pub fn held_bytes(&self) -> usize {
        self.inner.retained.held()
    }

    /// The host's account of what its sessions retain (`engine/session/retained.rs`).
    pub(crate) fn retained(&self) -> &Retained {
        &self.inner.retained
    }

    /// Number of open sessions.
    pub fn session_count(&self) -> usize {
        self.inner
            .sessions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .open_count()
    }
}
