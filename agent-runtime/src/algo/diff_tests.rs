//! Tests of the positional JSON Patch diff (semantics §1): exact ops, RFC 6901 escaping, the
//! property tests against a patch applier, and the random-state helpers the tree diff's property
//! tests share (`tree/diff_props.rs`).

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
