//! The recent commit patches of a session, so `/state {sinceSeq}` can answer a patch instead of
//! the whole state and `/wait {sinceSeq}` can tell whether a path changed since a version
//! (`docs/semantics.md` §8.7).
//!
//! Entries are contiguous: each holds the ops from the state at `from` to the state at `to`
//! (one commit, `to = from + 1`, or a jump when a reload from the store published several
//! commits at once), and each entry starts where the previous one ended. The ring is bounded in
//! entries and in bytes (the compact JSON of the ops); an entry over the byte budget on its own
//! empties the ring, since no chain can cross it.

use std::collections::VecDeque;
use std::sync::Arc;

use super::retained::{self, RetainedRing, RingCharge};
use crate::algo::diff::PatchOp;
use crate::config::json_len;

struct Entry {
    from: u64,
    to: u64,
    ops: Arc<[PatchOp]>,
    bytes: usize,
    /// What it costs on the heap, as charged to the host (`retained::ops_cost`).
    cost: usize,
    /// Its stamp in the host's order of what sessions retain (`retained.rs`).
    stamp: u64,
}

/// What the ring knows about the commits since a version.
#[derive(Debug, PartialEq)]
pub(crate) enum Since {
    /// The ops from that version to the newest one recorded, in order (apply them in turn).
    Patch(Vec<PatchOp>),
    /// The ring does not reach back that far (or the version is not one of this session's).
    Unknown,
}

/// A bounded ring of recent commit patches, giving way to the host's budget of what sessions
/// retain (`retained.rs`).
pub(crate) struct PatchRing {
    entries: VecDeque<Entry>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
    charge: RingCharge,
}

impl RetainedRing for PatchRing {
    fn oldest_stamp(&self) -> Option<u64> {
        self.entries.front().map(|e| e.stamp)
    }

    fn drop_oldest(&mut self) {
        if let Some(old) = self.entries.pop_front() {
            self.bytes -= old.bytes;
            self.charge.sub(old.cost);
        }
    }

    fn charge(&mut self) -> &mut RingCharge {
        &mut self.charge
    }
}

impl PatchRing {
    /// An empty ring keeping at most `max_entries` patches of `max_bytes` in all, counted in
    /// `charge`.
    pub(crate) fn new(max_entries: usize, max_bytes: usize, charge: RingCharge) -> Self {
        PatchRing {
            entries: VecDeque::new(),
            bytes: 0,
            max_entries,
            max_bytes,
            charge,
        }
    }

    fn clear(&mut self) {
        while !self.entries.is_empty() {
            self.drop_oldest();
        }
    }

    /// Records the ops that took the state from version `from` to `to`; answers their size
    /// (compact JSON bytes).
    pub(crate) fn push(&mut self, from: u64, to: u64, ops: Arc<[PatchOp]>) -> usize {
        let contiguous = self.entries.back().is_none_or(|e| e.to == from);
        let bytes = json_len(&*ops);
        if !contiguous || bytes > self.max_bytes || self.max_entries == 0 || to <= from {
            self.clear();
            if bytes > self.max_bytes || self.max_entries == 0 || to <= from {
                return bytes;
            }
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= self.max_entries || self.bytes + bytes > self.max_bytes)
        {
            self.drop_oldest();
        }
        self.bytes += bytes;
        let cost = retained::ops_cost(&ops, std::mem::size_of::<Entry>());
        let stamp = self.charge.add(cost);
        self.entries.push_back(Entry {
            from,
            to,
            ops,
            bytes,
            cost,
            stamp,
        });
        retained::settle(self);
        bytes
    }

    /// The ops from version `since` to `newest` (the published version), when the ring holds
    /// every commit in between. `since == newest` is an empty patch.
    pub(crate) fn since(&self, since: u64, newest: u64) -> Since {
        if since == newest {
            return Since::Patch(Vec::new());
        }
        if since > newest || self.entries.back().is_none_or(|e| e.to != newest) {
            return Since::Unknown;
        }
        let Some(start) = self.entries.iter().position(|e| e.from == since) else {
            return Since::Unknown;
        };
        let ops = self
            .entries
            .iter()
            .skip(start)
            .flat_map(|e| e.ops.iter().cloned())
            .collect();
        Since::Patch(ops)
    }

    /// Whether any commit from `since` to `newest` touched the value at the JSON Pointer
    /// `path` (an op at the path, above it or below it); `None` when the ring does not reach
    /// back that far.
    pub(crate) fn touched(&self, since: u64, newest: u64, path: &str) -> Option<bool> {
        if since == newest {
            return Some(false);
        }
        if since > newest || self.entries.back().is_none_or(|e| e.to != newest) {
            return None;
        }
        let start = self.entries.iter().position(|e| e.from == since)?;
        Some(
            self.entries
                .iter()
                .skip(start)
                .flat_map(|e| e.ops.iter())
                .any(|op| overlaps(op.path(), path)),
        )
    }

    /// Bytes held (tests).
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        (self.entries.len(), self.bytes)
    }
}

/// Whether pointers `a` and `b` name the same value or one lies below the other.
fn overlaps(a: &str, b: &str) -> bool {
    let below = |long: &str, short: &str| {
        long.len() > short.len() && long.starts_with(short) && long.as_bytes()[short.len()] == b'/'
    };
    a == b || a.is_empty() || b.is_empty() || below(a, b) || below(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn charge() -> RingCharge {
        super::retained::Retained::unbounded().charge()
    }

    fn replace(path: &str, v: i64) -> Arc<[PatchOp]> {
        Arc::from(vec![PatchOp::Replace {
            path: path.into(),
            value: json!(v),
        }])
    }

    #[test]
    fn patches_chain_from_a_version_to_the_newest() {
        let mut ring = PatchRing::new(10, 10_000, charge());
        ring.push(0, 1, replace("/a", 1));
        ring.push(1, 2, replace("/b", 2));
        ring.push(2, 5, replace("/a", 3));
        let Since::Patch(ops) = ring.since(1, 5) else {
            panic!("held")
        };
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].path(), "/b");
        assert_eq!(ring.since(5, 5), Since::Patch(Vec::new()));
        // Inside a jump, before the ring, after the newest: unknown.
        assert_eq!(ring.since(3, 5), Since::Unknown);
        assert_eq!(ring.since(6, 5), Since::Unknown);
        assert_eq!(ring.since(0, 6), Since::Unknown);
        assert_eq!(ring.touched(2, 5, "/a"), Some(true));
        assert_eq!(ring.touched(1, 5, "/c"), Some(false));
        assert_eq!(ring.touched(1, 5, "/b/x"), Some(true));
        assert_eq!(ring.touched(3, 5, "/a"), None);
    }

    #[test]
    fn the_ring_is_bounded_in_entries_and_bytes() {
        let mut ring = PatchRing::new(2, 10_000, charge());
        for i in 0..5 {
            ring.push(i, i + 1, replace("/a", 1));
        }
        assert_eq!(ring.held().0, 2);
        assert!(matches!(ring.since(3, 5), Since::Patch(..)));
        assert_eq!(ring.since(2, 5), Since::Unknown);

        let one = json_len(&*replace("/a", 1));
        let mut ring = PatchRing::new(100, one * 3, charge());
        for i in 0..10 {
            ring.push(i, i + 1, replace("/a", 1));
        }
        assert_eq!(ring.held(), (3, one * 3));
        // An entry over the budget on its own empties the ring.
        let big: Arc<[PatchOp]> = Arc::from(vec![PatchOp::Add {
            path: "/x".into(),
            value: json!("x".repeat(one * 3)),
        }]);
        ring.push(10, 11, big);
        assert_eq!(ring.held(), (0, 0));
        assert_eq!(ring.since(9, 11), Since::Unknown);
        // A gap restarts the chain.
        ring.push(11, 12, replace("/a", 1));
        ring.push(20, 21, replace("/a", 1));
        assert_eq!(ring.held().0, 1);
        assert_eq!(ring.since(11, 21), Since::Unknown);
    }

    #[test]
    fn paths_overlap_above_and_below() {
        assert!(overlaps("/a/b", "/a"));
        assert!(overlaps("/a", "/a/b"));
        assert!(overlaps("", "/a"));
        assert!(overlaps("/a", "/a"));
        assert!(!overlaps("/ab", "/a"));
        assert!(!overlaps("/a/1", "/a/0"));
    }
}
