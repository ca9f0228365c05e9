//! The token-record cache of a store that only this process writes (SQLite).
//!
//! Every LAP call verifies its bearer: a database read per call. A SQLite file is written by
//! one server process (several replicas use PostgreSQL), so every change to a token record
//! goes through this process's store, which updates or drops the cached copy as it writes:
//! creation, activation and revocation drop the record, touches move its `lastSeenAt`, a
//! sweep drops everything. A revocation is thus seen by the very next call, as without the
//! cache.
//!
//! A read that raced with a write must not put back the copy the write replaced: every drop
//! bumps a generation, and a record read from the database is cached only if no drop
//! happened since the read started. Unknown hashes are never cached, and the cache holds at
//! most [`CAPACITY`] records (it is emptied when full), so callers cannot grow it.

use parking_lot::Mutex;
use std::collections::HashMap;

use crate::security::TokenRecord;

/// Records cached at most.
pub(crate) const CAPACITY: usize = 4096;

#[derive(Debug, Default)]
struct Inner {
    by_hash: HashMap<String, TokenRecord>,
    /// `tid` → `token_hash` of the cached records.
    hash_of: HashMap<String, String>,
    generation: u64,
}

/// What a lookup found.
pub(crate) enum Lookup {
    /// The cached record.
    Hit(Box<TokenRecord>),
    /// Not cached: read the database, then [`TokenCache::put`] with this generation.
    Miss(u64),
}

/// Token records by hash and by id (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    inner: Mutex<Inner>,
}

impl TokenCache {
    /// The record whose token hashes to `hash`.
    pub(crate) fn by_hash(&self, hash: &str) -> Lookup {
        let inner = self.inner.lock();
        match inner.by_hash.get(hash) {
            Some(r) => Lookup::Hit(Box::new(r.clone())),
            None => Lookup::Miss(inner.generation),
        }
    }

    /// The record of token `tid`.
    pub(crate) fn by_tid(&self, tid: &str) -> Lookup {
        let inner = self.inner.lock();
        match inner.hash_of.get(tid).and_then(|h| inner.by_hash.get(h)) {
            Some(r) => Lookup::Hit(Box::new(r.clone())),
            None => Lookup::Miss(inner.generation),
        }
    }

    /// Caches `record`, read from the database when the cache was at `generation`; nothing
    /// when a record was dropped since.
    pub(crate) fn put(&self, generation: u64, record: TokenRecord) {
        let mut inner = self.inner.lock();
        if inner.generation != generation {
            return;
        }
        if inner.by_hash.len() >= CAPACITY {
            inner.by_hash.clear();
            inner.hash_of.clear();
        }
        if let Some(old) = inner
            .hash_of
            .insert(record.tid.clone(), record.token_hash.clone())
        {
            inner.by_hash.remove(&old);
        }
        inner.by_hash.insert(record.token_hash.clone(), record);
    }

    /// Moves the cached `lastSeenAt` of `tid` to `now` (never back).
    pub(crate) fn touch(&self, tid: &str, now: u64) {
        let mut inner = self.inner.lock();
        let Some(hash) = inner.hash_of.get(tid).cloned() else {
            return;
        };
        if let Some(r) = inner.by_hash.get_mut(&hash) {
            r.last_seen_at = r.last_seen_at.max(now);
        }
    }

    /// Drops the record of `tid` (it was written).
    pub(crate) fn drop_tid(&self, tid: &str) {
        let mut inner = self.inner.lock();
        inner.generation += 1;
        if let Some(hash) = inner.hash_of.remove(tid) {
            inner.by_hash.remove(&hash);
        }
    }

    /// Drops every record.
    pub(crate) fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.generation += 1;
        inner.by_hash.clear();
        inner.hash_of.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tid: &str, hash: &str) -> TokenRecord {
        let mut r = TokenRecord::minted(hash.into(), None, "s".into(), "http://h".into(), 10);
        r.tid = tid.into();
        r
    }

    fn hit(l: Lookup) -> Option<TokenRecord> {
        match l {
            Lookup::Hit(r) => Some(*r),
            Lookup::Miss(_) => None,
        }
    }

    fn generation(l: Lookup) -> u64 {
        match l {
            Lookup::Hit(_) => panic!("cached"),
            Lookup::Miss(g) => g,
        }
    }

    #[test]
    fn cached_by_hash_and_tid_until_dropped() {
        let cache = TokenCache::default();
        let g = generation(cache.by_hash("h1"));
        cache.put(g, record("t1", "h1"));
        assert_eq!(hit(cache.by_hash("h1")).map(|r| r.tid), Some("t1".into()));
        assert_eq!(
            hit(cache.by_tid("t1")).map(|r| r.token_hash),
            Some("h1".into())
        );
        cache.touch("t1", 99);
        assert_eq!(hit(cache.by_tid("t1")).map(|r| r.last_seen_at), Some(99));
        cache.touch("t1", 50);
        assert_eq!(hit(cache.by_tid("t1")).map(|r| r.last_seen_at), Some(99));
        cache.drop_tid("t1");
        assert!(hit(cache.by_hash("h1")).is_none());
        assert!(hit(cache.by_tid("t1")).is_none());
    }

    #[test]
    fn a_read_that_raced_with_a_write_is_not_cached() {
        let cache = TokenCache::default();
        let g = generation(cache.by_hash("h1"));
        // A revocation lands between the read and the put.
        cache.drop_tid("t1");
        cache.put(g, record("t1", "h1"));
        assert!(hit(cache.by_hash("h1")).is_none());
        let g = generation(cache.by_hash("h1"));
        cache.clear();
        cache.put(g, record("t1", "h1"));
        assert!(hit(cache.by_hash("h1")).is_none());
    }

    #[test]
    fn a_new_hash_for_a_tid_replaces_the_old_one_and_the_size_is_bounded() {
        let cache = TokenCache::default();
        let g = generation(cache.by_hash("h1"));
        cache.put(g, record("t1", "h1"));
        cache.put(g, record("t1", "h2"));
        assert!(hit(cache.by_hash("h1")).is_none());
        assert!(hit(cache.by_hash("h2")).is_some());
        for i in 0..CAPACITY + 10 {
            cache.put(g, record(&format!("x{i}"), &format!("hx{i}")));
        }
        let inner = cache.inner.lock();
        assert!(inner.by_hash.len() <= CAPACITY);
        assert_eq!(inner.by_hash.len(), inner.hash_of.len());
    }
}
