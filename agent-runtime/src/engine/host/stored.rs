//! The host's bounds on the stored sessions (`docs/stores.md` §Bounds on disk): the caps of
//! [`HostConfig`](crate::config::HostConfig) count the sessions a store keeps, not only those in
//! memory (a store that cannot count refuses the mint), a stored session unused for
//! `stored_session_ttl` is deleted, and a full store makes room (`eviction.rs`).

use super::eviction::LiveAgents;
use super::{counting_failed, CreateSessionError, Host, STALE_BATCH, STALE_ROUNDS};
use crate::app::App;
use crate::engine::session::Session;
use crate::engine::store::SessionStore;

/// How often the sweeper expires stored sessions.
pub(super) const STORED_SWEEP_MS: u64 = 60_000;

impl<A: App> Host<A> {
    /// [`Host::create_session`] within the caps counted on the store too: with a store, the
    /// owner's stored sessions count towards `max_sessions_per_owner` and all stored sessions
    /// towards `max_sessions`. A full store expires its stale sessions, then evicts idle
    /// ones without a live agent (`agents`, `eviction.rs`). A store that cannot count is
    /// [`CreateSessionError::Store`]: the caps never pass on a failure. Creations are
    /// serialized until the new session is stored, so concurrent mints cannot overshoot.
    pub(crate) async fn create_session_within_caps(
        &self,
        owner: Option<String>,
        agents: LiveAgents<'_>,
    ) -> Result<Session<A>, CreateSessionError> {
        let Some(store) = self.inner.store.clone() else {
            return self.create_session(owner);
        };
        let _one_at_a_time = self.inner.creating.lock().await;
        let config = &self.inner.config;
        if let Some(owner) = owner.as_deref() {
            let ids = store
                .sessions_of(owner)
                .await
                .map_err(|e| counting_failed(&e))?;
            if ids.len() >= config.max_sessions_per_owner {
                return Err(CreateSessionError::Capacity(format!(
                    "you already have {} stored sessions (at most {}); mint for one of them \
                     with {{\"session\": \"<sessionId>\"}}, or close one",
                    ids.len(),
                    config.max_sessions_per_owner
                )));
            }
        }
        let mut total = stored_count(&*store).await?;
        if total >= config.max_sessions {
            self.expire_stored_sessions().await;
            total = stored_count(&*store).await?;
        }
        if total >= config.max_sessions {
            let wanted = total + 1 - config.max_sessions;
            let evicted = self.evict_for_room(&*store, &agents, wanted).await?;
            total = stored_count(&*store).await?;
            if evicted < wanted || total >= config.max_sessions {
                return Err(CreateSessionError::Capacity(format!(
                    "the store holds its maximum of {} sessions, all in use (a live agent, a \
                     pending confirmation, or used within the last {} s)",
                    config.max_sessions,
                    config.session_idle.as_secs()
                )));
            }
        }
        let session = self.create_session(owner)?;
        session.stored().await;
        Ok(session)
    }

    /// With a store: deletes the stored sessions unused (not loaded, nothing committed) for
    /// [`HostConfig::stored_session_ttl`](crate::config::HostConfig::stored_session_ttl);
    /// a stale one this host holds in memory is in use, and is marked used instead. Each
    /// delete is conditional (still unused) and runs under the reload lock, so a session
    /// being loaded is never deleted under its load. Returns how many were deleted. The
    /// host's sweeper runs this every minute; call it to sweep now.
    pub async fn expire_stored_sessions(&self) -> usize {
        let ttl = self.inner.config.stored_session_ttl_ms();
        let Some(store) = self.inner.store.as_ref() else {
            return 0;
        };
        if ttl == 0 {
            return 0;
        }
        let now = self.inner.config.clock.now_ms();
        // Unused for `ttl` or longer, like the idle rule in memory.
        let Some(before) = now.checked_sub(ttl).map(|t| t + 1) else {
            return 0;
        };
        let mut deleted = 0;
        for _ in 0..STALE_ROUNDS {
            let stale = match store.stale_sessions(before, STALE_BATCH).await {
                Ok(stale) => stale,
                Err(e) => {
                    tracing::error!(target: "tea_agent_runtime::store", "listing stale sessions failed: {e}");
                    break;
                }
            };
            for id in &stale {
                // No load of this session runs meanwhile (loads hold this lock too).
                let _no_load = self.inner.reloading.lock().await;
                let done = if self.holds(id) {
                    store.touch_session(id, now).await
                } else {
                    store.delete_session_unused(id, before).await.map(|gone| {
                        if gone {
                            deleted += 1;
                        }
                    })
                };
                if let Err(e) = done {
                    tracing::error!(target: "tea_agent_runtime::store", "expiring session {id} failed: {e}");
                }
            }
            if (stale.len() as u64) < STALE_BATCH {
                break;
            }
        }
        if deleted > 0 {
            tracing::debug!(target: "tea_agent_runtime::store", "deleted {deleted} expired stored sessions");
        }
        deleted
    }

    /// Whether this host holds session `id` open in memory.
    pub(super) fn holds(&self, id: &str) -> bool {
        self.inner
            .sessions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .is_some_and(|e| !e.session.is_closed())
    }
}

/// How many sessions `store` holds; a failure refuses the creation.
async fn stored_count(store: &dyn SessionStore) -> Result<usize, CreateSessionError> {
    match store.session_count().await {
        Ok(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Err(e) => Err(counting_failed(&e)),
    }
}
