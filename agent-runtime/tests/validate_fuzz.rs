//! Robustness of payload validation: arbitrary JSON never panics and gives consistent
//! outcomes; messages serialized from typed values always validate; deeply nested, huge and
//! wrongly typed payloads give errors, never a stack overflow.

#![allow(dead_code)]

use std::sync::Arc;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tea_agent_derive::AgentMsg;
use tea_agent_runtime::cel_eval::PredicateCache;
use tea_agent_runtime::config::DispatchPolicy::{Lenient, Strict};
use tea_agent_runtime::validate::Validator;
use tea_agent_schema::protocol::{IssueCode, ValidationIssue};
use tea_agent_schema::MsgModel;

#[derive(Debug, Clone, JsonSchema, Serialize, Deserialize)]
struct Point {
    x: i32,
    y: i32,
    label: Option<String>,
}

#[derive(Debug, Clone, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Shape {
    Dot,
    Line {
        len: f64,
    },
    Poly {
        #[schemars(length(min = 1))]
        points: Vec<Point>,
    },
}

#[derive(Debug, Clone, JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Low,
    High,
}

#[derive(Debug, Clone, AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Fz {
    Draw {
        shape: Shape,
        #[schemars(range(min = 0, max = 100))]
        opacity: f64,
        level: Level,
        points: Vec<Point>,
        note: Option<String>,
        extra: Value,
    },
    Tag {
        #[schemars(length(min = 1, max = 20), pattern(r"^[a-z]+$"))]
        name: String,
        /// @validates("size(v) <= 3")
        tags: Vec<String>,
        flags: Vec<Option<bool>>,
    },
    Count {
        n: u8,
        big: i64,
    },
    Reset,
}

fn validator() -> Validator {
    let model = MsgModel::build::<Fz>().expect("fixture model");
    Validator::new(&model, Arc::new(PredicateCache::new())).expect("fixture validator")
}

// ---------------------------------------------------------------------------------------------
// Arbitrary JSON

const KEYS: &[&str] = &[
    "type", "shape", "kind", "len", "points", "x", "y", "label", "opacity", "level", "note",
    "extra", "name", "tags", "flags", "n", "big", "zzz",
];
const WORDS: &[&str] = &[
    "draw", "tag", "count", "reset", "dot", "line", "poly", "low", "high", "", "abc", "A B",
];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<String, Value>>(),
                )
            }),
        ]
    })
}

/// A message-like value: usually an object with a known `type` and likely field names.
fn arb_msg() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => arb_json(),
        4 => (
            prop::sample::select(&["draw", "tag", "count", "reset", "nope"][..]),
            prop::collection::vec((prop::sample::select(KEYS), arb_json()), 0..8),
        )
            .prop_map(|(ty, fields)| {
                let mut map: Map<String, Value> = fields
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
                map.insert("type".into(), Value::from(ty));
                Value::Object(map)
            }),
    ]
}

fn without(issues: &[ValidationIssue], codes: &[IssueCode]) -> Vec<ValidationIssue> {
    issues
        .iter()
        .filter(|i| !codes.contains(&i.code))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Typed values

fn arb_point() -> impl Strategy<Value = Point> {
    (any::<i32>(), any::<i32>(), prop::option::of("\\PC{0,6}")).prop_map(|(x, y, label)| Point {
        x,
        y,
        label,
    })
}

fn arb_shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Dot),
        (-1e9f64..1e9).prop_map(|len| Shape::Line { len }),
        prop::collection::vec(arb_point(), 1..4).prop_map(|points| Shape::Poly { points }),
    ]
}

fn arb_fz() -> impl Strategy<Value = Fz> {
    prop_oneof![
        (
            arb_shape(),
            0.0f64..=100.0,
            prop_oneof![Just(Level::Low), Just(Level::High)],
            prop::collection::vec(arb_point(), 0..4),
            prop::option::of("\\PC{0,6}"),
            arb_json(),
        )
            .prop_map(|(shape, opacity, level, points, note, extra)| Fz::Draw {
                shape,
                opacity,
                level,
                points,
                note,
                extra,
            }),
        (
            "[a-z]{1,20}",
            prop::collection::vec("\\PC{0,4}", 0..=3),
            prop::collection::vec(prop::option::of(any::<bool>()), 0..5),
        )
            .prop_map(|(name, tags, flags)| Fz::Tag { name, tags, flags }),
        (any::<u8>(), any::<i64>()).prop_map(|(n, big)| Fz::Count { n, big }),
        Just(Fz::Reset),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_json_is_handled_consistently(msg in arb_msg()) {
        let v = validator();
        let lenient = v.validate(&msg, Lenient);
        let strict = v.validate(&msg, Strict);
        // Deterministic.
        prop_assert_eq!(&lenient, &v.validate(&msg, Lenient));
        // Lenient never warns; strict only warns about untyped fields.
        prop_assert!(lenient.warnings.is_empty());
        prop_assert!(strict.warnings.iter().all(|w| w.code == IssueCode::UntypedField));
        // The policies differ only by extra-key errors (and the predicates those suppress).
        let skip = [IssueCode::UnexpectedField, IssueCode::ValidatesFailed];
        prop_assert_eq!(without(&lenient.errors, &skip), without(&strict.errors, &skip));
        prop_assert!(strict.errors.len() >= lenient.errors.len()
            - lenient.errors.iter().filter(|e| e.code == IssueCode::ValidatesFailed).count());
        // Paths: only the message itself has the empty path.
        for e in lenient.errors.iter().chain(&strict.errors) {
            prop_assert_eq!(e.path.is_empty(), e.code == IssueCode::NotObject && e.message == "msg must be a plain object");
            prop_assert!(!e.message.is_empty());
        }
        // A valid message deserializes unless an unbounded integer overflowed (§2.3).
        if strict.is_ok() {
            let typed = serde_json::from_value::<Fz>(msg.clone());
            if let Err(err) = typed {
                prop_assert!(err.to_string().contains("invalid value") || err.to_string().contains("invalid type: floating point"), "{}", err);
            }
        }
    }

    #[test]
    fn serialized_messages_validate(msg in arb_fz()) {
        let v = validator();
        let json = serde_json::to_value(&msg).unwrap();
        let strict = v.validate(&json, Strict);
        prop_assert!(strict.is_ok(), "{:?} -> {}", json, strict.detail());
        let untyped = usize::from(matches!(msg, Fz::Draw { .. }));
        prop_assert_eq!(strict.warnings.len(), untyped);
        let expected = json!({"ok": true});
        prop_assert_eq!(v.validate(&json, Lenient).to_json(), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Deep and huge values

const DEPTH: usize = 50_000;

fn deep_array(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

fn deep_object(depth: usize) -> Value {
    let mut v = json!({});
    for _ in 0..depth {
        let mut map = Map::new();
        map.insert("kind".into(), v);
        v = Value::Object(map);
    }
    v
}

/// Takes a value apart without recursion (serde_json's own drop recurses).
fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

fn draw(field: &str, value: Value) -> Value {
    let mut msg = json!({
        "type": "draw",
        "shape": {"kind": "dot"},
        "opacity": 1,
        "level": "low",
        "points": [],
        "extra": null
    });
    msg[field] = value;
    msg
}

#[test]
fn deep_values_do_not_overflow() {
    let v = validator();
    let cases: Vec<(Value, Vec<(&str, IssueCode)>)> = vec![
        (deep_array(DEPTH), vec![("", IssueCode::NotObject)]),
        (draw("extra", deep_array(DEPTH)), vec![]),
        (draw("extra", deep_object(DEPTH)), vec![]),
        (
            draw("shape", deep_array(DEPTH)),
            vec![("shape", IssueCode::NotObject)],
        ),
        // The discriminant itself is a deep object: not a string.
        (
            draw("shape", deep_object(DEPTH)),
            vec![("shape.kind", IssueCode::MissingDiscriminant)],
        ),
        (
            draw("level", deep_object(DEPTH)),
            vec![("level", IssueCode::NotInEnum)],
        ),
        (
            draw(
                "points",
                // Not `json!`: it would serialize the values recursively.
                Value::Array(vec![deep_array(DEPTH), deep_object(DEPTH)]),
            ),
            vec![
                ("points[0]", IssueCode::NotObject),
                ("points[1].x", IssueCode::Missing),
                ("points[1].y", IssueCode::Missing),
            ],
        ),
        (
            draw("note", deep_array(DEPTH)),
            vec![("note", IssueCode::WrongType)],
        ),
    ];
    for (msg, expected) in cases {
        for policy in [Lenient, Strict] {
            let out = v.validate(&msg, policy);
            let mut got: Vec<(&str, IssueCode)> = out
                .errors
                .iter()
                .map(|e| (e.path.as_str(), e.code))
                .collect();
            if policy == Strict {
                got.retain(|(_, c)| *c != IssueCode::UnexpectedField);
            }
            assert_eq!(got, expected);
        }
        dismantle(msg);
    }
}

#[test]
fn huge_arrays() {
    let v = validator();
    let n = 100_000;
    let points: Vec<Value> = (0..n).map(|i| json!({"x": i, "y": -i})).collect();
    assert!(v
        .validate(&draw("points", Value::Array(points)), Strict)
        .is_ok());

    // Every element wrong: one error each, in order, and the predicate is skipped.
    let tags: Vec<Value> = (0..n).map(Value::from).collect();
    let msg = json!({"type": "tag", "name": "abc", "tags": tags, "flags": []});
    let out = v.validate(&msg, Lenient);
    assert_eq!(out.errors.len(), n as usize);
    assert_eq!(out.errors[0].path, "tags[0]");
    assert_eq!(out.errors[n as usize - 1].path, format!("tags[{}]", n - 1));
    assert!(out.errors.iter().all(|e| e.code == IssueCode::WrongType));

    // Nullable elements accept null.
    let flags: Vec<Value> = (0..n)
        .map(|i| if i % 2 == 0 { Value::Null } else { json!(true) })
        .collect();
    let msg = json!({"type": "tag", "name": "abc", "tags": [], "flags": flags});
    assert!(v.validate(&msg, Strict).is_ok());

    // A huge object of extra keys under the strict policy.
    let mut msg = json!({"type": "reset"});
    for i in 0..10_000 {
        msg[format!("k{i}")] = json!(i);
    }
    let out = v.validate(&msg, Strict);
    assert_eq!(out.errors.len(), 10_000);
    assert_eq!(
        out.errors[0].message,
        "field 'k0' is not in the schema. Legal fields: (none)."
    );
    assert!(v.validate(&msg, Lenient).is_ok());
}

#[test]
fn constraints_in_a_realistic_model() {
    let v = validator();
    let out = v.validate(
        &json!({"type": "tag", "name": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "tags": ["a", "b", "c", "d"], "flags": [1]}),
        Lenient,
    );
    assert_eq!(
        out.detail(),
        "name: must be at most 20 characters long, got 26; name: must match the pattern ^[a-z]+$; \
         tags: value violates `@validates(\"size(v) <= 3\")`; flags[0]: expected boolean, got number"
    );
    let poly = v.validate(
        &draw("shape", json!({"kind": "poly", "points": []})),
        Lenient,
    );
    assert_eq!(
        poly.detail(),
        "shape(kind=poly).points: must have at least 1 items, got 0"
    );
    let opacity = v.validate(&draw("opacity", json!(100.5)), Lenient);
    assert_eq!(opacity.detail(), "opacity: must be <= 100, got 100.5");
    let count = v.validate(&json!({"type": "count", "n": 2.5, "big": 1e3}), Lenient);
    // `1e3` is a float to serde, so an i64 field refuses it (issue 13: validation matches
    // deserialization).
    assert_eq!(
        count.detail(),
        "n: expected an integer, got 2.5; big: expected an integer written without a fraction, \
         exponent or minus zero (between -9223372036854775808 and 9223372036854775807), got 1000.0"
    );
}
