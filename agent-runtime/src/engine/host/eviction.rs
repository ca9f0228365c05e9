//! Making room in a full store (`docs/stores.md` §Bounds on disk): when a mint finds the store
//! at `max_sessions` once stale sessions are expired, the least recently used stored sessions
//! that are idle go, as the in-memory host closes its idle sessions to make room. A session
//! stays when this host uses it (held, or used within `session_idle`), when it has a live
//! agent (a token neither revoked nor expired, used or minted within `session_idle`, or
//! bound to an MCP session), or when a confirmation is pending. Each eviction is a
//! conditional delete (still unused since it was chosen), taken under the reload lock, and
//! audited (`session-evicted`).

use tea_agent_schema::protocol::ConfirmStatus;

use super::{counting_failed, CreateSessionError, Host, STALE_BATCH, STALE_ROUNDS};
use crate::app::App;
use crate::engine::store::{McpBindings, SessionStore};
use crate::security::{AuditEntry, AuditEvent, TokenStatus, TokenStore};

/// Where a session's agents are known: the token store and the MCP bindings (durable
/// stores), handed to [`Host::create_session_within_caps`] by the mint.
#[derive(Clone, Copy)]
pub(crate) struct LiveAgents<'a> {
    /// Token records, by session.
    pub(crate) tokens: &'a dyn TokenStore,
    /// The MCP sessions bound to tokens, when they are stored.
    pub(crate) mcp: Option<&'a dyn McpBindings>,
}

impl LiveAgents<'_> {
    /// Whether session `id` has a live agent at `now`: a token neither revoked nor expired,
    /// used or minted within `recent_ms`, or bound to an MCP session. A lookup that fails
    /// counts as live (the session stays).
    async fn any(&self, id: &str, now: u64, recent_ms: u64) -> bool {
        let tokens = match self.tokens.list_by_session(id).await {
            Ok(tokens) => tokens,
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "listing tokens failed: {e}");
                return true;
            }
        };
        for t in tokens
            .iter()
            .filter(|t| t.status != TokenStatus::Revoked && t.expires_at > now)
        {
            if now.saturating_sub(t.last_seen_at.max(t.created_at)) < recent_ms {
                return true;
            }
            if let Some(mcp) = self.mcp {
                match mcp.mcp_ids_of(&t.tid).await {
                    Ok(ids) if ids.is_empty() => {}
                    Ok(_) => return true,
                    Err(e) => {
                        tracing::error!(target: "tea_agent_runtime::store", "listing MCP sessions failed: {e}");
                        return true;
                    }
                }
            }
        }
        false
    }
}

/// Whether stored confirmations (`ConfirmStore::to_json`'s text) hold a pending entry; a text
/// that does not parse counts as pending (the session stays).
fn has_pending(confirms: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Status {
        status: ConfirmStatus,
    }
    #[derive(serde::Deserialize)]
    struct Slot {
        entry: Status,
    }
    serde_json::from_str::<Vec<Slot>>(confirms).map_or(true, |slots| {
        slots
            .iter()
            .any(|s| s.entry.status == ConfirmStatus::Pending)
    })
}

impl<A: App> Host<A> {
    /// Evicts up to `wanted` idle stored sessions without a live agent, least recently used
    /// first; answers how many went. A store that cannot list them refuses the creation.
    pub(super) async fn evict_for_room(
        &self,
        store: &dyn SessionStore,
        agents: &LiveAgents<'_>,
        wanted: usize,
    ) -> Result<usize, CreateSessionError> {
        let config = &self.inner.config;
        let idle_ms = config.session_idle_ms();
        let now = config.clock.now_ms();
        // No idle rule in memory (0): nothing stored is idle either.
        let Some(before) = now.checked_sub(idle_ms).filter(|_| idle_ms > 0) else {
            return Ok(0);
        };
        let mut evicted = 0;
        let mut skipped: u64 = 0;
        for _ in 0..STALE_ROUNDS {
            // The least recently used first; those kept are skipped by asking for more.
            let candidates = store
                .stale_sessions(before, skipped + STALE_BATCH)
                .await
                .map_err(|e| counting_failed(&e))?;
            let listed = candidates.len() as u64;
            for id in candidates
                .iter()
                .skip(usize::try_from(skipped).unwrap_or(usize::MAX))
            {
                if evicted == wanted {
                    return Ok(evicted);
                }
                if self.evict_if_idle(store, agents, id, now, idle_ms).await {
                    evicted += 1;
                } else {
                    skipped += 1;
                }
            }
            if evicted == wanted || listed < skipped + STALE_BATCH {
                break;
            }
        }
        Ok(evicted)
    }

    /// Evicts session `id` when it is idle and has no live agent nor pending confirmation;
    /// answers whether it went.
    async fn evict_if_idle(
        &self,
        store: &dyn SessionStore,
        agents: &LiveAgents<'_>,
        id: &str,
        now: u64,
        idle_ms: u64,
    ) -> bool {
        let in_use = |host: &Self| {
            host.inner
                .sessions
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .in_use(id, now, idle_ms)
        };
        if in_use(self) || agents.any(id, now, idle_ms).await {
            return false;
        }
        let record = match store.load_session(id).await {
            Ok(Some(record)) => record,
            Ok(None) => return false,
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "reading session {id} failed: {e}");
                return false;
            }
        };
        if has_pending(&record.confirms) || now.saturating_sub(record.updated_at) < idle_ms {
            return false;
        }
        // No load of it runs meanwhile, and the delete holds only if nothing used it since.
        let _no_load = self.inner.reloading.lock().await;
        if in_use(self) {
            return false;
        }
        match store.delete_session_unused(id, record.updated_at + 1).await {
            Ok(true) => {}
            Ok(false) => return false,
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "evicting session {id} failed: {e}");
                return false;
            }
        }
        let dropped = self
            .inner
            .sessions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        if let Some(session) = dropped {
            session.close();
        }
        let entry = AuditEntry::new(
            now,
            AuditEvent::SessionEvicted,
            serde_json::json!({
                "sessionId": id,
                "lastUsedAt": record.updated_at,
                "reason": format!(
                    "the store holds its maximum of {} sessions",
                    self.inner.config.max_sessions
                ),
            }),
        )
        .with_uid(record.owner.clone());
        self.inner.audit.write(entry).await;
        true
    }
}
