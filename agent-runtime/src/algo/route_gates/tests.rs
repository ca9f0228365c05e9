//! The gate book against full evaluation: random todo lists changed by random edits, each
//! commit's patch the positional diff; every gate's result equals the interpreter's on the
//! whole state.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::shape::{self, Fold, Reads};
use super::{GateBook, GateSet, GateValues, Verdict};
use crate::algo::cel_eval::PredicateCache;
use crate::algo::diff::diff;
use crate::algo::tree::Node;

/// Folds (recognised) and other gates (kept by their read chains), over values that make
/// the predicate true, false, fail or return a non-boolean.
const GATES: &[&str] = &[
    "state.todos.exists(t, t.done)",
    "state.todos.exists(t, !t.done)",
    "!state.todos.exists(t, t.done)",
    "state.todos.all(t, t.done)",
    "!state.todos.all(t, t.done)",
    "state.todos.exists_one(t, t.done)",
    "!state.todos.existsOne(t, t.done)",
    "state.todos.exists(t, t.done && t.n > 2)",
    "state.todos.all(t, t.n)",
    "state.box.items.exists(i, i > 1)",
    "state.box.items.all(state, state < 3)",
    "state.filter == 'all'",
    "size(state.todos) > 3",
    "has(state.box.items)",
    "size(state) > 2",
    "state.todos.exists(t, t.done) && state.filter == 'done'",
    "state.todos.exists(t, state.filter == 'all')",
    "state.todos[0].done",
    "state.nope ==",
];

fn analysed(src: &str) -> (Option<shape::Shape>, Reads) {
    let cache = PredicateCache::new();
    let compiled = cache.program(src).unwrap();
    let expr = compiled.program().expression();
    (shape::shape(expr), shape::reads(expr))
}

#[test]
fn shapes_are_recognised() {
    let fold = |src| analysed(src).0.map(|s| (s.fold, s.negated, s.path));
    let todos = vec!["todos".to_string()];
    assert_eq!(
        fold("state.todos.exists(t, t.done)"),
        Some((Fold::Exists, false, todos.clone()))
    );
    assert_eq!(
        fold("!state.todos.all(t, t.done)"),
        Some((Fold::All, true, todos.clone()))
    );
    assert_eq!(
        fold("state.todos.exists_one(t, t.n > 1)"),
        Some((Fold::ExistsOne, false, todos))
    );
    assert_eq!(
        fold("state.a.b.exists(x, x == 'y')").unwrap().2,
        vec!["a".to_string(), "b".to_string()]
    );
    // Not folds over a list of the state with a predicate of the element alone.
    for src in [
        "state.todos.exists(t, state.filter == 'all')",
        "state.todos.map(t, t.done).size() > 0",
        "state.todos.filter(t, t.done).size() > 0",
        "[1, 2].exists(x, x > 1)",
        "state.exists(k, k == 'a')",
        "state.todos.exists(t, t.done) && true",
        "other.todos.exists(t, t.done)",
    ] {
        assert_eq!(fold(src), None, "{src}");
    }
}

#[test]
fn read_chains() {
    let chains = |src| match analysed(src).1 {
        Reads::Whole => None,
        Reads::Chains(c) => Some(c),
    };
    let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        chains("state.a.b == 1 && has(state.c.d)"),
        Some(vec![path(&["a", "b"]), path(&["c", "d"])])
    );
    assert_eq!(chains("state.todos[0].done"), Some(vec![path(&["todos"])]));
    assert_eq!(chains("size(state) > 1"), None);
    assert_eq!(chains("state['a'] == 1"), None);
    assert_eq!(chains("[1].exists(state, state > 0)"), Some(vec![]));
}

/// One edit of the state.
#[derive(Debug, Clone)]
enum Edit {
    Toggle(usize),
    SetN(usize, i64),
    Push(Value),
    Pop,
    Remove(usize),
    Insert(usize, Value),
    Filter(bool),
    Items(Value),
    Todos(Value),
    /// The book forgets its tables (a reload from the store).
    Forget,
}

fn todo() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            4 => any::<bool>().prop_map(Value::Bool),
            1 => Just(json!(1)),
            1 => Just(Value::Null),
        ],
        0i64..5,
        any::<bool>(),
    )
        .prop_map(|(done, n, keep)| {
            if keep {
                json!({"done": done, "n": n})
            } else {
                json!({"n": n})
            }
        })
}

fn items() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(0i64..4, 0..5).prop_map(|v| json!(v)),
        1 => Just(json!("text")),
        1 => Just(json!({"k": 1})),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        6 => (0usize..10).prop_map(Edit::Toggle),
        3 => (0usize..10, 0i64..5).prop_map(|(i, n)| Edit::SetN(i, n)),
        4 => todo().prop_map(Edit::Push),
        2 => Just(Edit::Pop),
        2 => (0usize..10).prop_map(Edit::Remove),
        2 => (0usize..10, todo()).prop_map(|(i, t)| Edit::Insert(i, t)),
        1 => any::<bool>().prop_map(Edit::Filter),
        2 => items().prop_map(Edit::Items),
        1 => prop_oneof![
            prop::collection::vec(todo(), 0..6).prop_map(|v| json!(v)),
            Just(json!({"0": {"done": true}})),
            Just(Value::Null),
        ]
        .prop_map(Edit::Todos),
        1 => Just(Edit::Forget),
    ]
}

/// Applies `edit` to `state`; false for [`Edit::Forget`].
fn apply(state: &mut Value, edit: &Edit) -> bool {
    let todos = state["todos"].as_array_mut();
    match (edit, todos) {
        (Edit::Toggle(i), Some(t)) if !t.is_empty() => {
            let i = i % t.len();
            let done = t[i]["done"].as_bool().unwrap_or(false);
            t[i]["done"] = json!(!done);
        }
        (Edit::SetN(i, n), Some(t)) if !t.is_empty() => {
            let i = i % t.len();
            t[i]["n"] = json!(n);
        }
        (Edit::Push(v), Some(t)) => t.push(v.clone()),
        (Edit::Pop, Some(t)) => {
            t.pop();
        }
        (Edit::Remove(i), Some(t)) if !t.is_empty() => {
            let i = i % t.len();
            t.remove(i);
        }
        (Edit::Insert(i, v), Some(t)) => {
            let i = i % (t.len() + 1);
            t.insert(i, v.clone());
        }
        (Edit::Filter(all), _) => state["filter"] = json!(if *all { "all" } else { "done" }),
        (Edit::Items(v), _) => state["box"]["items"] = v.clone(),
        (Edit::Todos(v), _) => state["todos"] = v.clone(),
        (Edit::Forget, _) => return false,
        _ => {}
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn book_agrees_with_full_evaluation(
        start in prop::collection::vec(todo(), 0..6),
        edits in prop::collection::vec(edit(), 1..24),
    ) {
        let cache = PredicateCache::new();
        let set = Arc::new(GateSet::new(GATES.iter().copied(), &cache));
        let mut book = GateBook::new(set.clone());
        let mut state = json!({"todos": start, "filter": "all", "box": {"items": [1]}});
        let mut values = GateValues::unknown(&set);
        for edit in &edits {
            let before = state.clone();
            if !apply(&mut state, edit) {
                book.invalidate();
                continue;
            }
            let patch = diff(&before, &state);
            let tree = Node::from_value(state.clone());
            values = book.advance(&values, &tree, &patch);
            for (id, src) in GATES.iter().enumerate() {
                let folded = set.gates[id].shape.is_some() && src.contains("state.todos.");
                if folded && state["todos"].is_array() {
                    prop_assert!(values.known(id).is_some(), "{src} not kept on {state}");
                }
                let full = cache.evaluate_gate(src, &state);
                prop_assert_eq!(values.passes(&set, id, &tree), full, "{} on {}", src, state);
                // A failure is the same failure whether the book folded it or not.
                prop_assert_eq!(
                    values.verdict(&set, id, &tree) == Verdict::Failed,
                    set.evaluate(id, &tree) == Verdict::Failed,
                    "{} on {}", src, state
                );
            }
        }
    }
}

#[test]
fn a_gate_that_cannot_be_evaluated_fails_not_closes() {
    let cache = PredicateCache::new();
    let sources = [
        "state.todos.exists(t, t.done)",
        "state.count > 1",
        "state.count >",
    ];
    let set = GateSet::new(sources, &cache);
    // The state does not match the schema the gates were checked against.
    let tree = Node::from_value(json!({"todos": [{"title": "x"}], "count": "many"}));
    let values = GateValues::unknown(&set);
    assert_eq!(values.verdict(&set, 0, &tree), Verdict::Failed);
    assert_eq!(values.verdict(&set, 1, &tree), Verdict::Failed);
    assert_eq!(values.verdict(&set, 2, &tree), Verdict::Failed);
    let tree = Node::from_value(json!({"todos": [{"done": false}], "count": 0}));
    let values = GateValues::unknown(&set);
    assert_eq!(values.verdict(&set, 0, &tree), Verdict::Closed);
    assert_eq!(values.verdict(&set, 1, &tree), Verdict::Closed);
    // Logged once per gate and session: the flag stays set across the session's snapshots.
    let book = GateBook::new(Arc::new(GateSet::new(sources, &cache)));
    let first = book.unknown();
    let tree = Node::from_value(json!({"count": "many"}));
    assert_eq!(
        first.verdict(book.set_for_tests(), 1, &tree),
        Verdict::Failed
    );
    assert!(book.unknown().logged[1].load(std::sync::atomic::Ordering::Relaxed));
}

#[test]
fn seen_outcomes_are_known_by_text_and_bounded() {
    use super::table::{Outcome, Seen};
    let mut seen = Seen::default();
    let (a, b) = (seen.key(r#"{"done":true}"#), seen.key(r#"{"done":false}"#));
    assert_eq!(a, seen.key(r#"{"done":true}"#));
    assert_ne!(a, b);
    seen.put(a, Outcome::True, 1);
    assert_eq!(seen.get(a), Some(Outcome::True));
    assert_eq!(seen.get(b), None);
    // Past its bound it starts over.
    for n in 0..1000u32 {
        seen.put(seen.key(&n.to_string()), Outcome::False, 1);
    }
    assert_eq!(seen.get(a), None);
}

#[test]
fn a_fold_reads_of_its_element_only_what_its_predicate_reads() {
    let item = |src| analysed(src).0.map(|s| s.item);
    let chains = |c: &[&[&str]]| {
        Some(Reads::Chains(
            c.iter()
                .map(|c| c.iter().map(|s| s.to_string()).collect())
                .collect(),
        ))
    };
    assert_eq!(
        item("state.todos.exists(t, t.done && t.n > 2)"),
        chains(&[&["done"], &["n"]])
    );
    assert_eq!(item("state.box.items.exists(i, i > 1)"), Some(Reads::Whole));
    assert_eq!(
        item("state.todos.all(t, t.d.e || [1].exists(t, t > 0))"),
        chains(&[&["d", "e"]])
    );
    let read = |text: &str, c: &[&[&str]]| super::eval::picked(text, &chains(c).unwrap());
    let text = r#"{"a":1,"b":{"c":[2],"d":3},"k\"ey":4}"#;
    assert_eq!(read(text, &[&["b", "c"]]), json!({"b": {"c": [2]}}));
    assert_eq!(
        read(text, &[&["k\"ey"], &["a"]]),
        json!({"k\"ey": 4, "a": 1})
    );
    assert_eq!(read(text, &[&["z"]]), json!({}));
    assert_eq!(read("[1,2]", &[&["a"]]), json!([1, 2]));
    assert_eq!(read(r#"{"b":5}"#, &[&["b", "c"]]), json!({"b": 5}));
}
