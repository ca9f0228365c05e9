//! The tree diff against the semantics (§1) and against the `Value` diff.
//!
//! A change inside a packed list element gives that element's own ops, exactly as the `Value`
//! diff gives them: never a `replace` of the whole element, never an op for a field that did
//! not change. The exact ops below are written from §1 by hand; the proptests compare the tree
//! diff with [`diff`] on random pairs (trees built from values, read from pretty text, or with
//! elements unpacked as the snapshot walk leaves them), and check that one edit anywhere in a
//! state, packed or not, gives exactly one op.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

use super::*;
use crate::algo::diff::diff;

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

/// The tree diff of two states, checked to be the `Value` diff of the same states.
fn tree_diff(prev: &Value, next: &Value) -> Vec<PatchOp> {
    let ops = diff_nodes(
        &Node::from_value(prev.clone()),
        &Node::from_value(next.clone()),
    );
    assert_eq!(ops, diff(prev, next), "the tree diff is the Value diff");
    ops
}

fn todos() -> Value {
    json!({
        "todos": [
            {"id": 1, "title": "milk", "done": false, "tags": ["a", "b"], "meta": {"p": 1}},
            {"id": 2, "title": "eggs", "done": false, "tags": [], "meta": {"p": 2}},
            {"id": 3, "title": "tea", "done": true, "tags": ["c"], "meta": {"p": 3}},
        ],
        "count": 3,
    })
}

fn both(prev: Value, next: Value) {
    let want = diff(&prev, &next);
    let got = diff_nodes(&Node::from_value(prev), &Node::from_value(next));
    assert_eq!(got, want);
}

#[test]
fn the_same_ops_as_the_value_diff() {
    both(json!({"a": 1}), json!({"a": 1}));
    both(
        json!({"todos": [{"id": 1, "done": false}, {"id": 2}, 7], "x": {"y": [1, [2]]}}),
        json!({"todos": [{"id": 1, "done": true}, 3], "x": {"y": [1, [3], {"z": 1}]}}),
    );
    both(
        json!({"a": 1, "b": 2, "c": 3}),
        json!({"c": 3, "d": 4, "a": 0}),
    );
    both(json!([1, {"a": 1}]), json!({"a": 1}));
    both(json!({"a": [{"b": 1}]}), json!({"a": [[{"b": 1}]]}));
    both(json!(null), json!([{"k": "v"}]));
}

#[test]
fn list_elements_are_packed_in_these_tests() {
    let node = Node::from_value(todos());
    let Some(Node::Array(items)) = node.field("todos") else {
        panic!("todos is an array node")
    };
    assert!(items.iter().all(|item| item.as_packed().is_some()));
}

#[test]
fn one_field_of_a_packed_element_is_one_replace() {
    let prev = todos();
    let mut next = prev.clone();
    next["todos"][1]["done"] = json!(true);
    assert_eq!(
        tree_diff(&prev, &next),
        vec![replace("/todos/1/done", json!(true))]
    );
    next["todos"][1]["meta"]["p"] = json!(20);
    assert_eq!(
        tree_diff(&prev, &next),
        vec![
            replace("/todos/1/done", json!(true)),
            replace("/todos/1/meta/p", json!(20)),
        ]
    );
}

#[test]
fn several_elements_change_each_alone_in_index_order() {
    let prev = todos();
    let mut next = prev.clone();
    next["todos"][2]["title"] = json!("green tea");
    next["todos"][0]["id"] = json!(10);
    assert_eq!(
        tree_diff(&prev, &next),
        vec![
            replace("/todos/0/id", json!(10)),
            replace("/todos/2/title", json!("green tea")),
        ]
    );
}

#[test]
fn a_list_inside_a_packed_element_grows_and_shrinks_at_its_end() {
    let prev = todos();
    let mut next = prev.clone();
    next["todos"][0]["tags"] = json!(["a", "c", "d"]);
    next["todos"][1]["tags"] = json!(["x"]);
    assert_eq!(
        tree_diff(&prev, &next),
        vec![
            replace("/todos/0/tags/1", json!("c")),
            add("/todos/0/tags/2", json!("d")),
            add("/todos/1/tags/0", json!("x")),
        ]
    );
    assert_eq!(
        tree_diff(&next, &prev),
        vec![
            replace("/todos/0/tags/1", json!("b")),
            remove("/todos/0/tags/2"),
            remove("/todos/1/tags/0"),
        ]
    );
}

#[test]
fn keys_of_a_packed_element_are_removed_then_added_or_walked() {
    let prev = json!({"l": [{"id": 1, "a": 1, "b": {"x": [1]}}]});
    let next = json!({"l": [{"id": 1, "b": {"x": [1, 2]}, "c": 3}]});
    assert_eq!(
        tree_diff(&prev, &next),
        vec![
            remove("/l/0/a"),
            add("/l/0/b/x/1", json!(2)),
            add("/l/0/c", json!(3))
        ]
    );
    // Key order alone is no change; a reordered element with one change is that change.
    let reordered = json!({"l": [{"b": {"x": [1]}, "a": 2, "id": 1}]});
    assert_eq!(
        tree_diff(&prev, &reordered),
        vec![replace("/l/0/a", json!(2))]
    );
}

#[test]
fn arrays_packed_in_arrays_are_walked_to_the_changed_scalar() {
    let prev = json!({"m": [[1, [2, 3]], [4], {"k": [[5]]}]});
    let next = json!({"m": [[1, [2, 30]], [4], {"k": [[5, 6]]}]});
    assert_eq!(
        tree_diff(&prev, &next),
        vec![replace("/m/0/1/1", json!(30)), add("/m/2/k/0/1", json!(6))]
    );
}

#[test]
fn keys_inside_a_packed_element_are_escaped() {
    let prev = json!({"l": [{"a/b": 1, "~": 2, "": 3, "same": 4}]});
    let next = json!({"l": [{"a/b": 10, "~": 20, "": 30, "same": 4}]});
    assert_eq!(
        tree_diff(&prev, &next),
        vec![
            replace("/l/0/a~1b", json!(10)),
            replace("/l/0/~0", json!(20)),
            replace("/l/0/", json!(30)),
        ]
    );
}

#[test]
fn a_packed_element_against_another_kind_is_replaced_whole() {
    assert_eq!(
        tree_diff(&json!({"l": [{"a": 1}]}), &json!({"l": [5]})),
        vec![replace("/l/0", json!(5))]
    );
    assert_eq!(
        tree_diff(&json!({"l": [null]}), &json!({"l": [{"a": 1}]})),
        vec![replace("/l/0", json!({"a": 1}))]
    );
    assert_eq!(
        tree_diff(&json!({"l": [{"a": [1]}]}), &json!({"l": [[{"a": 1}]]})),
        vec![replace("/l/0", json!([{"a": 1}]))]
    );
}

#[test]
fn elements_added_and_removed_carry_their_values() {
    let prev = todos();
    let mut next = prev.clone();
    let item = json!({"id": 4, "title": "jam", "done": false, "tags": ["z"], "meta": {}});
    next["todos"].as_array_mut().unwrap().push(item.clone());
    next["todos"]
        .as_array_mut()
        .unwrap()
        .push(json!([1, {"n": 2}]));
    assert_eq!(
        tree_diff(&prev, &next),
        vec![add("/todos/3", item), add("/todos/4", json!([1, {"n": 2}]))]
    );
    assert_eq!(
        tree_diff(&next, &prev),
        vec![remove("/todos/4"), remove("/todos/3")]
    );
    // A new field of the root (an unpacked object) carries its lists' elements too.
    assert_eq!(
        tree_diff(&json!({}), &json!({"l": [{"a": 1}, [2]]})),
        vec![add("/l", json!([{"a": 1}, [2]]))]
    );
}

#[test]
fn fields_of_unpacked_objects_are_matched_by_key() {
    // One object's keys a prefix of the other's: the same length is not the same keys.
    assert_eq!(
        tree_diff(&json!({"a": 1}), &json!({"a": 1, "b": {"c": [1]}})),
        vec![add("/b", json!({"c": [1]}))]
    );
    assert_eq!(
        tree_diff(&json!({"s": {"a": 1, "b": 2}}), &json!({"s": {"a": 1}})),
        vec![remove("/s/b")]
    );
    // Same length, other keys.
    assert_eq!(
        tree_diff(&json!({"a": 1, "b": 2}), &json!({"a": 1, "c": 2})),
        vec![remove("/b"), add("/c", json!(2))]
    );
    // Reordered keys are found by name: only the changed one is sent.
    assert_eq!(
        tree_diff(
            &json!({"a": 1, "b": 2, "l": [{"x": 1}]}),
            &json!({"l": [{"x": 1}], "b": 3, "a": 1})
        ),
        vec![replace("/b", json!(3))]
    );
}

#[test]
fn equal_trees_give_no_ops() {
    let state = todos();
    assert_eq!(tree_diff(&state, &state), vec![]);
    let scalars =
        json!({"n": null, "b": true, "i": 7, "f": 0.5, "s": "x", "l": [null, false, 1, 1.5, "y"]});
    assert_eq!(tree_diff(&scalars, &scalars), vec![]);
}

#[test]
fn packed_text_with_other_whitespace_is_the_same_element() {
    let prev = todos();
    let pretty: Node = serde_json::from_str(&serde_json::to_string_pretty(&prev).unwrap()).unwrap();
    let compact = Node::from_value(prev.clone());
    let (Some(Node::Array(a)), Some(Node::Array(b))) =
        (pretty.field("todos"), compact.field("todos"))
    else {
        panic!("todos is an array node on both sides")
    };
    assert_ne!(
        a[0].as_packed().unwrap().get(),
        b[0].as_packed().unwrap().get()
    );
    assert_eq!(diff_nodes(&pretty, &compact), vec![]);
    let mut next = prev.clone();
    next["todos"][0]["tags"][0] = json!("A");
    assert_eq!(
        diff_nodes(&pretty, &Node::from_value(next)),
        vec![replace("/todos/0/tags/0", json!("A"))]
    );
}

#[test]
fn an_element_unpacked_on_one_side_is_compared_by_value() {
    let element = json!({"id": 1, "kids": [{"n": 1}, {"n": 2}]});
    let packed = Node::Array(vec![Node::element(&element)]);
    let unpacked = Node::Array(vec![Node::from_value(element.clone())]);
    assert!(matches!(&packed, Node::Array(items) if items[0].as_packed().is_some()));
    assert_eq!(diff_nodes(&packed, &unpacked), vec![]);
    assert_eq!(diff_nodes(&unpacked, &packed), vec![]);
    let mut changed = element.clone();
    changed["kids"][1]["n"] = json!(3);
    let changed_unpacked = Node::Array(vec![Node::from_value(changed.clone())]);
    let changed_packed = Node::Array(vec![Node::element(&changed)]);
    let want = vec![replace("/0/kids/1/n", json!(3))];
    assert_eq!(diff_nodes(&packed, &changed_unpacked), want);
    assert_eq!(diff_nodes(&unpacked, &changed_packed), want);
    assert_eq!(diff_nodes(&unpacked, &changed_unpacked), want);
}

/// `scalar_equal` is the walk's fast path: it must say true for two equal scalars (and two
/// packed elements of the same text), false for anything else. A false for equal scalars
/// gives the same ops (the leaves compare again) but walks every unchanged field of a
/// changed record through the path buffer; a true for different ones loses changes.
#[test]
fn scalar_equal_is_true_exactly_for_equal_scalars_and_texts() {
    let packed = |v: Value| Node::element(&v);
    let equal = [
        (Node::Null, Node::Null),
        (Node::Bool(true), Node::Bool(true)),
        (Node::Number(7.into()), Node::Number(7.into())),
        (Node::String("x".into()), Node::String("x".into())),
        (packed(json!({"a": 1})), packed(json!({"a": 1}))),
    ];
    for (a, b) in &equal {
        assert!(
            Node::scalar_equal(a, b),
            "{a:?} and {b:?} are equal scalars"
        );
    }
    let different = [
        (Node::Bool(true), Node::Bool(false)),
        (Node::Number(7.into()), Node::Number(8.into())),
        (Node::String("x".into()), Node::String("y".into())),
        (packed(json!({"a": 1})), packed(json!({"a": 2}))),
        (Node::Null, Node::Bool(false)),
        (Node::Number(0.into()), Node::String("0".into())),
        (Node::Array(vec![]), Node::Array(vec![])),
        (Node::from_value(json!({})), Node::from_value(json!({}))),
        (packed(json!([1])), Node::from_value(json!([1]))),
    ];
    for (a, b) in &different {
        assert!(
            !Node::scalar_equal(a, b),
            "{a:?} and {b:?} are not equal scalars"
        );
    }
}

/// Keys that share often and hit every escape.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "id", "", "/", "~", "a/b", "c~d", "0"])
        .prop_map(str::to_string)
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(Value::from),
        prop::sample::select(vec![0.5f64, 1.0, -2.25]).prop_map(Value::from),
        prop::sample::select(vec!["", "x", "y/z"]).prop_map(Value::from),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

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
    /// A scalar set to a value the generators never make.
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
            let value = json!("a value the generators never make");
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

/// Rewrites `value` at a few pseudo-random places, so the pair shares most of its shape.
fn mutate(value: &mut Value, choices: &[(u8, Value)]) {
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
