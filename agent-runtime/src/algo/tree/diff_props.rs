//! The tree diff on random states: whatever form the trees are in (built from values, read
//! from pretty text, elements unpacked as the snapshot walk leaves them), it gives the `Value`
//! diff's ops, which apply; and one edit anywhere in a state, inside a packed element or not,
//! gives exactly one op.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

use super::tests::{add, remove, replace};
use super::*;
use crate::algo::diff::diff;
// The random values and edits of the `Value` diff's own proptests.
use crate::algo::diff::tests::{json, key, mutate};

/// A state: an object whose lists hold records (objects and arrays, so packed).
fn state() -> impl Strategy<Value = Value> {
    let record = prop::collection::vec((key(), json()), 0..5)
        .prop_map(|entries| Value::Object(entries.into_iter().collect()));
    let list =
        prop::collection::vec(prop_oneof![3 => record, 1 => json()], 0..5).prop_map(Value::Array);
    prop::collection::vec((key(), prop_oneof![list, json()]), 0..5)
        .prop_map(|entries| Value::Object(entries.into_iter().collect()))
}

/// The RFC 6901 segment of `key`.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Every node of `value` with its pointer, parents before children.
fn pointers(value: &Value, at: String, out: &mut Vec<(String, Value)>) {
    out.push((at.clone(), value.clone()));
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                pointers(v, format!("{at}/{}", escape(k)), out);
            }
        }
        _ => {}
    }
}

/// One edit of `state`, and the one op it must give.
#[derive(Debug, Clone, Copy)]
enum Edit {
    /// A scalar set to another of the same kind (`null` to a string).
    SetScalar,
    /// A new key on an object.
    AddKey,
    /// A key of an object removed.
    RemoveKey,
    /// An element pushed on an array.
    Push,
    /// An array's last element removed.
    Pop,
}

/// A scalar of the same kind as `scalar` that differs from it (a string for `null`).
fn other_scalar(scalar: &Value) -> Value {
    match scalar {
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => json!(i + 100),
            None => json!(n.as_f64().unwrap_or_default() + 100.5),
        },
        Value::String(s) => json!(format!("{s}, changed")),
        _ => json!("was null"),
    }
}

/// Applies `edit` at the `pick`th node it fits; `None` when no node fits.
fn edit(state: &mut Value, edit: Edit, pick: Index, value: &Value) -> Option<PatchOp> {
    let mut nodes = Vec::new();
    pointers(state, String::new(), &mut nodes);
    let fits: Vec<_> = nodes
        .into_iter()
        .filter(|(_, v)| match edit {
            Edit::SetScalar => !v.is_array() && !v.is_object(),
            Edit::AddKey => v.is_object(),
            Edit::RemoveKey => v.as_object().is_some_and(|m| !m.is_empty()),
            Edit::Push => v.is_array(),
            Edit::Pop => v.as_array().is_some_and(|a| !a.is_empty()),
        })
        .collect();
    if fits.is_empty() {
        return None;
    }
    let (at, _) = &fits[pick.index(fits.len())];
    let node = state.pointer_mut(at)?;
    Some(match edit {
        Edit::SetScalar => {
            let value = other_scalar(node);
            *node = value.clone();
            replace(at, value)
        }
        Edit::AddKey => {
            let key = "new/~key";
            node.as_object_mut()?.insert(key.into(), value.clone());
            add(&format!("{at}/{}", escape(key)), value.clone())
        }
        Edit::RemoveKey => {
            let map = node.as_object_mut()?;
            let key = map.keys().nth(pick.index(map.len()))?.clone();
            map.shift_remove(&key);
            remove(&format!("{at}/{}", escape(&key)))
        }
        Edit::Push => {
            let items = node.as_array_mut()?;
            items.push(value.clone());
            add(&format!("{at}/{}", items.len() - 1), value.clone())
        }
        Edit::Pop => {
            let items = node.as_array_mut()?;
            items.pop();
            remove(&format!("{at}/{}", items.len()))
        }
    })
}

/// `node` with the packed elements `bits` picks unpacked, as the snapshot walk leaves an
/// element that holds a tracked collection.
fn unpack_some(node: &Node, bits: &mut impl Iterator<Item = bool>) -> Node {
    match node {
        Node::Array(items) => Node::Array(items.iter().map(|n| unpack_some(n, bits)).collect()),
        Node::Object(map) => Node::Object(Box::new(
            map.iter()
                .map(|(k, v)| (k.clone(), unpack_some(v, bits)))
                .collect(),
        )),
        Node::Packed(raw) if bits.next().unwrap_or(false) => {
            unpack_some(&Node::from_value(unpack(raw)), bits)
        }
        other => other.clone(),
    }
}

fn applies(prev: &Value, next: &Value, ops: &[PatchOp]) -> Result<(), TestCaseError> {
    let patch: json_patch::Patch =
        serde_json::from_value(serde_json::to_value(ops).unwrap()).unwrap();
    let mut doc = prev.clone();
    json_patch::patch(&mut doc, &patch)
        .map_err(|e| TestCaseError::fail(format!("patch failed: {e}; ops {ops:?}")))?;
    prop_assert_eq!(&doc, next);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever form the trees are in, the tree diff is the `Value` diff, and it applies.
    #[test]
    fn the_tree_diff_is_the_value_diff(
        prev in state(),
        edits in prop::collection::vec(
            prop::collection::vec((any::<u8>(), json()), 1..5),
            0..4,
        ),
        bits in prop::collection::vec(any::<bool>(), 0..16),
    ) {
        let mut next = prev.clone();
        for choices in &edits {
            mutate(&mut next, choices);
        }
        let want = diff(&prev, &next);
        let (p, n) = (Node::from_value(prev.clone()), Node::from_value(next.clone()));
        prop_assert_eq!(&diff_nodes(&p, &n), &want);
        let pretty: Node =
            serde_json::from_str(&serde_json::to_string_pretty(&prev).unwrap()).unwrap();
        prop_assert_eq!(&diff_nodes(&pretty, &n), &want);
        let mut flips = bits.iter().copied().cycle();
        let (pu, nu) = (unpack_some(&p, &mut flips), unpack_some(&n, &mut flips));
        prop_assert_eq!(&diff_nodes(&pu, &n), &want);
        prop_assert_eq!(&diff_nodes(&p, &nu), &want);
        prop_assert_eq!(&diff_nodes(&pu, &nu), &want);
        applies(&prev, &next, &want)?;
        if prev == next {
            prop_assert!(want.is_empty());
        }
    }

    /// One edit anywhere in a state, inside a packed element or not, is exactly one op.
    #[test]
    fn one_edit_is_one_op(
        prev in state(),
        kind in prop::sample::select(vec![
            Edit::SetScalar, Edit::AddKey, Edit::RemoveKey, Edit::Push, Edit::Pop,
        ]),
        pick in any::<Index>(),
        value in json(),
        bits in prop::collection::vec(any::<bool>(), 0..16),
    ) {
        let mut next = prev.clone();
        let Some(op) = edit(&mut next, kind, pick, &value) else {
            return Ok(());
        };
        let want = vec![op];
        let (p, n) = (Node::from_value(prev.clone()), Node::from_value(next.clone()));
        prop_assert_eq!(&diff_nodes(&p, &n), &want);
        let mut flips = bits.iter().copied().cycle();
        prop_assert_eq!(&diff_nodes(&unpack_some(&p, &mut flips), &n), &want);
        prop_assert_eq!(&diff(&prev, &next), &want);
        applies(&prev, &next, &want)?;
    }
}
