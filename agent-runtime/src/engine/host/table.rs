//! The host's sessions, indexed by id and by owner, so the caps checked at every mint cost
//! O(the owner's sessions) rather than O(all sessions).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::app::App;
use crate::engine::session::Session;

/// A session and when it was last used (ms by the host's clock): looked up by a request, or
/// its event counter moved (a commit, a log entry).
pub(super) struct Entry<A: App> {
    pub session: Session<A>,
    last_used: AtomicU64,
    seen_event: AtomicU64,
}

impl<A: App> Entry<A> {
    pub(super) fn touch(&self, now: u64) {
        self.last_used.fetch_max(now, Ordering::Relaxed);
    }

    /// Whether the session went unused for `idle_ms` at `now`; a moved event counter counts
    /// as use, and a held session (a pairing client, the app's own UI, a subscriber) is in use.
    fn idle(&self, now: u64, idle_ms: u64) -> bool {
        if self.session.is_held() {
            self.touch(now);
            return false;
        }
        let newest = self.session.last_event_id();
        if self.seen_event.swap(newest, Ordering::Relaxed) != newest {
            self.touch(now);
        }
        now.saturating_sub(self.last_used.load(Ordering::Relaxed)) >= idle_ms
    }
}

/// Sessions by id, plus the ids of each owner's sessions. Closed sessions stay until pruned:
/// a session can be closed from anywhere (its handle, a revoke), not only through the host.
pub(super) struct SessionTable<A: App> {
    by_id: HashMap<String, Entry<A>>,
    by_owner: HashMap<String, Vec<String>>,
}

impl<A: App> SessionTable<A> {
    pub(super) fn new() -> Self {
        SessionTable {
            by_id: HashMap::new(),
            by_owner: HashMap::new(),
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&Entry<A>> {
        self.by_id.get(id)
    }

    /// Whether session `id` is open here and in use at `now`: held, or used within
    /// `idle_ms` (a request, a commit, a log entry).
    pub(super) fn in_use(&self, id: &str, now: u64, idle_ms: u64) -> bool {
        self.by_id
            .get(id)
            .is_some_and(|e| !e.session.is_closed() && !e.idle(now, idle_ms))
    }

    /// Entries, closed ones not yet pruned included.
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(super) fn open_count(&self) -> usize {
        self.by_id
            .values()
            .filter(|e| !e.session.is_closed())
            .count()
    }

    pub(super) fn insert(&mut self, session: Session<A>, now: u64) {
        if let Some(owner) = session.owner() {
            self.by_owner
                .entry(owner.to_owned())
                .or_default()
                .push(session.id().to_owned());
        }
        let entry = Entry {
            last_used: AtomicU64::new(now),
            seen_event: AtomicU64::new(session.last_event_id()),
            session,
        };
        self.by_id.insert(entry.session.id().to_owned(), entry);
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<Session<A>> {
        let session = self.by_id.remove(id)?.session;
        if let Some(owner) = session.owner() {
            self.forget_owned(owner, |owned| owned != id);
        }
        Some(session)
    }

    /// Drops every closed session (O(all sessions); called only when the table is full).
    pub(super) fn prune_closed(&mut self) {
        let closed: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, e)| e.session.is_closed())
            .map(|(id, _)| id.clone())
            .collect();
        for id in closed {
            self.remove(&id);
        }
    }

    /// Closes and drops every session unused for `idle_ms` at `now` (O(all sessions)).
    /// Returns how many.
    pub(super) fn expire_idle(&mut self, now: u64, idle_ms: u64) -> usize {
        let idle: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, e)| e.idle(now, idle_ms))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            if let Some(session) = self.remove(id) {
                session.close_idle(idle_ms);
            }
        }
        idle.len()
    }

    /// The number of open sessions of `owner`, after dropping its closed ones.
    pub(super) fn open_count_of(&mut self, owner: &str) -> usize {
        let Some(ids) = self.by_owner.get(owner) else {
            return 0;
        };
        let closed: Vec<String> = ids
            .iter()
            .filter(|id| self.by_id.get(*id).is_none_or(|e| e.session.is_closed()))
            .cloned()
            .collect();
        for id in &closed {
            self.by_id.remove(id);
        }
        self.forget_owned(owner, |id| !closed.contains(id));
        self.by_owner.get(owner).map_or(0, Vec::len)
    }

    /// The open sessions of `owner`.
    pub(super) fn open_of<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a Session<A>> + 'a {
        self.by_owner
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_id.get(id))
            .map(|e| &e.session)
            .filter(|s| !s.is_closed())
    }

    fn forget_owned(&mut self, owner: &str, keep: impl Fn(&String) -> bool) {
        if let Some(ids) = self.by_owner.get_mut(owner) {
            ids.retain(keep);
            if ids.is_empty() {
                self.by_owner.remove(owner);
            }
        }
    }
}
