//! The tree diff against the semantics (§1) and against the `Value` diff.
//!
//! A change inside a packed list element gives that element's own ops, exactly as the `Value`
//! diff gives them: never a `replace` of the whole element, never an op for a field that did
//! not change. The exact ops below are written from §1 by hand; `diff_props.rs` checks the
//! same on random states.

use serde_json::{json, Value};

use super::*;
use crate::algo::diff::diff;

pub(super) fn add(path: &str, value: Value) -> PatchOp {
    PatchOp::Add {
        path: path.into(),
        value,
    }
}

pub(super) fn remove(path: &str) -> PatchOp {
    PatchOp::Remove { path: path.into() }
}

pub(super) fn replace(path: &str, value: Value) -> PatchOp {
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
fn scalars_of_unpacked_nodes_are_compared_where_they_stand() {
    // Fields of the state's own objects and scalar elements of its lists are nodes, not
    // packed text: each changed one is one replace, each unchanged one nothing.
    let prev = json!({
        "flag": true, "name": "a", "n": 1, "x": 0.5, "none": null,
        "l": [true, "x", 2, null, 2.5],
    });
    let next = json!({
        "flag": false, "name": "b", "n": 2, "x": 1.5, "none": null,
        "l": [false, "y", 3, null, 2.5],
    });
    assert_eq!(
        tree_diff(&prev, &next),
        vec![
            replace("/flag", json!(false)),
            replace("/name", json!("b")),
            replace("/n", json!(2)),
            replace("/x", json!(1.5)),
            replace("/l/0", json!(false)),
            replace("/l/1", json!("y")),
            replace("/l/2", json!(3)),
        ]
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
