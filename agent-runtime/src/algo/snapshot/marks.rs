//! What the walker remembers of the tracked collections ([`TrackedVec`](crate::TrackedVec),
//! [`TrackedMap`](crate::TrackedMap)) it walked: for each path in the tree, which collection
//! (and at which version) the array or object there is the serialization of. A mark is
//! what lets the next walk visit only the chunks changed since.
//!
//! A mark stays true while the value at its path changes only through walks of that same
//! collection. Every other change to the tree shows as a patch op, so after each walk the
//! marks at, under or above an op's path are dropped, and then the marks this walk recorded
//! (the collections it walked in place) are put in. A collection at a marked path whose
//! identity is not the mark's is walked whole, which is always correct.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::algo::diff::PatchOp;

/// The vector an array in the tree is the serialization of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The vector's identity.
    pub id: u64,
    /// Its version when it was walked.
    pub version: u64,
}

/// The marks of one tree, by JSON pointer.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    by_path: BTreeMap<String, Mark>,
}

impl Marks {
    /// The mark at `path`.
    pub(crate) fn get(&self, path: &str) -> Option<Mark> {
        self.by_path.get(path).copied()
    }

    /// Forgets every mark (the tree changed in a way no walk recorded).
    pub(crate) fn clear(&mut self) {
        self.by_path.clear();
    }

    /// How many marks are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_path.len()
    }

    /// After a walk: drops the marks `ops` may have made false, then records `fresh`.
    pub(crate) fn settle(&mut self, ops: &[PatchOp], fresh: Vec<(String, Mark)>) {
        if !self.by_path.is_empty() {
            for op in ops {
                self.drop_around(op.path());
            }
        }
        self.by_path.extend(fresh);
    }

    /// Drops the marks at `path`, under it and above it.
    fn drop_around(&mut self, path: &str) {
        let under: Vec<String> = self
            .by_path
            .range::<str, _>((Bound::Included(path), Bound::Unbounded))
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(path))
            .filter(|k| k.len() == path.len() || k.as_bytes()[path.len()] == b'/')
            .cloned()
            .collect();
        for k in under {
            self.by_path.remove(&k);
        }
        for (at, _) in path.match_indices('/').skip(1) {
            self.by_path.remove(&path[..at]);
        }
        // The root is the empty pointer, above every path.
        self.by_path.remove("");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn mark(id: u64) -> Mark {
        Mark { id, version: 0 }
    }

    fn marks(paths: &[&str]) -> Marks {
        let mut m = Marks::default();
        m.settle(
            &[],
            paths.iter().map(|p| (p.to_string(), mark(1))).collect(),
        );
        m
    }

    fn kept(m: &Marks) -> Vec<&str> {
        m.by_path.keys().map(String::as_str).collect()
    }

    #[test]
    fn an_op_drops_the_marks_at_under_and_above_its_path_only() {
        let mut m = marks(&["/a", "/a/3/b", "/a/30/b", "/ab", "/c/d"]);
        let op = PatchOp::Replace {
            path: "/a/3".into(),
            value: Value::Null,
        };
        m.settle(&[op], Vec::new());
        assert_eq!(kept(&m), ["/a/30/b", "/ab", "/c/d"]);
    }

    #[test]
    fn a_root_op_drops_everything_and_fresh_marks_survive_the_ops_of_their_walk() {
        let mut m = marks(&["/a", "/b/0"]);
        let root = PatchOp::Replace {
            path: String::new(),
            value: Value::Null,
        };
        m.settle(&[root], Vec::new());
        assert_eq!(m.len(), 0);
        let mut m = marks(&["/a", "/b"]);
        let inner = PatchOp::Remove {
            path: "/a/7".into(),
        };
        m.settle(&[inner], vec![("/a".into(), mark(2))]);
        assert_eq!(kept(&m), ["/a", "/b"]);
        assert_eq!(m.get("/a"), Some(mark(2)));
    }
}
