//! The per-element truth table of one list gate ([`super::shape::Shape`]) and how a commit's
//! patch moves it: ops inside element `i` or replacing it mark `i` for re-evaluation, an `add`
//! or `remove` of element `i` inserts or drops its entry, and an op on the list itself or
//! above it (or one that does not fit) rebuilds the table.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::algo::tree::Node;

use super::shape::Fold;
use crate::algo::diff::PatchOp;

/// The outcome of the macro's predicate on one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Outcome {
    True,
    False,
    /// An evaluation error, a non-boolean result or a panic.
    Other,
    /// Changed by the patch, not evaluated yet.
    Dirty,
}

/// Outcomes of the elements of one list, with their counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    outcomes: Vec<Outcome>,
    trues: usize,
    falses: usize,
    others: usize,
    dirty: usize,
}

/// Outcomes of one list gate's predicate by what it reads of an element, kept across
/// commits and rebuilds of its [`Table`], so a value met before (`{"done":true}` of another
/// element, an element shifted by a removal ahead of it or restored by an undo, a table
/// rebuilt) is not evaluated again: the predicate does not read `state`
/// ([`super::shape::Shape`]), so its outcome is a function of what it reads of the element.
/// Keyed by a 128-bit keyed hash of that value's compact text (two SipHash keys of this
/// process): no text is kept. At most `max(SEEN_MIN, 2 × the list's length)` entries; past
/// that it starts over.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    keys: (RandomState, RandomState),
    outcomes: HashMap<u128, Outcome>,
}

/// The entries a [`Seen`] keeps, at least.
const SEEN_MIN: usize = 128;

impl Seen {
    /// The key of an element's compact text.
    pub(crate) fn key(&self, text: &str) -> u128 {
        let high = u128::from(self.keys.0.hash_one(text));
        high << 64 | u128::from(self.keys.1.hash_one(text))
    }

    /// The outcome recorded for `key`.
    pub(crate) fn get(&self, key: u128) -> Option<Outcome> {
        self.outcomes.get(&key).copied()
    }

    /// Records `outcome` for `key`, for a list of `len` elements.
    pub(crate) fn put(&mut self, key: u128, outcome: Outcome, len: usize) {
        if self.outcomes.len() >= SEEN_MIN.max(len.saturating_mul(2)) {
            self.outcomes.clear();
        }
        self.outcomes.insert(key, outcome);
    }
}

/// What a patch does to a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moved {
    /// Nothing under the list changed.
    Untouched,
    /// Some entries are [`Outcome::Dirty`].
    Changed,
    /// The list itself was replaced (or an op did not fit): build it again.
    Rebuild,
}

impl Table {
    /// A table of `len` dirty entries.
    pub(crate) fn dirty(len: usize) -> Self {
        Table {
            outcomes: vec![Outcome::Dirty; len],
            dirty: len,
            ..Table::default()
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.outcomes.len()
    }

    fn count(&mut self, outcome: Outcome, delta: isize) {
        let slot = match outcome {
            Outcome::True => &mut self.trues,
            Outcome::False => &mut self.falses,
            Outcome::Other => &mut self.others,
            Outcome::Dirty => &mut self.dirty,
        };
        *slot = slot.wrapping_add_signed(delta);
    }

    fn set(&mut self, i: usize, outcome: Outcome) {
        let old = std::mem::replace(&mut self.outcomes[i], outcome);
        self.count(old, -1);
        self.count(outcome, 1);
    }

    /// Applies the ops of one commit that concern the list at `path` (its segments under
    /// `state`, unescaped).
    pub(crate) fn apply(&mut self, path: &[String], ops: &[PatchOp]) -> Moved {
        let mut moved = Moved::Untouched;
        for op in ops {
            let (op_path, add, remove) = match op {
                PatchOp::Add { path, .. } => (path, true, false),
                PatchOp::Remove { path } => (path, false, true),
                PatchOp::Replace { path, .. } => (path, false, false),
            };
            let Some(rest) = under(op_path, path) else {
                continue;
            };
            let mut segments = rest;
            let Some(first) = segments.next() else {
                // The list itself, or something above it.
                return Moved::Rebuild;
            };
            let Ok(i) = first.parse::<usize>() else {
                return Moved::Rebuild;
            };
            let deeper = segments.next().is_some();
            moved = Moved::Changed;
            if deeper || (!add && !remove) {
                if i >= self.len() {
                    return Moved::Rebuild;
                }
                self.set(i, Outcome::Dirty);
            } else if add {
                if i > self.len() {
                    return Moved::Rebuild;
                }
                self.outcomes.insert(i, Outcome::Dirty);
                self.dirty += 1;
            } else {
                if i >= self.len() {
                    return Moved::Rebuild;
                }
                let old = self.outcomes.remove(i);
                self.count(old, -1);
            }
        }
        moved
    }

    /// The indices of the dirty entries, in order.
    pub(crate) fn dirty_indices(&self) -> Vec<usize> {
        if self.dirty == 0 {
            return Vec::new();
        }
        (0..self.outcomes.len())
            .filter(|&i| self.outcomes[i] == Outcome::Dirty)
            .collect()
    }

    /// Records the outcome of a dirty entry.
    pub(crate) fn settle(&mut self, i: usize, outcome: Outcome) {
        debug_assert_ne!(outcome, Outcome::Dirty);
        self.set(i, outcome);
    }

    /// Whether the gate passes (the macro's result, negated or not, is the boolean `true`),
    /// with the macro semantics of the `cel` interpreter: `exists` and `all` absorb errors
    /// beside a deciding element (`true` for `exists`, `false` for `all`), `exists_one` fails
    /// on any error. `None` while entries are dirty.
    pub(crate) fn verdict(&self, fold: Fold, negated: bool) -> Option<super::Verdict> {
        let passes = self.passes(fold, negated)?;
        let (t, f, o) = (self.trues, self.falses, self.others);
        // The macro's own result is an error when no element decides it and one failed.
        let failed = o > 0
            && match fold {
                Fold::Exists => t == 0,
                Fold::All => f == 0,
                Fold::ExistsOne => true,
            };
        Some(match (passes, failed) {
            (true, _) => super::Verdict::Open,
            (false, true) => super::Verdict::Failed,
            (false, false) => super::Verdict::Closed,
        })
    }

    /// Whether the gate passes; see [`Table::verdict`].
    pub(crate) fn passes(&self, fold: Fold, negated: bool) -> Option<bool> {
        if self.dirty > 0 {
            return None;
        }
        let (t, f, o) = (self.trues, self.falses, self.others);
        Some(match (fold, negated) {
            (Fold::Exists, false) => t > 0,
            // `false` only when no element is true and none failed.
            (Fold::Exists, true) => t == 0 && o == 0,
            (Fold::All, false) => f == 0 && o == 0,
            (Fold::All, true) => f > 0,
            (Fold::ExistsOne, false) => o == 0 && t == 1,
            (Fold::ExistsOne, true) => o == 0 && t != 1,
        })
    }
}

/// The segments of `op_path` after `list` when `op_path` is `list`, under it or above it
/// (a prefix of it: the iterator is then empty, like for `list` itself); `None` when the op
/// is elsewhere.
pub(crate) fn under<'p>(op_path: &'p str, list: &[String]) -> Option<std::str::Split<'p, char>> {
    // The root (or a malformed path): above everything.
    let Some(rest) = op_path.strip_prefix('/') else {
        return Some(empty());
    };
    let mut segments = rest.split('/');
    for want in list {
        match segments.next() {
            Some(segment) if same_segment(segment, want) => {}
            // Above the list (a prefix of it).
            None => return Some(empty()),
            Some(_) => return None,
        }
    }
    Some(segments)
}

/// An exhausted split.
fn empty<'p>() -> std::str::Split<'p, char> {
    let mut s = "".split('/');
    s.next();
    s
}

/// An escaped RFC 6901 segment against an unescaped field name.
pub(crate) fn same_segment(escaped: &str, field: &str) -> bool {
    if escaped.contains('~') {
        escaped.replace("~1", "/").replace("~0", "~") == field
    } else {
        escaped == field
    }
}

/// The value at `path` (field names) in `tree`, when every step is an object field.
pub(crate) fn at<'v>(tree: &'v Node, path: &[String]) -> Option<&'v Node> {
    path.iter().try_fold(tree, |v, field| v.field(field))
}
