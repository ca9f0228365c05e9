//! [`TrackedMap`]: an insertion-ordered map that remembers which of its entries changed, the
//! keyed counterpart of [`TrackedVec`](super::TrackedVec).

use std::borrow::Borrow;
use std::borrow::Cow;
use std::fmt;
use std::hash::Hash;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::changes::Changes;

/// A map in insertion order (like `serde_json`'s objects) that records which chunks of 16
/// entries each change touches, so that a session's snapshot walk visits only those.
///
/// It serializes, deserializes and describes itself (JSON Schema) like a map of `K` to `V`:
/// a JSON object, its keys in insertion order. Changing a value ([`TrackedMap::get_mut`],
/// [`TrackedMap::insert`] on a present key) records that entry; adding a key records the new
/// last entry; removing one ([`TrackedMap::remove`], [`TrackedMap::retain`]) keeps the order
/// of the others and records every entry from the removed one on, as their positions shift
/// (and costs what `Vec::remove` costs). [`TrackedMap::values_mut`] records everything.
///
/// As with [`TrackedVec`](super::TrackedVec), values must not change through interior
/// mutability.
pub struct TrackedMap<K, V> {
    pub(crate) entries: IndexMap<K, V>,
    /// Its own for this value: a clone or a deserialized copy gets new ones.
    pub(crate) changes: Changes,
}

impl<K: Hash + Eq, V> TrackedMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        IndexMap::new().into()
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key`.
    pub fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.entries.get(key)
    }

    /// Whether `key` is present.
    pub fn contains_key<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.entries.contains_key(key)
    }

    /// The value of `key`, to change (recorded as changed).
    pub fn get_mut<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        let (index, _, value) = self.entries.get_full_mut(key)?;
        self.changes.touch(index);
        Some(value)
    }

    /// Sets the value of `key`: a present key keeps its place, a new one goes last. Returns
    /// the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let (index, old) = self.entries.insert_full(key, value);
        match old {
            Some(_) => self.changes.touch(index),
            None => self.changes.touch_from(index, self.entries.len()),
        }
        old
    }

    /// Removes `key`, keeping the order of the others.
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let (index, _, value) = self.entries.shift_remove_full(key)?;
        self.changes.touch_from(index, self.entries.len());
        Some(value)
    }

    /// Keeps the entries matching `keep`, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        let mut first_removed = None;
        let mut index = 0;
        self.entries.retain(|k, v| {
            let kept = keep(k, v);
            if !kept && first_removed.is_none() {
                first_removed = Some(index);
            }
            index += 1;
            kept
        });
        if let Some(from) = first_removed {
            self.changes.touch_from(from, self.entries.len());
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        if !self.entries.is_empty() {
            self.entries.clear();
            self.changes.touch_from(0, 0);
        }
    }

    /// The entries, in order.
    pub fn iter(&self) -> indexmap::map::Iter<'_, K, V> {
        self.entries.iter()
    }

    /// The keys, in order.
    pub fn keys(&self) -> indexmap::map::Keys<'_, K, V> {
        self.entries.keys()
    }

    /// The values, in order.
    pub fn values(&self) -> indexmap::map::Values<'_, K, V> {
        self.entries.values()
    }

    /// Every value, to change: records a change of everything.
    pub fn values_mut(&mut self) -> indexmap::map::ValuesMut<'_, K, V> {
        self.changes.touch_from(0, self.entries.len());
        self.entries.values_mut()
    }

    /// The entries as an `IndexMap`.
    pub fn into_inner(self) -> IndexMap<K, V> {
        self.entries
    }
}

impl<K: Hash + Eq, V> Default for TrackedMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> From<IndexMap<K, V>> for TrackedMap<K, V> {
    fn from(entries: IndexMap<K, V>) -> Self {
        TrackedMap {
            changes: Changes::new(entries.len()),
            entries,
        }
    }
}

impl<K: Hash + Eq, V> FromIterator<(K, V)> for TrackedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        iter.into_iter().collect::<IndexMap<K, V>>().into()
    }
}

impl<K: Hash + Eq, V> Extend<(K, V)> for TrackedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

/// A clone is a new map: it gets its own identity (see `TrackedVec`'s `Clone`).
impl<K: Clone, V: Clone> Clone for TrackedMap<K, V> {
    fn clone(&self) -> Self {
        self.entries.clone().into()
    }
}

impl<'a, K, V> IntoIterator for &'a TrackedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = indexmap::map::Iter<'a, K, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for TrackedMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.entries.fmt(f)
    }
}

/// Equal when the entries are, in the same order (the change records are not compared).
impl<K: PartialEq, V: PartialEq> PartialEq for TrackedMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.entries.len() == other.entries.len() && self.entries.iter().eq(other.entries.iter())
    }
}

impl<K: Eq, V: Eq> Eq for TrackedMap<K, V> {}

/// A JSON object in insertion order. To the snapshot walker, only the entries changed since
/// it last saw this map (see `TrackedVec`'s `Serialize`).
impl<K: Serialize, V: Serialize> Serialize for TrackedMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.entries.len();
        self.changes
            .send(
                len,
                || serializer.serialize_map(Some(len)),
                |map, index| match self.entries.get_index(index) {
                    Some((k, v)) => map.serialize_entry(k, v),
                    None => Ok(()),
                },
            )?
            .end()
    }
}

/// Reads a JSON object (keys in their order); the map is a new one.
impl<'de, K: Deserialize<'de> + Hash + Eq, V: Deserialize<'de>> Deserialize<'de>
    for TrackedMap<K, V>
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IndexMap::<K, V>::deserialize(deserializer).map(TrackedMap::from)
    }
}

/// The schema of a map of `K` to `V` (`BTreeMap`'s), under the same name.
impl<K: JsonSchema, V: JsonSchema> JsonSchema for TrackedMap<K, V> {
    fn schema_name() -> Cow<'static, str> {
        std::collections::BTreeMap::<K, V>::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        std::collections::BTreeMap::<K, V>::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        std::collections::BTreeMap::<K, V>::json_schema(generator)
    }
    fn inline_schema() -> bool {
        std::collections::BTreeMap::<K, V>::inline_schema()
    }
}
