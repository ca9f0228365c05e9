//! The host's sessions, indexed by id and by owner, so the caps checked at every mint cost
//! O(the owner's sessions) rather than O(all sessions).

use std::collections::HashMap;

use crate::app::App;
use crate::session::Session;

/// Sessions by id, plus the ids of each owner's sessions. Closed sessions stay until pruned:
/// a session can be closed from anywhere (its handle, a revoke), not only through the host.
pub(super) struct SessionTable<A: App> {
    by_id: HashMap<String, Session<A>>,
    by_owner: HashMap<String, Vec<String>>,
}

impl<A: App> SessionTable<A> {
    pub fn new() -> Self {
        SessionTable {
            by_id: HashMap::new(),
            by_owner: HashMap::new(),
        }
    }

    pub fn get(&self, id: &str) -> Option<&Session<A>> {
        self.by_id.get(id)
    }

    /// Entries, closed ones not yet pruned included.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn open_count(&self) -> usize {
        self.by_id.values().filter(|s| !s.is_closed()).count()
    }

    pub fn insert(&mut self, session: Session<A>) {
        if let Some(owner) = session.owner() {
            self.by_owner
                .entry(owner.to_owned())
                .or_default()
                .push(session.id().to_owned());
        }
        self.by_id.insert(session.id().to_owned(), session);
    }

    pub fn remove(&mut self, id: &str) -> Option<Session<A>> {
        let session = self.by_id.remove(id)?;
        if let Some(owner) = session.owner() {
            self.forget_owned(owner, |owned| owned != id);
        }
        Some(session)
    }

    /// Drops every closed session (O(all sessions); called only when the table is full).
    pub fn prune_closed(&mut self) {
        let closed: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, s)| s.is_closed())
            .map(|(id, _)| id.clone())
            .collect();
        for id in closed {
            self.remove(&id);
        }
    }

    /// The number of open sessions of `owner`, after dropping its closed ones.
    pub fn open_count_of(&mut self, owner: &str) -> usize {
        let Some(ids) = self.by_owner.get(owner) else {
            return 0;
        };
        let closed: Vec<String> = ids
            .iter()
            .filter(|id| self.by_id.get(*id).is_none_or(|s| s.is_closed()))
            .cloned()
            .collect();
        for id in &closed {
            self.by_id.remove(id);
        }
        self.forget_owned(owner, |id| !closed.contains(id));
        self.by_owner.get(owner).map_or(0, Vec::len)
    }

    /// The open sessions of `owner`.
    pub fn open_of<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a Session<A>> + 'a {
        self.by_owner
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_id.get(id))
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
