//! Stored sessions brought back into memory: a session asked for by id (or by owner) that is
//! not open is rebuilt from its last commit, one at a time per host, and refused with its reason
//! when its state cannot be migrated (`docs/stores.md` §Upgrades).

use super::{Host, Refused};
use crate::app::App;
use crate::engine::session::{Session, SessionError};
use crate::security::{AuditEntry, AuditEvent};

impl<A: App> Host<A> {
    /// The session `id`: the open one in memory, or (with a store) the one stored, rebuilt
    /// from its last commit. Counts as a use of the session. `None` also for a stored session
    /// that cannot be loaded (its state no longer deserializes and [`App::migrate`] could not
    /// carry it over; it stays in the store untouched, `docs/stores.md` §Upgrades).
    pub async fn load_session(&self, id: &str) -> Option<Session<A>> {
        self.try_load_session(id).await.ok().flatten()
    }

    /// Like [`Host::load_session`], telling a refused session apart: `Err` carries why a
    /// stored session cannot be loaded (audited once, logged each time).
    pub(crate) async fn try_load_session(&self, id: &str) -> Result<Option<Session<A>>, Refused> {
        if let Some(session) = self.session(id) {
            return Ok(Some(session));
        }
        // Boxed: the rebuild's future is large, and every call's gate awaits this one.
        Box::pin(self.reload_session(id)).await
    }

    /// [`Host::try_load_session`] for a session not open in memory.
    async fn reload_session(&self, id: &str) -> Result<Option<Session<A>>, Refused> {
        let Some(store) = self.inner.store.as_ref() else {
            return Ok(None);
        };
        let _one_at_a_time = self.inner.reloading.lock().await;
        // Another request may have rebuilt it while this one waited.
        if let Some(session) = self.session(id) {
            return Ok(Some(session));
        }
        let record = match store.load_session(id).await {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "loading session {id} failed: {e}");
                return Ok(None);
            }
        };
        let Some(persistence) = self.persistence() else {
            return Ok(None);
        };
        let owner = record.owner.clone();
        let seq = record.seq;
        let session = match Session::restore(record, self.parts(), persistence) {
            Ok(session) => session,
            Err(SessionError::NotMigrated(reason)) => {
                self.refused(id, owner.clone(), &reason).await;
                return Err(Refused { owner, reason });
            }
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "restoring session {id} failed: {e}");
                return Ok(None);
            }
        };
        self.start_sweeper();
        self.start_listener();
        let config = &self.inner.config;
        let now = config.clock.now_ms();
        // A load is a use: the stored session's expiry starts again (`stored.rs`). Expiry and
        // eviction here wait for this load (they take the reload lock); on another replica
        // they delete only a session still unused, so once marked used it stays; one deleted
        // between the read and the mark is gone, and is not served from memory.
        if let Err(e) = store.touch_session(id, now).await {
            tracing::error!(target: "tea_agent_runtime::store", "touching session {id} failed: {e}");
        }
        match store.load_since(id, seq).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                session.close();
                return Ok(None);
            }
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "reading session {id} failed: {e}");
                session.close();
                return Ok(None);
            }
        }
        let mut sessions = self.sessions_making_room(now);
        // Deleted since its record was read: it stays deleted.
        if self.inner.deleted.contains(id) {
            session.close();
            return Ok(None);
        }
        sessions.insert(session.clone(), now);
        Ok(Some(session))
    }

    /// Logs a stored session refused as not migrated, and audits it the first time.
    async fn refused(&self, id: &str, owner: Option<String>, reason: &str) {
        tracing::error!(target: "tea_agent_runtime::store", session = %id, "{reason}");
        if self.inner.refused.insert(id) {
            let entry = AuditEntry::new(
                self.inner.config.clock.now_ms(),
                AuditEvent::SessionNotMigrated,
                serde_json::json!({ "sessionId": id, "reason": reason }),
            )
            .with_uid(owner);
            self.inner.audit.write(entry).await;
        }
    }

    /// The sessions owned by `owner`, oldest first: the open ones, and (with a store) the
    /// stored ones, reloaded.
    pub async fn load_sessions_of(&self, owner: &str) -> Vec<Session<A>> {
        let Some(store) = self.inner.store.as_ref() else {
            return self.sessions_of(owner);
        };
        let ids = match store.sessions_of(owner).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "listing sessions failed: {e}");
                return self.sessions_of(owner);
            }
        };
        let mut list = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = self.load_session(&id).await {
                list.push(s);
            }
        }
        list.sort_by_key(|s| s.created_at());
        list
    }
}
