//! The incremental serializer against the full path, on random states and random sequences
//! of states: the patch is exactly `diff(full_before, full_after)`, applying it gives the
//! full serialization, the walked tree serializes to the same bytes, and no `@redact`ed
//! field shows anywhere.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use tea_agent_schema::describe::state_schema;
use tea_agent_schema::redact::RedactPlan;

use super::olds::Olds;
use super::walk::{build, walk, Ctx};
use super::{apply_patch, Snapshots};
use crate::algo::diff::diff;
use crate::algo::tree::Node;

/// Every redacted value holds this marker, and nothing else does.
const SECRET: &str = "SECRET";

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct State {
    n: i64,
    f: f64,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    opt: Option<u8>,
    items: Vec<Item>,
    by_name: BTreeMap<String, Item>,
    flags: HashMap<u8, bool>,
    choice: Choice,
    tagged: Tagged,
    /// The API key.
    /// @redact
    api_key: String,
    pair: (u8, String),
    #[serde(skip_serializing_if = "Option::is_none")]
    last: Option<Box<Item>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Item {
    id: u32,
    done: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// @redact
    token: String,
    kids: Vec<Item>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
enum Choice {
    A,
    B(i32),
    C { x: u8, y: Option<String> },
    D(u8, u8),
    E(Item),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind")]
enum Tagged {
    P {
        a: u8,
    },
    Q {
        b: String,
        a: u8,
    },
    R {
        /// @redact
        hidden: String,
    },
}

fn small_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("a/b~c".to_owned()),
    ]
}

fn item(depth: u32) -> BoxedStrategy<Item> {
    let kids = if depth == 0 {
        Just(Vec::new()).boxed()
    } else {
        prop::collection::vec(item(depth - 1), 0..3).boxed()
    };
    (
        0u32..3,
        any::<bool>(),
        prop::option::of(small_string()),
        kids,
    )
        .prop_map(|(id, done, note, kids)| Item {
            id,
            done,
            note,
            token: format!("{SECRET}-{id}"),
            kids,
        })
        .boxed()
}

fn choice() -> impl Strategy<Value = Choice> {
    prop_oneof![
        Just(Choice::A),
        (0i32..3).prop_map(Choice::B),
        (0u8..3, prop::option::of(small_string())).prop_map(|(x, y)| Choice::C { x, y }),
        (0u8..2, 0u8..2).prop_map(|(a, b)| Choice::D(a, b)),
        item(1).prop_map(Choice::E),
    ]
}

fn tagged() -> impl Strategy<Value = Tagged> {
    prop_oneof![
        (0u8..3).prop_map(|a| Tagged::P { a }),
        (small_string(), 0u8..3).prop_map(|(b, a)| Tagged::Q { b, a }),
        Just(Tagged::R {
            hidden: SECRET.into()
        }),
    ]
}

fn state() -> impl Strategy<Value = State> {
    (
        (
            -2i64..3,
            prop_oneof![Just(0.0), Just(1.5), Just(f64::NAN), Just(1.0)],
            small_string(),
            prop::option::of(0u8..3),
            prop::collection::vec(item(2), 0..5),
        ),
        (
            prop::collection::btree_map(small_string(), item(1), 0..4),
            prop::collection::hash_map(0u8..6, any::<bool>(), 0..5),
            choice(),
            tagged(),
            (0u8..2, small_string()),
            prop::option::of(item(1)),
        ),
    )
        .prop_map(
            |((n, f, text, opt, items), (by_name, flags, choice, tagged, pair, last))| State {
                n,
                f,
                text,
                opt,
                items,
                by_name,
                flags,
                choice,
                tagged,
                api_key: SECRET.into(),
                pair,
                last: last.map(Box::new),
            },
        )
}

fn plan() -> RedactPlan {
    RedactPlan::from_schema(&state_schema::<State>()).expect("the test schema's tags parse")
}

fn no_secret(what: &str, text: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        !text.contains(SECRET),
        "{what} leaks a redacted field: {text}"
    );
    Ok(())
}

/// One step of the walk from `prev` (a full serialization) to `next`, checked against the
/// full path.
fn check_step(plan: &RedactPlan, tree: &mut Node, next: &State) -> Result<(), TestCaseError> {
    let before = tree.to_value();
    let expected = build(next, plan.root()).unwrap();
    let mut ctx = Ctx {
        olds: Some(Olds::default()),
        ..Ctx::default()
    };
    walk(next, tree, plan.root(), &mut ctx).unwrap();
    prop_assert_eq!(&ctx.ops, &diff(&before, &expected));
    // The inverse read from the values the walk overwrote takes the new tree back.
    let inverse = ctx.olds.as_ref().unwrap().inverse(&ctx.ops).unwrap();
    let mut undone = tree.clone();
    apply_patch(&mut undone, &inverse).unwrap();
    prop_assert_eq!(undone.to_value(), before.clone());
    // Same bytes: same values and the same key order.
    prop_assert_eq!(
        serde_json::to_string(tree).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    // The walked tree is the tree of the new value, packed elements included.
    prop_assert_eq!(&*tree, &Node::from_value(expected.clone()));
    let mut patched = Node::from_value(before);
    apply_patch(&mut patched, &ctx.ops).unwrap();
    prop_assert_eq!(patched.to_value(), expected);
    no_secret("the tree", &serde_json::to_string(tree).unwrap())?;
    no_secret("the patch", &serde_json::to_string(&ctx.ops).unwrap())?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_walk_is_the_diff_of_the_full_serializations(seq in prop::collection::vec(state(), 2..6)) {
        let plan = plan();
        let mut tree = Node::from_value(build(&seq[0], plan.root()).unwrap());
        for next in &seq[1..] {
            check_step(&plan, &mut tree, next)?;
        }
    }

    #[test]
    fn small_updates_walk_like_the_diff(
        first in state(),
        edits in prop::collection::vec((0usize..6, any::<u8>()), 1..12),
    ) {
        let plan = plan();
        let mut tree = Node::from_value(build(&first, plan.root()).unwrap());
        let mut s = first;
        for (what, k) in edits {
            match what {
                0 => s.n += 1,
                1 if !s.items.is_empty() => {
                    let i = usize::from(k) % s.items.len();
                    s.items[i].done = !s.items[i].done;
                }
                2 => s.items.push(Item { id: u32::from(k), done: false, note: None, token: SECRET.into(), kids: vec![] }),
                3 => { s.items.pop(); }
                4 => s.opt = if s.opt.is_some() { None } else { Some(k) },
                _ => { s.flags.insert(k % 8, k % 2 == 0); }
            }
            check_step(&plan, &mut tree, &s)?;
        }
    }

    /// The session's left-right trees: whatever readers hold, every published snapshot is the
    /// full serialization and its patch the diff from the one before.
    #[test]
    fn snapshots_publish_the_full_serialization(
        seq in prop::collection::vec((state(), any::<bool>()), 2..8),
    ) {
        let plan = Arc::new(plan());
        let mut snaps = Snapshots::new(plan.clone(), false, Arc::default());
        let mut current = Arc::new(Node::from_value(build(&seq[0].0, plan.root()).unwrap()));
        let mut held = Vec::new();
        for (next, hold) in &seq[1..] {
            let expected = build(next, plan.root()).unwrap();
            let n = snaps.next_of(next, &current, &|_| {}).unwrap();
            prop_assert_eq!(&n.patch.to_vec(), &diff(&current.to_value(), &expected));
            prop_assert_eq!(&*n.state, &Node::from_value(expected.clone()));
            prop_assert_eq!(
                serde_json::to_string(&*n.state).unwrap(),
                serde_json::to_string(&expected).unwrap()
            );
            if *hold {
                // A reader keeps the old snapshot (it is the spare at the next commit).
                held.push(current.clone());
            }
            current = n.state;
        }
        for h in held {
            no_secret("a held snapshot", &serde_json::to_string(&*h).unwrap())?;
        }
    }
}

#[test]
fn the_slow_path_runs_the_hook_and_diffs() {
    let plan = Arc::new(RedactPlan::default());
    let mut snaps = Snapshots::new(plan, true, Arc::default());
    let current = Arc::new(Node::from_value(json!({"a": 1, "b": "x"})));
    let hook = |v: &mut Value| {
        v["b"] = json!("***");
    };
    let state = json!({"a": 2, "b": "y"});
    let n = snaps.next_of(&state, &current, &hook).unwrap();
    assert_eq!(n.state.to_value(), json!({"a": 2, "b": "***"}));
    assert_eq!(
        n.patch.to_vec(),
        diff(&current.to_value(), &n.state.to_value())
    );
}

#[test]
fn an_unchanged_state_publishes_the_same_tree() {
    let plan = Arc::new(RedactPlan::default());
    let mut snaps = Snapshots::new(plan, false, Arc::default());
    let current = Arc::new(Node::from_value(json!({"a": [1, 2]})));
    let n = snaps
        .next_of(&json!({"a": [1, 2]}), &current, &|_| {})
        .unwrap();
    assert!(Arc::ptr_eq(&n.state, &current));
    assert!(n.patch.is_empty());
}
