//! The live MCP sessions of `/agent/mcp` and their bounds (`docs/lap.md` §7.3): who is
//! authenticated, which token a session is bound to, when each expires, which one is least
//! recently used, and the slots reserved by `initialize` requests still being built.
//!
//! Everything here is synchronous bookkeeping under one lock; the ids it drops are handed back
//! so the caller closes them in rmcp's session manager ([`McpSessions::close`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::SessionManager;

use super::McpOptions;
use crate::engine::store::McpBindings;

/// The agent token an MCP session is bound to.
#[derive(Clone, PartialEq, Eq)]
pub struct Binding {
    /// The token's id.
    pub tid: String,
    /// The token itself (sent as the bearer of forwarded calls; never logged). `None` for a
    /// session bound with `connect_session` and rebuilt after a restart: the raw token is
    /// never stored, so its calls are admitted by `tid` (expiry and revocation still apply).
    pub token: Option<String>,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binding")
            .field("tid", &self.tid)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
struct Entry {
    created_at: u64,
    last_seen_at: u64,
    /// Order of last use (the clock may not move between requests).
    last_use: u64,
    authenticated: bool,
    binding: Option<Binding>,
    /// Registered before rmcp holds the session: a session being rebuilt after a restart,
    /// until the request that rebuilds it has its answer ([`McpSessions::rebuilt`]).
    rebuilding: bool,
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    max: usize,
    max_provisional: usize,
    per_token: usize,
    idle_ttl_ms: u64,
    provisional_lifetime_ms: u64,
}

#[derive(Debug, Default)]
struct Registry {
    sessions: HashMap<String, Entry>,
    reserved: usize,
    reserved_provisional: usize,
    uses: u64,
}

impl Registry {
    fn next_use(&mut self) -> u64 {
        self.uses += 1;
        self.uses
    }

    fn provisional(&self) -> usize {
        self.sessions.values().filter(|e| !e.authenticated).count()
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

    /// Evicts `tid`'s least recently used sessions (never `except`) until it holds at most
    /// `keep` of them (`except` included).
    fn evict_token(&mut self, tid: &str, keep: usize, except: Option<&str>) -> Vec<String> {
        let bound = |e: &Entry| e.binding.as_ref().is_some_and(|b| b.tid == tid);
        let mut evicted = Vec::new();
        while self.sessions.values().filter(|e| bound(e)).count() > keep {
            match self.evict_lru(|id, e| bound(e) && Some(id) != except) {
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
                idle_ttl_ms: options.idle_ttl_ms,
                provisional_lifetime_ms: options.unauthenticated_max_lifetime_ms,
            },
            bindings: None,
        }
    }

    /// The same, deleting the stored binding of every session it drops from `bindings`.
    pub(crate) fn with_bindings(mut self, bindings: Option<Arc<dyn McpBindings>>) -> Self {
        self.bindings = bindings;
        self
    }

    /// `(maxSessionsPerToken, maxSessions)`: what the stored bindings are trimmed to.
    pub(crate) fn caps(&self) -> (usize, usize) {
        (self.limits.per_token, self.limits.max)
    }

    /// The ids of the live sessions bound to token `tid`.
    pub(crate) fn bound_to(&self, tid: &str) -> Vec<String> {
        self.lock()
            .sessions
            .iter()
            .filter(|(_, e)| e.binding.as_ref().is_some_and(|b| b.tid == tid))
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// rmcp's session manager.
    pub(crate) fn manager(&self) -> Arc<LocalSessionManager> {
        self.manager.clone()
    }

    /// Number of live sessions.
    pub fn live(&self) -> usize {
        self.lock().sessions.len()
    }

    /// Number of live provisional (unauthenticated) sessions.
    pub fn live_provisional(&self) -> usize {
        self.lock().provisional()
    }

    /// Slots reserved by `initialize` requests still being built.
    pub fn reserved(&self) -> usize {
        self.lock().reserved
    }

    /// The ids of the live sessions (in no particular order).
    pub fn live_ids(&self) -> Vec<String> {
        self.lock().sessions.keys().cloned().collect()
    }

    /// Number of sessions rmcp's session manager holds (equal to [`Self::live`] once no
    /// `initialize` is in flight; a difference is a leak).
    pub async fn transport_sessions(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    /// Whether `id` is a live session.
    pub fn is_live(&self, id: &str) -> bool {
        self.lock().sessions.contains_key(id)
    }

    /// Whether `id` is live and authenticated.
    pub fn is_authenticated(&self, id: &str) -> bool {
        self.lock()
            .sessions
            .get(id)
            .is_some_and(|e| e.authenticated)
    }

    /// The token `id` is bound to.
    pub fn binding(&self, id: &str) -> Option<Binding> {
        self.lock().sessions.get(id).and_then(|e| e.binding.clone())
    }

    /// Drops the expired sessions: authenticated ones at `lastSeenAt + idleTtl`, provisional
    /// ones at `createdAt + lifetime`. Answers their ids.
    pub(crate) fn sweep(&self, now: u64) -> Vec<String> {
        let limits = self.limits;
        let mut registry = self.lock();
        let expired: Vec<String> = registry
            .sessions
            .iter()
            .filter(|(_, e)| {
                let deadline = if e.authenticated {
                    e.last_seen_at.saturating_add(limits.idle_ttl_ms)
                } else {
                    e.created_at.saturating_add(limits.provisional_lifetime_ms)
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
            let mut registry = self.lock();
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
        if let Some(e) = self.lock().sessions.get_mut(id) {
            e.rebuilding = false;
        }
    }

    /// `id` is registered and still being rebuilt (see [`McpSessions::rebuilt`]).
    pub(crate) fn is_rebuilding(&self, id: &str) -> bool {
        self.lock().sessions.get(id).is_some_and(|e| e.rebuilding)
    }

    /// Marks a live session used now; `false` when `id` is not live.
    pub(crate) fn touch(&self, id: &str, now: u64) -> bool {
        let mut registry = self.lock();
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
        self.lock().sessions.remove(id).is_some()
    }

    /// Before admitting a bearer `initialize`: evicts the token's least recently used sessions
    /// until it holds at most `maxSessionsPerToken − 1`.
    pub(crate) fn make_room_for_token(&self, tid: &str) -> Vec<String> {
        let keep = self.limits.per_token - 1;
        self.lock().evict_token(tid, keep, None)
    }

    /// Reserves a slot for a session being built, evicting least recently used provisional
    /// sessions while over quota (never an authenticated one). Over quota: live + reserved ≥
    /// `maxSessions`, or, for a provisional request, provisional live + provisional reserved ≥
    /// `maxUnauthenticatedSessions`. Answers the reservation and the evicted ids.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        provisional: bool,
    ) -> Result<(Reservation, Vec<String>), AtCapacity> {
        let limits = self.limits;
        let mut registry = self.lock();
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
            if let Some(id) = registry.evict_lru(|_, e| !e.authenticated) {
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

    /// Binds a live session to a token (`connect_session`): it becomes authenticated, and the
    /// token's least recently used OTHER sessions are evicted until it holds at most
    /// `maxSessionsPerToken`. `None` when `id` is not live; else the evicted ids.
    pub(crate) fn bind(&self, id: &str, binding: Binding) -> Option<Vec<String>> {
        let per_token = self.limits.per_token;
        let mut registry = self.lock();
        let tid = binding.tid.clone();
        let entry = registry.sessions.get_mut(id)?;
        entry.authenticated = true;
        entry.binding = Some(binding);
        Some(registry.evict_token(&tid, per_token, Some(id)))
    }

    /// Drops the binding of `id` (`disconnect_session`, a failed connect flow). The session
    /// stays authenticated.
    pub(crate) fn unbind(&self, id: &str) {
        if let Some(e) = self.lock().sessions.get_mut(id) {
            e.binding = None;
        }
    }

    /// Closes dropped sessions in rmcp's session manager and deletes their stored bindings,
    /// so their ids stay dead, after a restart too.
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
    /// Turns the reservation into the live session `id` (`createdAt = lastSeenAt = now`),
    /// authenticated and bound when `binding` is given.
    pub(crate) fn commit(self, id: String, now: u64, binding: Option<Binding>) {
        self.register(id, now, binding, false);
    }

    /// Registers the slot for session `id`, issued before a restart, before rmcp restores it
    /// (kept by [`McpSessions::forget_ended`] until [`McpSessions::rebuilt`]).
    pub(crate) fn commit_rebuilding(self, id: String, now: u64, binding: Binding) {
        self.register(id, now, Some(binding), true);
    }

    fn register(mut self, id: String, now: u64, binding: Option<Binding>, rebuilding: bool) {
        let sessions = self.sessions.clone();
        let mut registry = sessions.lock();
        sessions.release(&mut registry, self.provisional);
        self.active = false;
        let last_use = registry.next_use();
        registry.sessions.insert(
            id,
            Entry {
                created_at: now,
                last_seen_at: now,
                last_use,
                authenticated: binding.is_some(),
                binding,
                rebuilding,
            },
        );
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.active {
            self.active = false;
            let mut registry = self.sessions.lock();
            self.sessions.release(&mut registry, self.provisional);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(max: usize, provisional: usize, per_token: usize) -> Arc<McpSessions> {
        Arc::new(McpSessions::new(&McpOptions {
            max_sessions: max,
            max_unauthenticated_sessions: provisional,
            max_sessions_per_token: per_token,
            idle_ttl_ms: 1000,
            unauthenticated_max_lifetime_ms: 500,
            ..McpOptions::default()
        }))
    }

    fn bound(tid: &str) -> Option<Binding> {
        Some(Binding {
            tid: tid.into(),
            token: Some(format!("agt_{tid}")),
        })
    }

    fn open(s: &Arc<McpSessions>, id: &str, now: u64, binding: Option<Binding>) -> Vec<String> {
        let (r, evicted) = s.reserve(binding.is_none()).expect("a slot");
        r.commit(id.into(), now, binding);
        evicted
    }

    #[test]
    fn provisional_pressure_evicts_the_least_recently_used_provisional_session() {
        let s = sessions(8, 2, 8);
        open(&s, "a", 0, None);
        open(&s, "b", 0, None);
        assert!(s.touch("a", 0));
        assert_eq!(open(&s, "c", 0, None), vec!["b".to_string()]);
        assert!(s.is_live("a") && s.is_live("c") && !s.is_live("b"));
        assert_eq!(s.live_provisional(), 2);
    }

    #[tokio::test]
    async fn a_session_being_rebuilt_is_not_taken_for_an_ended_one() {
        // rmcp's manager holds none of these sessions: "a" ended, "r" is being rebuilt.
        let s = sessions(8, 8, 8);
        open(&s, "a", 0, bound("t1"));
        let (r, _) = s.reserve(false).unwrap();
        r.commit_rebuilding("r".into(), 0, bound("t2").unwrap());
        s.forget_ended().await;
        assert!(!s.is_live("a"));
        assert!(s.is_live("r"));
        assert_eq!(s.binding("r").map(|b| b.tid), Some("t2".to_string()));
        // Once the rebuilding request has its answer, rmcp holds it or it is gone.
        s.rebuilt("r");
        s.forget_ended().await;
        assert!(!s.is_live("r"));
    }

    #[test]
    fn authenticated_sessions_are_never_evicted() {
        let s = sessions(2, 2, 8);
        open(&s, "a", 0, bound("t1"));
        open(&s, "b", 0, bound("t2"));
        assert_eq!(s.reserve(true).err(), Some(AtCapacity));
        assert_eq!(s.reserve(false).err(), Some(AtCapacity));
        assert_eq!(s.live(), 2);
        assert_eq!(s.reserved(), 0);
    }

    #[test]
    fn reservations_count_and_are_released_exactly_once() {
        let s = sessions(2, 2, 8);
        let (r1, _) = s.reserve(true).unwrap();
        let (r2, _) = s.reserve(true).unwrap();
        assert_eq!(s.reserved(), 2);
        // In-flight reservations are not evictable.
        assert!(s.reserve(true).is_err());
        drop(r1);
        assert_eq!(s.reserved(), 1);
        r2.commit("x".into(), 0, None);
        assert_eq!((s.reserved(), s.live()), (0, 1));
    }

    #[test]
    fn sweep_expires_by_lifetime_and_idle_ttl() {
        let s = sessions(8, 8, 8);
        open(&s, "p", 0, None);
        open(&s, "a", 0, bound("t"));
        // Traffic does not extend a provisional session.
        assert!(s.touch("p", 400));
        assert!(s.touch("a", 400));
        assert_eq!(s.sweep(499), Vec::<String>::new());
        assert_eq!(s.sweep(500), vec!["p".to_string()]);
        assert_eq!(s.sweep(1399), Vec::<String>::new());
        assert_eq!(s.sweep(1400), vec!["a".to_string()]);
        assert_eq!(s.live(), 0);
    }

    #[tokio::test]
    async fn sessions_whose_rmcp_side_ended_are_forgotten() {
        let s = sessions(8, 8, 8);
        let (id, _transport) = s.manager.create_session().await.expect("created");
        open(&s, &id, 0, None);
        open(&s, "never-created-in-rmcp", 0, None);
        s.forget_ended().await;
        assert_eq!(s.live_ids(), vec![id.to_string()]);
        assert_eq!(s.transport_sessions().await, 1);
        // The worker ends on its own: rmcp closes its side, the slot is freed on the next sweep.
        s.manager.close_session(&id).await.expect("closed");
        s.forget_ended().await;
        assert_eq!((s.live(), s.transport_sessions().await), (0, 0));
    }

    #[test]
    fn per_token_cap() {
        let s = sessions(8, 8, 2);
        open(&s, "a", 0, bound("t"));
        open(&s, "b", 0, bound("t"));
        assert_eq!(s.make_room_for_token("t"), vec!["a".to_string()]);
        open(&s, "c", 0, bound("t"));
        // connect_session binds a provisional session and evicts the token's LRU other one.
        open(&s, "d", 0, None);
        assert_eq!(
            s.bind("d", bound("t").unwrap()),
            Some(vec!["b".to_string()])
        );
        assert!(s.is_authenticated("d"));
        assert_eq!(s.binding("d").unwrap().tid, "t");
        assert_eq!(s.bind("gone", bound("t").unwrap()), None);
        s.unbind("d");
        assert!(s.binding("d").is_none() && s.is_authenticated("d"));
    }
}
