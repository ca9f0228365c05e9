//! The live MCP sessions of `/agent/mcp` and their bounds (`docs/lap.md` §7.3): which token a
//! session is bound to (a bound session is authenticated; an unbound one is provisional), which
//! token's share it counts towards, when each expires, which one is least recently used, and the
//! slots reserved by `initialize` requests still being built.
//!
//! Everything here is synchronous bookkeeping under one lock; the ids it drops are handed back
//! so the caller closes them in rmcp's session manager ([`McpSessions::close`]).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::SessionManager;
use tokio::sync::broadcast;

use super::bound_token::BoundToken;
use super::deletions::Deletions;
use super::McpOptions;
use crate::engine::store::McpBindings;

#[derive(Debug)]
struct Entry {
    /// When the session last became provisional (created unbound, or unbound since): a
    /// provisional session's lifetime runs from here.
    provisional_since: u64,
    last_seen_at: u64,
    /// Order of last use (the clock may not move between requests).
    last_use: u64,
    /// The token that last authenticated the session (a bearer `initialize`, `connect_session`,
    /// a rebuild). Kept when the session is unbound: it counts towards that token's share
    /// (`maxSessionsPerToken`) until it ends, and a revocation of that token ends it.
    owner: Option<String>,
    /// The token the session is bound to now: a bound session is authenticated; an unbound
    /// one is provisional (evictable, on the provisional lifetime).
    binding: Option<BoundToken>,
    /// Registered before rmcp holds the session: a session being rebuilt after a restart,
    /// until the request that rebuilds it has its answer ([`McpSessions::rebuilt`]).
    rebuilding: bool,
    /// Counts the session in `agent_mcp_sessions` until it leaves the registry.
    _live: crate::telemetry::Live,
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    max: usize,
    max_provisional: usize,
    per_token: usize,
    idle_ttl: u64,
    provisional_lifetime_ms: u64,
}

#[derive(Debug, Default)]
struct Registry {
    sessions: HashMap<String, Entry>,
    reserved: usize,
    reserved_provisional: usize,
    uses: u64,
}

impl Entry {
    fn authenticated(&self) -> bool {
        self.binding.is_some()
    }

    fn owned_by(&self, tid: &str) -> bool {
        self.owner.as_deref() == Some(tid)
    }
}

impl Registry {
    fn next_use(&mut self) -> u64 {
        self.uses += 1;
        self.uses
    }

    fn provisional(&self) -> usize {
        self.sessions
            .values()
            .filter(|e| !e.authenticated())
            .count()
    }

    /// Removes the least recently used session matching `pick`.
    fn evict_lru(&mut self, pick: impl Fn(&str, &Entry) -> bool) -> Option<String> {
        let id = self
            .sessions
            .iter()
            .filter(|(id, e)| pick(id, e))
            .min_by_key(|(_, e)| e.last_use)
            .map(|(id, _)| id.clone())?;
        self.sessions.remove(&id);
        Some(id)
    }

    /// Evicts the least recently used sessions `tid` owns, bound or not (never `except`),
    /// until it owns at most `keep` of them (`except` included).
    fn evict_token(&mut self, tid: &str, keep: usize, except: Option<&str>) -> Vec<String> {
        let mut evicted = Vec::new();
        while self.sessions.values().filter(|e| e.owned_by(tid)).count() > keep {
            match self.evict_lru(|id, e| e.owned_by(tid) && Some(id) != except) {
                Some(id) => evicted.push(id),
                None => break,
            }
        }
        evicted
    }
}

/// The live sessions of `/agent/mcp`, rmcp's session manager behind them, and their bounds.
pub struct McpSessions {
    registry: Mutex<Registry>,
    manager: Arc<LocalSessionManager>,
    limits: Limits,
    /// With a durable store: where a dropped session's binding is deleted, so its id answers
    /// 404 after a restart too (`docs/mcp.md` §Bounds on disk).
    bindings: Option<Arc<dyn McpBindings>>,
    /// The server's revoked tids, read on each request: a revoked token's sessions end.
    revocations: Mutex<Option<broadcast::Receiver<String>>>,
    /// The bindings a fleet's store deleted, read on each request: those sessions end here.
    deletions: Deletions,
}

/// What [`McpSessions::revoked_since`] saw.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Revoked {
    /// The tids revoked since the last look.
    Tids(Vec<String>),
    /// Some revocations were missed (the channel overflowed): every owner must be looked up.
    Missed,
}

impl std::fmt::Debug for McpSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSessions")
            .field("live", &self.live())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// No slot is free and no provisional session can be evicted: 503 `session-capacity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtCapacity;

impl McpSessions {
    /// Empty, with the bounds of `options` (`maxUnauthenticatedSessions` clamped to
    /// `[1, maxSessions]`) and an rmcp session manager whose own idle timeout is off.
    pub fn new(options: &McpOptions) -> Self {
        let max = options.max_sessions.max(1);
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = None;
        McpSessions {
            registry: Mutex::new(Registry::default()),
            manager: Arc::new(manager),
            limits: Limits {
                max,
                max_provisional: options.max_unauthenticated_sessions.clamp(1, max),
                per_token: options.max_sessions_per_token.max(1),
                idle_ttl: crate::clock::millis(options.idle_ttl),
                provisional_lifetime_ms: crate::clock::millis(options.unauthenticated_max_lifetime),
            },
            bindings: None,
            revocations: Mutex::new(None),
            deletions: Deletions::default(),
        }
    }

    /// The same, ending the sessions of every token announced on `revocations`
    /// ([`McpSessions::revoked_since`]).
    pub(crate) fn with_revocations(self, revocations: broadcast::Receiver<String>) -> Self {
        *self.revocations.lock() = Some(revocations);
        self
    }

    /// The tokens revoked since the last call.
    pub(crate) fn revoked_since(&self) -> Revoked {
        let mut guard = self.revocations.lock();
        let mut tids = Vec::new();
        let Some(receiver) = guard.as_mut() else {
            return Revoked::Tids(tids);
        };
        loop {
            match receiver.try_recv() {
                Ok(tid) => tids.push(tid),
                Err(broadcast::error::TryRecvError::Lagged(_)) => return Revoked::Missed,
                Err(_) => return Revoked::Tids(tids),
            }
        }
    }

    /// The same, deleting the stored binding of every session it drops from `bindings`, and
    /// ending the sessions whose bindings another replica deleted when the store is shared.
    pub(crate) fn with_bindings(mut self, bindings: Option<Arc<dyn McpBindings>>) -> Self {
        self.deletions = Deletions::new(bindings.as_ref().and_then(|b| b.deleted()));
        self.bindings = bindings;
        self
    }

    /// The bindings a fleet's store deleted (`deletions.rs`).
    pub(crate) fn deletions(&self) -> &Deletions {
        &self.deletions
    }

    /// `(maxSessionsPerToken, maxSessions)`: what the stored bindings are trimmed to.
    pub(crate) fn caps(&self) -> (usize, usize) {
        (self.limits.per_token, self.limits.max)
    }

    /// The ids of the live sessions bound to token `tid`.
    pub(crate) fn bound_to(&self, tid: &str) -> Vec<String> {
        self.registry
            .lock()
            .sessions
            .iter()
            .filter(|(_, e)| e.binding.as_ref().is_some_and(|b| b.tid == tid))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// rmcp's session manager.
    pub(crate) fn manager(&self) -> Arc<LocalSessionManager> {
        self.manager.clone()
    }

    /// Number of live sessions.
    pub fn live(&self) -> usize {
        self.registry.lock().sessions.len()
    }

    /// Number of live provisional (unauthenticated) sessions.
    pub fn live_provisional(&self) -> usize {
        self.registry.lock().provisional()
    }

    /// Slots reserved by `initialize` requests still being built.
    pub fn reserved(&self) -> usize {
        self.registry.lock().reserved
    }

    /// The ids of the live sessions (in no particular order).
    pub fn live_ids(&self) -> Vec<String> {
        self.registry.lock().sessions.keys().cloned().collect()
    }

    /// Number of sessions rmcp's session manager holds (equal to [`Self::live`] once no
    /// `initialize` is in flight; a difference is a leak).
    pub async fn transport_sessions(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    /// Whether `id` is a live session.
    pub fn is_live(&self, id: &str) -> bool {
        self.registry.lock().sessions.contains_key(id)
    }

    /// Whether `id` is live and authenticated (bound to a token; an unbound session is
    /// provisional again).
    pub fn is_authenticated(&self, id: &str) -> bool {
        self.registry
            .lock()
            .sessions
            .get(id)
            .is_some_and(Entry::authenticated)
    }

    /// The distinct tokens that own live sessions.
    pub(crate) fn owners(&self) -> Vec<String> {
        let registry = self.registry.lock();
        let mut owners: Vec<String> = registry
            .sessions
            .values()
            .filter_map(|e| e.owner.clone())
            .collect();
        owners.sort_unstable();
        owners.dedup();
        owners
    }

    /// Drops every live session token `tid` owns (it was revoked); answers their ids, for
    /// [`McpSessions::close`].
    pub(crate) fn remove_owned_by(&self, tid: &str) -> Vec<String> {
        let mut registry = self.registry.lock();
        let ids: Vec<String> = registry
            .sessions
            .iter()
            .filter(|(_, e)| e.owned_by(tid))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            registry.sessions.remove(id);
        }
        ids
    }

    /// The token `id` is bound to.
    pub fn bound_token(&self, id: &str) -> Option<BoundToken> {
        self.registry
            .lock()
            .sessions
            .get(id)
            .and_then(|e| e.binding.clone())
    }

    /// Drops the expired sessions: authenticated (bound) ones at `lastSeenAt + idleTtl`,
    /// provisional ones (never bound, or unbound since) at `provisionalSince + lifetime`.
    /// Answers their ids.
    pub(crate) fn sweep(&self, now: u64) -> Vec<String> {
        let limits = self.limits;
        let mut registry = self.registry.lock();
        let expired: Vec<String> = registry
            .sessions
            .iter()
            .filter(|(_, e)| {
                let deadline = if e.authenticated() {
                    e.last_seen_at.saturating_add(limits.idle_ttl)
                } else {
                    e.provisional_since
                        .saturating_add(limits.provisional_lifetime_ms)
                };
                now >= deadline
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            registry.sessions.remove(id);
        }
        expired
    }

    /// Forgets the sessions whose rmcp side has ended on its own (a session worker that
    /// stopped), so they stop holding a slot. Sessions are registered only after rmcp created
    /// them and are dropped here before rmcp closes them, so anything live here that rmcp no
    /// longer holds is gone for good.
    pub(crate) async fn forget_ended(&self) {
        let ended: Vec<String> = {
            let known = self.manager.sessions.read().await;
            let mut registry = self.registry.lock();
            // A session being rebuilt is registered before rmcp restores it: not ended.
            let ended = registry
                .sessions
                .iter()
                .filter(|(id, e)| !e.rebuilding && !known.contains_key(id.as_str()))
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ended {
                registry.sessions.remove(id);
            }
            ended
        };
        self.forget_stored(&ended).await;
    }

    /// Deletes the stored bindings of `ids` (with a durable store).
    async fn forget_stored(&self, ids: &[String]) {
        if let Some(store) = &self.bindings {
            for id in ids {
                super::restore::delete(store, id).await;
            }
        }
    }

    /// The request that rebuilt `id` has its answer: from now on rmcp holds the session (or
    /// the caller removed it).
    pub(crate) fn rebuilt(&self, id: &str) {
        if let Some(e) = self.registry.lock().sessions.get_mut(id) {
            e.rebuilding = false;
        }
    }

    /// `id` is registered and still being rebuilt (see [`McpSessions::rebuilt`]).
    pub(crate) fn is_rebuilding(&self, id: &str) -> bool {
        self.registry
            .lock()
            .sessions
            .get(id)
            .is_some_and(|e| e.rebuilding)
    }

    /// Marks a live session used now; `false` when `id` is not live.
    pub(crate) fn touch(&self, id: &str, now: u64) -> bool {
        let mut registry = self.registry.lock();
        let use_ = registry.next_use();
        match registry.sessions.get_mut(id) {
            Some(e) => {
                e.last_seen_at = now;
                e.last_use = use_;
                true
            }
            None => false,
        }
    }

    /// Drops a session; `false` when it was not live.
    pub(crate) fn remove(&self, id: &str) -> bool {
        self.registry.lock().sessions.remove(id).is_some()
    }

    /// Before admitting a bearer `initialize`: evicts the token's least recently used sessions
    /// (bound or since unbound) until it owns at most `maxSessionsPerToken − 1`.
    pub(crate) fn make_room_for_token(&self, tid: &str) -> Vec<String> {
        let keep = self.limits.per_token - 1;
        self.registry.lock().evict_token(tid, keep, None)
    }

    /// Reserves a slot for a session being built, evicting least recently used provisional
    /// sessions (never bound, or unbound since) while over quota (never a bound one). Over
    /// quota: live + reserved ≥
    /// `maxSessions`, or, for a provisional request, provisional live + provisional reserved ≥
    /// `maxUnauthenticatedSessions`. Answers the reservation and the evicted ids.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        provisional: bool,
    ) -> Result<(Reservation, Vec<String>), AtCapacity> {
        let limits = self.limits;
        let mut registry = self.registry.lock();
        let live = registry.sessions.len();
        let live_provisional = registry.provisional();
        let over_total = (live + registry.reserved + 1).saturating_sub(limits.max);
        let over_provisional = if provisional {
            (live_provisional + registry.reserved_provisional + 1)
                .saturating_sub(limits.max_provisional)
        } else {
            0
        };
        let to_evict = over_total.max(over_provisional);
        if to_evict > live_provisional {
            return Err(AtCapacity);
        }
        let mut evicted = Vec::with_capacity(to_evict);
        for _ in 0..to_evict {
            if let Some(id) = registry.evict_lru(|_, e| !e.authenticated()) {
                evicted.push(id);
            }
        }
        registry.reserved += 1;
        if provisional {
            registry.reserved_provisional += 1;
        }
        drop(registry);
        Ok((
            Reservation {
                sessions: self.clone(),
                provisional,
                active: true,
            },
            evicted,
        ))
    }

    fn release(&self, registry: &mut Registry, provisional: bool) {
        registry.reserved = registry.reserved.saturating_sub(1);
        if provisional {
            registry.reserved_provisional = registry.reserved_provisional.saturating_sub(1);
        }
    }

    /// Binds a live session to a token (`connect_session`): it becomes authenticated and
    /// owned by the token, and the token's least recently used OTHER sessions are evicted
    /// until it owns at most `maxSessionsPerToken`. `None` when `id` is not live; else the
    /// evicted ids.
    pub(crate) fn bind(&self, id: &str, binding: BoundToken) -> Option<Vec<String>> {
        let per_token = self.limits.per_token;
        let mut registry = self.registry.lock();
        let tid = binding.tid.clone();
        let entry = registry.sessions.get_mut(id)?;
        entry.owner = Some(tid.clone());
        entry.binding = Some(binding);
        Some(registry.evict_token(&tid, per_token, Some(id)))
    }

    /// The bearer of `id`'s bound token is now `token` (an OAuth client presents a new access
    /// token of the same grant after a refresh): the session's calls use it from now on.
    /// `false` when `id` is not bound to `tid`.
    #[cfg(feature = "oauth")]
    pub(crate) fn renew_bearer(&self, id: &str, tid: &str, token: &str) -> bool {
        let mut registry = self.registry.lock();
        let Some(binding) = registry
            .sessions
            .get_mut(id)
            .and_then(|e| e.binding.as_mut())
        else {
            return false;
        };
        if binding.tid != tid {
            return false;
        }
        if binding.token.as_deref() != Some(token) {
            binding.token = Some(token.to_owned());
        }
        true
    }

    /// Drops the binding of `id` at `now` (`disconnect_session`, a failed connect flow): the
    /// session is provisional again (evictable, its provisional lifetime starting now), and
    /// still counts towards the share of the token that authenticated it.
    pub(crate) fn unbind(&self, id: &str, now: u64) {
        if let Some(e) = self.registry.lock().sessions.get_mut(id) {
            if e.binding.take().is_some() {
                e.provisional_since = now;
            }
        }
    }

    /// Closes dropped sessions in rmcp's session manager and deletes their stored bindings,
    /// so their ids stay dead, after a restart too.
    /// Ends every live session's transport in this process (its event streams end) and keeps
    /// what a durable store holds of them, so that a client that comes back with its session id
    /// is restored on the next instance (a shutdown, `docs/operations.md` §Shutdown).
    pub(crate) async fn close_transports(&self) {
        for id in self.live_ids() {
            let id: rmcp::transport::streamable_http_server::SessionId = id.into();
            if let Err(e) = self.manager.close_session(&id).await {
                tracing::debug!(session = %id, error = %e, "shutdown: closing an MCP session failed");
            }
        }
    }

    pub(crate) async fn close(&self, ids: Vec<String>) {
        self.forget_stored(&ids).await;
        for id in ids {
            let id: rmcp::transport::streamable_http_server::SessionId = id.into();
            if let Err(e) = self.manager.close_session(&id).await {
                tracing::warn!(session = %id, error = %e, "closing an MCP session failed");
            }
        }
    }
}

/// A slot reserved by an `initialize` being built. Committed once the session exists, released
/// otherwise: exactly once on every path, including a dropped request.
pub(crate) struct Reservation {
    sessions: Arc<McpSessions>,
    provisional: bool,
    active: bool,
}

impl Reservation {
    /// Turns the reservation into the live session `id` (created and last seen `now`),
    /// authenticated and bound when `binding` is given.
    pub(crate) fn commit(self, id: String, now: u64, binding: Option<BoundToken>) {
        self.register(id, now, binding, false);
    }

    /// Registers the slot for session `id`, issued before a restart, before rmcp restores it
    /// (kept by [`McpSessions::forget_ended`] until [`McpSessions::rebuilt`]).
    pub(crate) fn commit_rebuilding(self, id: String, now: u64, binding: BoundToken) {
        self.register(id, now, Some(binding), true);
    }

    fn register(mut self, id: String, now: u64, binding: Option<BoundToken>, rebuilding: bool) {
        let sessions = self.sessions.clone();
        let mut registry = sessions.registry.lock();
        sessions.release(&mut registry, self.provisional);
        self.active = false;
        let last_use = registry.next_use();
        registry.sessions.insert(
            id,
            Entry {
                provisional_since: now,
                last_seen_at: now,
                last_use,
                owner: binding.as_ref().map(|b| b.tid.clone()),
                binding,
                rebuilding,
                _live: crate::telemetry::Live::mcp_session(),
            },
        );
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.active {
            self.active = false;
            let mut registry = self.sessions.registry.lock();
            self.sessions.release(&mut registry, self.provisional);
        }
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
