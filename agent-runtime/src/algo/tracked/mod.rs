//! [`TrackedVec`] and [`TrackedMap`]: collections that remember which parts of them changed,
//! so that a commit costs what it changed rather than what the state weighs (issue 12).
//!
//! After every commit a session compares the app's new state with the JSON it published the
//! commit before (`snapshot`). A plain `Vec` of 50,000 elements has to be compared
//! element by element, even when one element changed. A [`TrackedVec`] in the state instead
//! tells the snapshot walker which chunks of 16 elements changed since the walker last saw
//! it, and the walker compares only those: a toggle in a list of 50,000 costs about what it
//! costs in a list of 10.
//!
//! It reads like a slice (it dereferences to `[T]`) and serializes, deserializes and
//! describes itself (JSON Schema) exactly like `Vec<T>`, so the wire, the stored sessions and
//! the generated schemas do not change when a state swaps one for the other. Every way to
//! change it goes through a method that records the change: [`TrackedVec::get_mut`],
//! [`TrackedVec::find_mut`], indexing with `[]=`, [`TrackedVec::push`], [`TrackedVec::retain`],
//! and so on. [`TrackedVec::iter_mut`] and [`TrackedVec::as_mut_slice`] record a change of
//! everything: prefer `find_mut` or `get_mut` to change one element.
//!
//! [`TrackedMap`] is the keyed counterpart: a map in insertion order, serialized as a JSON
//! object.
//!
//! Its elements must not change through interior mutability (`Cell`, `RefCell`, `Mutex`):
//! such a change is not recorded, and agents would not see it until the element changes
//! through the vector.

mod changes;
pub(crate) mod handshake;
mod map;
mod serde_impls;

pub use map::TrackedMap;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Bound, Deref, Index, IndexMut, RangeBounds};

use changes::Changes;

/// A `Vec<T>` that records which chunks of it changed, so that a commit compares only those
/// (the `tracked` module).
pub struct TrackedVec<T> {
    pub(crate) items: Vec<T>,
    /// Its own for this value: a clone, a deserialized or a collected vector gets new ones.
    pub(crate) changes: Changes,
}

impl<T> TrackedVec<T> {
    /// An empty vector.
    pub fn new() -> Self {
        Vec::new().into()
    }

    /// An empty vector with room for `capacity` elements.
    pub fn with_capacity(capacity: usize) -> Self {
        Vec::with_capacity(capacity).into()
    }

    /// The elements, as a plain `Vec`.
    pub fn into_vec(self) -> Vec<T> {
        self.items
    }

    /// The elements, as a slice (also what `*` and method calls through `Deref` give).
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    /// Records a change of the element at `index`.
    fn touch(&mut self, index: usize) {
        self.changes.touch(index);
    }

    /// Records a change of every position from `from` on, after the length may have changed.
    fn touch_from(&mut self, from: usize) {
        self.changes.touch_from(from, self.items.len());
    }

    /// The element at `index`, to change (recorded as changed).
    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        if index >= self.items.len() {
            return None;
        }
        self.touch(index);
        self.items.get_mut(index)
    }

    /// The first element, to change (recorded as changed).
    pub fn first_mut(&mut self) -> Option<&mut T> {
        self.get_mut(0)
    }

    /// The last element, to change (recorded as changed).
    pub fn last_mut(&mut self) -> Option<&mut T> {
        let last = self.items.len().checked_sub(1)?;
        self.get_mut(last)
    }

    /// The first element matching `predicate`, to change (only that element is recorded as
    /// changed).
    pub fn find_mut(&mut self, predicate: impl FnMut(&T) -> bool) -> Option<&mut T> {
        let index = self.items.iter().position(predicate)?;
        self.get_mut(index)
    }

    /// Every element, to change: records a change of everything.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.touch_from(0);
        self.items.iter_mut()
    }

    /// The elements as a mutable slice (to sort, reverse, …): records a change of everything.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.touch_from(0);
        &mut self.items
    }

    /// Appends an element.
    pub fn push(&mut self, item: T) {
        self.items.push(item);
        self.touch_from(self.items.len() - 1);
    }

    /// Removes the last element.
    pub fn pop(&mut self) -> Option<T> {
        let item = self.items.pop()?;
        self.touch_from(self.items.len());
        Some(item)
    }

    /// Inserts an element at `index`, shifting the ones after it.
    ///
    /// # Panics
    /// When `index > len`, as `Vec::insert` does.
    pub fn insert(&mut self, index: usize, item: T) {
        self.items.insert(index, item);
        self.touch_from(index);
    }

    /// Removes the element at `index`, shifting the ones after it.
    ///
    /// # Panics
    /// When `index >= len`, as `Vec::remove` does.
    pub fn remove(&mut self, index: usize) -> T {
        let item = self.items.remove(index);
        self.touch_from(index);
        item
    }

    /// Removes the element at `index`, replacing it with the last one.
    ///
    /// # Panics
    /// When `index >= len`, as `Vec::swap_remove` does.
    pub fn swap_remove(&mut self, index: usize) -> T {
        let item = self.items.swap_remove(index);
        self.touch(index);
        self.touch_from(self.items.len());
        item
    }

    /// Swaps two elements.
    ///
    /// # Panics
    /// When either index is out of bounds, as `slice::swap` does.
    pub fn swap(&mut self, a: usize, b: usize) {
        self.items.swap(a, b);
        self.touch(a);
        self.touch(b);
    }

    /// Keeps the first `len` elements.
    pub fn truncate(&mut self, len: usize) {
        if len < self.items.len() {
            self.items.truncate(len);
            self.touch_from(len);
        }
    }

    /// Removes the elements in `range` and yields them; positions from its start on are
    /// recorded as changed.
    ///
    /// # Panics
    /// When the range is out of bounds, as `Vec::drain` does.
    pub fn drain<R: RangeBounds<usize>>(&mut self, range: R) -> std::vec::Drain<'_, T> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        // Chunks past the new length are left over until the next change of the length;
        // they send nothing (see `changed_since`).
        self.touch_from(start);
        self.items.drain(range)
    }

    /// Moves every element of `other` to the end.
    pub fn append(&mut self, other: &mut Vec<T>) {
        self.extend(other.drain(..));
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Keeps the elements matching `keep`; positions from the first removed one on are
    /// recorded as changed.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut first_removed = None;
        let mut index = 0;
        self.items.retain(|item| {
            let kept = keep(item);
            if !kept && first_removed.is_none() {
                first_removed = Some(index);
            }
            index += 1;
            kept
        });
        if let Some(from) = first_removed {
            self.touch_from(from);
        }
    }
}

impl<T> Default for TrackedVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> From<Vec<T>> for TrackedVec<T> {
    fn from(items: Vec<T>) -> Self {
        TrackedVec {
            changes: Changes::new(items.len()),
            items,
        }
    }
}

impl<T> From<TrackedVec<T>> for Vec<T> {
    fn from(tracked: TrackedVec<T>) -> Self {
        tracked.items
    }
}

impl<T> FromIterator<T> for TrackedVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        iter.into_iter().collect::<Vec<T>>().into()
    }
}

impl<T> Extend<T> for TrackedVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let from = self.items.len();
        self.items.extend(iter);
        if self.items.len() > from {
            self.touch_from(from);
        }
    }
}

/// A clone is a new vector: it gets its own identity, so the walker never takes it for the
/// original once the two have diverged.
impl<T: Clone> Clone for TrackedVec<T> {
    fn clone(&self) -> Self {
        self.items.clone().into()
    }
}

impl<T> Deref for TrackedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> AsRef<[T]> for TrackedVec<T> {
    fn as_ref(&self) -> &[T] {
        &self.items
    }
}

impl<T> Index<usize> for TrackedVec<T> {
    type Output = T;
    fn index(&self, index: usize) -> &T {
        &self.items[index]
    }
}

/// `v[i] = x` and `v[i].field = x`: records a change of element `i`.
impl<T> IndexMut<usize> for TrackedVec<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        self.touch(index);
        &mut self.items[index]
    }
}

impl<T> IntoIterator for TrackedVec<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a TrackedVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: fmt::Debug> fmt::Debug for TrackedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.items.fmt(f)
    }
}

/// Equal when the elements are (the change records are not compared).
impl<T: PartialEq> PartialEq for TrackedVec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<T: Eq> Eq for TrackedVec<T> {}

impl<T: PartialEq> PartialEq<Vec<T>> for TrackedVec<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        &self.items == other
    }
}

impl<T: Hash> Hash for TrackedVec<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.items.hash(state);
    }
}

#[cfg(test)]
mod tests;
