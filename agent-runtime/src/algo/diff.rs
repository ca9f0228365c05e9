//! State diff: the positional JSON Patch algorithm of the spec (semantics §1).
//!
//! [`diff`] turns two JSON values into the list of `add` / `remove` / `replace` operations that
//! takes the first to the second. The walk is positional (array elements are compared index by
//! index, no LCS) and emits ops in traversal order, container by container:
//!
//! - equal values → nothing;
//! - a scalar on either side, or an array against an object → one `replace`;
//! - two arrays → walk the common prefix, then `remove` the surplus from the END down, then
//!   `add` the new tail with explicit indices;
//! - two objects → `remove` the keys of `prev` missing from `next` (in `prev`'s order), then for
//!   each key of `next` (in `next`'s order) `add` it when new, else walk it.
//!
//! Path segments are escaped per RFC 6901 (`~` → `~0`, then `/` → `~1`).
//!
//! The walk builds paths in one reusable buffer, clones only the values that go into ops, and
//! skips hashing when two objects have the same keys in the same order (the usual case for
//! states produced by serde from the same struct).

use serde_json::{Map, Value};

pub use tea_agent_schema::protocol::PatchOp;

/// Returns the JSON Patch operations that turn `prev` into `next` (semantics §1).
///
/// Equal values give `[]`. The cost is linear in the size of the two values.
///
/// ```
/// use tea_agent_runtime::diff::{diff, PatchOp};
/// use serde_json::json;
///
/// let ops = diff(&json!({"count": 0}), &json!({"count": 5}));
/// assert_eq!(ops, vec![PatchOp::Replace { path: "/count".into(), value: json!(5) }]);
/// ```
pub fn diff(prev: &Value, next: &Value) -> Vec<PatchOp> {
    diff_trees(prev, next)
}

/// [`diff`] for any [`Tree`]: the ops that take `prev`'s value to `next`'s.
pub(crate) fn diff_trees<T: Tree>(prev: &T, next: &T) -> Vec<PatchOp> {
    let mut differ = Differ {
        path: String::with_capacity(64),
        ops: Vec::new(),
    };
    differ.walk(prev, next);
    differ.ops
}

/// Appends to `ops` the operations that turn `prev` into `next`, the two values sitting at
/// `path` (an RFC 6901 pointer, `""` for the root): the same ops [`diff`] gives, with `path`
/// in front of theirs. `path` is left as it was given.
pub(crate) fn diff_into(prev: &Value, next: &Value, path: &mut String, ops: &mut Vec<PatchOp>) {
    let mut differ = Differ {
        path: std::mem::take(path),
        ops: std::mem::take(ops),
    };
    differ.walk(prev, next);
    *path = differ.path;
    *ops = differ.ops;
}

/// A JSON tree the diff walks: a `serde_json::Value`, or a snapshot's compact tree
/// ([`crate::algo::tree`]). Arrays and objects are walked here; everything else is the
/// tree's own [`Tree::leaves`].
pub(crate) trait Tree: Sized {
    /// An object's fields.
    type Fields: Fields<Self>;
    /// The node as an array or an object, when it is one the walk goes into.
    fn shape(&self) -> Shape<'_, Self>;
    /// True when both are the same scalar, so the walk can skip the pair without touching
    /// the path buffer (containers answer false: the walk compares them).
    fn scalar_equal(prev: &Self, next: &Self) -> bool;
    /// The node's value, for an op.
    fn to_value(&self) -> Value;
    /// Appends the ops from `prev` to `next` at `path`, for a pair that is not two arrays or
    /// two objects.
    fn leaves(prev: &Self, next: &Self, path: &mut String, ops: &mut Vec<PatchOp>);
}

/// What the walk sees of a node.
pub(crate) enum Shape<'a, T: Tree> {
    Array(&'a [T]),
    Object(&'a T::Fields),
    Other,
}

/// An object's fields as the walk reads them.
pub(crate) trait Fields<T> {
    fn len(&self) -> usize;
    fn get(&self, key: &str) -> Option<&T>;
    fn entries<'a>(&'a self) -> impl Iterator<Item = (&'a String, &'a T)>
    where
        T: 'a;
}

impl Tree for Value {
    type Fields = Map<String, Value>;
    fn shape(&self) -> Shape<'_, Self> {
        match self {
            Value::Array(items) => Shape::Array(items),
            Value::Object(map) => Shape::Object(map),
            _ => Shape::Other,
        }
    }
    #[inline]
    fn scalar_equal(prev: &Value, next: &Value) -> bool {
        match (prev, next) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            _ => false,
        }
    }
    fn to_value(&self) -> Value {
        self.clone()
    }
    fn leaves(prev: &Value, next: &Value, path: &mut String, ops: &mut Vec<PatchOp>) {
        if prev != next {
            ops.push(PatchOp::Replace {
                path: path.clone(),
                value: next.clone(),
            });
        }
    }
}

impl Fields<Value> for Map<String, Value> {
    fn len(&self) -> usize {
        Map::len(self)
    }
    fn get(&self, key: &str) -> Option<&Value> {
        Map::get(self, key)
    }
    fn entries<'a>(&'a self) -> impl Iterator<Item = (&'a String, &'a Value)>
    where
        Value: 'a,
    {
        self.iter()
    }
}

/// The walk's state: the path of the current node and the ops emitted so far.
struct Differ {
    path: String,
    ops: Vec<PatchOp>,
}

impl Differ {
    /// Emits the ops for `prev` → `next` at the current path.
    ///
    /// No upfront equality test on containers: walking two equal containers emits nothing, so
    /// the walk itself is the comparison and every node is visited once.
    fn walk<T: Tree>(&mut self, prev: &T, next: &T) {
        match (prev.shape(), next.shape()) {
            (Shape::Array(p), Shape::Array(n)) => self.walk_arrays(p, n),
            (Shape::Object(p), Shape::Object(n)) => self.walk_objects::<T>(p, n),
            _ => T::leaves(prev, next, &mut self.path, &mut self.ops),
        }
    }

    fn walk_arrays<T: Tree>(&mut self, prev: &[T], next: &[T]) {
        let base = self.path.len();
        let common = prev.len().min(next.len());
        for (i, (p, n)) in prev.iter().zip(next).enumerate() {
            if T::scalar_equal(p, n) {
                continue;
            }
            push_index(&mut self.path, i);
            self.walk(p, n);
            self.path.truncate(base);
        }
        for i in (next.len()..prev.len()).rev() {
            push_index(&mut self.path, i);
            self.remove();
            self.path.truncate(base);
        }
        for (i, n) in next.iter().enumerate().skip(common) {
            push_index(&mut self.path, i);
            self.add(n);
            self.path.truncate(base);
        }
    }

    fn walk_objects<T: Tree>(&mut self, prev: &T::Fields, next: &T::Fields) {
        let base = self.path.len();
        if same_key_order(prev, next) {
            // Same keys at the same positions: no key is removed or added, and each value's
            // counterpart is the one at the same position, so no lookup is needed.
            for ((key, p), (_, n)) in prev.entries().zip(next.entries()) {
                if T::scalar_equal(p, n) {
                    continue;
                }
                push_key(&mut self.path, key);
                self.walk(p, n);
                self.path.truncate(base);
            }
            return;
        }
        for (key, _) in prev.entries() {
            if next.get(key).is_none() {
                push_key(&mut self.path, key);
                self.remove();
                self.path.truncate(base);
            }
        }
        for (key, n) in next.entries() {
            match prev.get(key) {
                Some(p) if T::scalar_equal(p, n) => {}
                Some(p) => {
                    push_key(&mut self.path, key);
                    self.walk(p, n);
                    self.path.truncate(base);
                }
                None => {
                    push_key(&mut self.path, key);
                    self.add(n);
                    self.path.truncate(base);
                }
            }
        }
    }

    fn add<T: Tree>(&mut self, node: &T) {
        self.ops.push(PatchOp::Add {
            path: self.path.clone(),
            value: node.to_value(),
        });
    }

    fn remove(&mut self) {
        self.ops.push(PatchOp::Remove {
            path: self.path.clone(),
        });
    }
}

/// True when both objects have exactly the same keys in the same order.
fn same_key_order<T, F: Fields<T>>(prev: &F, next: &F) -> bool {
    prev.len() == next.len()
        && prev
            .entries()
            .zip(next.entries())
            .all(|((a, _), (b, _))| a == b)
}

/// Appends `/` and the RFC 6901 escape of `key` (`~` → `~0`, `/` → `~1`) to `path`.
pub(crate) fn push_key(path: &mut String, key: &str) {
    path.push('/');
    if !key.bytes().any(|b| b == b'~' || b == b'/') {
        path.push_str(key);
        return;
    }
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// Appends `/` and the decimal form of `index` to `path`, without going through `fmt`.
pub(crate) fn push_index(path: &mut String, mut index: usize) {
    path.push('/');
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (index % 10) as u8;
        index /= 10;
        if index == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        path.push(char::from(d));
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
pub(crate) mod tests;
