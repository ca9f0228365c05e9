//! A bounded set of session ids the host remembers for a while: the stored sessions refused
//! as not migrated (audited once each) and the sessions deleted from the store (never loaded
//! back). Full at its bound, it is emptied: what it remembers is a courtesy (one audit line)
//! or covers a load in flight (milliseconds), never a guarantee that needs every id forever.

use parking_lot::Mutex;
use std::collections::HashSet;

/// Session ids remembered, at most `max` of them.
#[derive(Debug)]
pub(super) struct RememberedIds {
    ids: Mutex<HashSet<String>>,
    max: usize,
}

impl RememberedIds {
    /// An empty set that remembers at most `max` ids.
    pub(super) fn new(max: usize) -> Self {
        RememberedIds {
            ids: Mutex::new(HashSet::new()),
            max,
        }
    }

    /// Remembers `id` (emptying the set first when it is full); whether it was new.
    pub(super) fn insert(&self, id: &str) -> bool {
        let mut ids = self.ids.lock();
        if ids.len() >= self.max {
            ids.clear();
        }
        ids.insert(id.to_owned())
    }

    /// Forgets `id`.
    pub(super) fn remove(&self, id: &str) {
        self.ids.lock().remove(id);
    }

    /// Whether `id` is remembered.
    pub(super) fn contains(&self, id: &str) -> bool {
        self.ids.lock().contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_up_to_its_bound_then_starts_over() {
        let ids = RememberedIds::new(2);
        assert!(ids.insert("a"));
        assert!(!ids.insert("a"));
        assert!(ids.insert("b"));
        assert!(ids.contains("a") && ids.contains("b"));
        assert!(ids.insert("c"));
        assert!(!ids.contains("a") && !ids.contains("b") && ids.contains("c"));
        ids.remove("c");
        assert!(!ids.contains("c"));
    }
}
