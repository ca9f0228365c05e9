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

pub use agent_schema::protocol::PatchOp;

/// Returns the JSON Patch operations that turn `prev` into `next` (semantics §1).
///
/// Equal values give `[]`. The cost is linear in the size of the two values.
///
/// ```
/// use agent_runtime::diff::{diff, PatchOp};
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
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    use serde_json::json;

    fn add(path: &str, value: Value) -> PatchOp {
        PatchOp::Add {
            path: path.into(),
            value,
        }
    }

    fn remove(path: &str) -> PatchOp {
        PatchOp::Remove { path: path.into() }
    }

    fn replace(path: &str, value: Value) -> PatchOp {
        PatchOp::Replace {
            path: path.into(),
            value,
        }
    }

    // §11.1 #1
    #[test]
    fn scalar_member_change_and_equal_values() {
        assert_eq!(
            diff(&json!({"a":1}), &json!({"a":2})),
            vec![replace("/a", json!(2))]
        );
        let a = json!({"x":[1,{"y":null}],"z":"s"});
        let b: Value = serde_json::from_str(r#"{"x":[1,{"y":null}],"z":"s"}"#).unwrap();
        assert_eq!(diff(&a, &b), vec![]);
        assert_eq!(diff(&a, &a), vec![]);
    }

    // §11.1 #2
    #[test]
    fn root_replace_and_count() {
        assert_eq!(diff(&json!(5), &json!(7)), vec![replace("", json!(7))]);
        assert_eq!(
            diff(&json!({"count":0}), &json!({"count":5})),
            vec![replace("/count", json!(5))]
        );
    }

    // §11.1 #3
    #[test]
    fn add_and_remove_key() {
        assert_eq!(
            diff(&json!({"a":1}), &json!({"a":1,"b":2})),
            vec![add("/b", json!(2))]
        );
        assert_eq!(
            diff(&json!({"a":1,"b":2}), &json!({"a":1})),
            vec![remove("/b")]
        );
    }

    // §11.1 #4
    #[test]
    fn escaping_and_empty_key() {
        let ops = diff(&json!({"a/b":1,"c~d":2}), &json!({"a/b":99,"c~d":99}));
        assert!(ops.contains(&replace("/a~1b", json!(99))));
        assert!(ops.contains(&replace("/c~0d", json!(99))));
        assert_eq!(ops.len(), 2);
        assert_eq!(
            diff(&json!({"":1}), &json!({"":2})),
            vec![replace("/", json!(2))]
        );
        // `~` is escaped before `/`: the key `~/` is `~0~1`, and `~1` is `~01`.
        assert_eq!(
            diff(&json!({"~/":1, "~1":1}), &json!({"~/":2, "~1":2})),
            vec![replace("/~0~1", json!(2)), replace("/~01", json!(2))]
        );
    }

    // §11.1 #5
    #[test]
    fn arrays() {
        assert_eq!(
            diff(&json!([1, 2, 3]), &json!([1, 99, 3])),
            vec![replace("/1", json!(99))]
        );
        assert_eq!(
            diff(&json!([1, 2]), &json!([1, 2, 3])),
            vec![add("/2", json!(3))]
        );
        assert_eq!(
            diff(&json!([1, 2, 3]), &json!([1])),
            vec![remove("/2"), remove("/1")]
        );
        assert_eq!(
            diff(&json!([]), &json!([1, 2])),
            vec![add("/0", json!(1)), add("/1", json!(2))]
        );
        assert_eq!(
            diff(&json!(vec![0; 12]), &json!(vec![0; 10])),
            vec![remove("/11"), remove("/10")]
        );
    }

    // §11.1 #6
    #[test]
    fn object_to_array() {
        assert_eq!(
            diff(&json!({"items":{"a":1}}), &json!({"items":[1,2,3]})),
            vec![replace("/items", json!([1, 2, 3]))]
        );
        assert_eq!(
            diff(&json!({"items":[]}), &json!({"items":{}})),
            vec![replace("/items", json!({}))]
        );
    }

    // §11.1 #7
    #[test]
    fn nested_change_in_larger_object() {
        let prev = json!({
            "user": {"name": "Bob", "roles": ["a", "b"]},
            "auth": {"token": "t", "expiry": 100, "scopes": ["r", "w"]},
            "items": [{"id": 1}, {"id": 2}],
            "flag": true
        });
        let mut next = prev.clone();
        next["auth"]["expiry"] = json!(200);
        assert_eq!(
            diff(&prev, &next),
            vec![replace("/auth/expiry", json!(200))]
        );
    }

    // §11.1 #8
    #[test]
    fn null_and_object() {
        assert_eq!(
            diff(&json!({"a":null}), &json!({"a":{"b":1}})),
            vec![replace("/a", json!({"b":1}))]
        );
        assert_eq!(
            diff(&json!({"a":{"b":1}}), &json!({"a":null})),
            vec![replace("/a", json!(null))]
        );
    }

    // §11.1 #9
    #[test]
    fn two_new_entries_in_empty_object() {
        let prev = json!({"matrix": {"criteria": {}}});
        let next = json!({"matrix": {"criteria": {
            "crit-msrp": {"title": "MSRP", "weight": 1},
            "crit-range": {"title": "Range", "weight": 2}
        }}});
        assert_eq!(
            diff(&prev, &next),
            vec![
                add(
                    "/matrix/criteria/crit-msrp",
                    json!({"title": "MSRP", "weight": 1})
                ),
                add(
                    "/matrix/criteria/crit-range",
                    json!({"title": "Range", "weight": 2})
                ),
            ]
        );
    }

    // §11.1 #10
    #[test]
    fn array_of_objects() {
        assert_eq!(
            diff(
                &json!([{"id":"a","value":1},{"id":"b","value":2}]),
                &json!([{"id":"a","value":99},{"id":"b","value":2}])
            ),
            vec![replace("/0/value", json!(99))]
        );
    }

    // §11.1 #11
    #[test]
    fn worked_example() {
        let prev = json!({"a":1,"b":{"x":1,"y":2},"c":[1,2,3]});
        let next = json!({"c":[9],"b":{"y":3,"z":1},"d":4});
        assert_eq!(
            diff(&prev, &next),
            vec![
                remove("/a"),
                replace("/c/0", json!(9)),
                remove("/c/2"),
                remove("/c/1"),
                remove("/b/x"),
                replace("/b/y", json!(3)),
                add("/b/z", json!(1)),
                add("/d", json!(4)),
            ]
        );
    }

    #[test]
    fn key_order_alone_is_no_change() {
        assert_eq!(diff(&json!({"a":1,"b":2}), &json!({"b":2,"a":1})), vec![]);
    }

    #[test]
    fn integer_and_float_differ() {
        // serde_json equality: 1 and 1.0 are different numbers.
        assert_eq!(
            diff(&json!({"n":1}), &json!({"n":1.0})),
            vec![replace("/n", json!(1.0))]
        );
    }

    #[test]
    fn ops_serialize_as_json_patch() {
        let ops = diff(&json!({"a":1,"b":2,"c":[1]}), &json!({"a":3,"c":[1,4]}));
        assert_eq!(
            serde_json::to_string(&ops).unwrap(),
            r#"[{"op":"remove","path":"/b"},{"op":"replace","path":"/a","value":3},{"op":"add","path":"/c/1","value":4}]"#
        );
    }

    /// Keys chosen so that random objects share keys often and hit every escaping case.
    pub(crate) fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "a", "b", "c", "", "/", "~", "a/b", "c~d", "~1", "~0/", "0", "1",
        ])
        .prop_map(str::to_string)
    }

    pub(crate) fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..4).prop_map(Value::from),
            prop::sample::select(vec![0.5f64, 1.0, -2.25]).prop_map(Value::from),
            prop::sample::select(vec!["", "x", "y/z"]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..5)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    /// Rewrites `value` at a few pseudo-random places, so the pair shares most of its shape.
    pub(crate) fn mutate(value: &mut Value, choices: &[(u8, Value)]) {
        let Some(((choice, replacement), rest)) = choices.split_first() else {
            return;
        };
        match value {
            Value::Array(items) if !items.is_empty() && choice % 4 != 0 => {
                let i = usize::from(*choice) % items.len();
                match choice % 5 {
                    1 => {
                        items.remove(i);
                    }
                    2 => items.push(replacement.clone()),
                    _ => mutate(&mut items[i], rest),
                }
            }
            Value::Object(map) if !map.is_empty() && choice % 4 != 0 => {
                let i = usize::from(*choice) % map.len();
                let k = map.keys().nth(i).cloned().unwrap_or_default();
                match choice % 5 {
                    1 => {
                        map.shift_remove(&k);
                    }
                    2 => {
                        map.insert(format!("{k}~/"), replacement.clone());
                    }
                    _ => {
                        if let Some(child) = map.get_mut(&k) {
                            mutate(child, rest);
                        }
                    }
                }
            }
            _ => *value = replacement.clone(),
        }
    }

    fn assert_patch_reproduces(a: &Value, b: &Value) -> Result<(), TestCaseError> {
        let ops = diff(a, b);
        let patch: json_patch::Patch =
            serde_json::from_value(serde_json::to_value(&ops).unwrap()).unwrap();
        let mut doc = a.clone();
        json_patch::patch(&mut doc, &patch)
            .map_err(|e| TestCaseError::fail(format!("patch failed: {e}; ops {ops:?}")))?;
        prop_assert_eq!(&doc, b);
        if a == b {
            prop_assert!(ops.is_empty());
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn patch_applies_for_independent_pairs(a in json(), b in json()) {
            assert_patch_reproduces(&a, &b)?;
        }

        #[test]
        fn patch_applies_for_related_pairs(
            a in json(),
            edits in prop::collection::vec(
                prop::collection::vec((any::<u8>(), json()), 1..5),
                1..4,
            ),
        ) {
            let mut b = a.clone();
            for choices in &edits {
                mutate(&mut b, choices);
            }
            assert_patch_reproduces(&a, &b)?;
        }
    }

    #[test]
    fn index_digits() {
        for i in [0usize, 7, 10, 99, 100, 12345, usize::MAX] {
            let mut s = String::new();
            push_index(&mut s, i);
            assert_eq!(s, format!("/{i}"));
        }
    }
}
