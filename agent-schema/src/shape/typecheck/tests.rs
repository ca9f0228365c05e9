//! The checker on its own: a table of valid and invalid expressions over a realistic state
//! (nested lists, maps, enums, options, a tagged union, a dynamic field).

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{check_gate, Report};
use crate::describe::state_schema;

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
enum Column {
    Todo,
    Doing,
    Done,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct User {
    name: String,
    email: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Card {
    id: u32,
    title: String,
    column: Column,
    tags: Vec<String>,
    estimate: Option<f64>,
    assignee: Option<User>,
    done: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[allow(dead_code)]
enum Filter {
    All,
    ByTag { tag: String },
    ByColumn { column: Column },
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Board {
    cards: Vec<Card>,
    columns: BTreeMap<String, Vec<u32>>,
    limits: HashMap<String, u32>,
    selected: Option<u32>,
    focus: Option<Card>,
    filter: Filter,
    owner: User,
    extra: Value,
    count: i64,
    ratio: f64,
    name: String,
    archived: bool,
    history: Vec<Vec<String>>,
    members: Vec<User>,
}

fn report(source: &str) -> Report {
    check_gate(source, &state_schema::<Board>())
}

const VALID: [&str; 48] = [
    "state.archived",
    "!state.archived",
    "state.count > 0",
    "state.count >= 1 && state.count < 10",
    "state.ratio > 0.5",
    "state.ratio > 1",
    "state.count == 3",
    "state.name == 'board'",
    "state.name != ''",
    "size(state.name) > 0",
    "state.name.size() > 0",
    "state.name.startsWith('b')",
    "state.name.contains('a') || state.name.endsWith('z')",
    "state.name.matches('^[a-z]+$')",
    "size(state.cards) > 0",
    "state.cards.size() < 100",
    "state.cards.exists(c, c.column == 'doing')",
    "state.cards.all(c, c.done)",
    "state.cards.exists_one(c, c.id == 1)",
    "state.cards.filter(c, c.column == 'done').size() > 2",
    "state.cards.map(c, c.id).exists(i, i > 3)",
    "state.cards.exists(c, 'urgent' in c.tags)",
    "state.cards.exists(c, c.tags.exists(t, t.startsWith('p')))",
    "state.cards.exists(c, c.estimate != null && c.estimate > 2.0)",
    "state.cards.exists(c, has(c.assignee) && c.assignee.name == 'ann')",
    "state.cards.exists(c, c.assignee != null && c.assignee.name == 'ann')",
    "state.cards[0].title == 'x'",
    "state.cards[0].column in ['todo', 'doing']",
    "'a' in state.columns",
    "state.columns.exists(k, size(state.columns[k]) > 0)",
    "state.columns['todo'].exists(id, id == 2)",
    "state.limits['doing'] > 3",
    "state.limits.all(k, state.limits[k] < 10)",
    "state.selected != null",
    "state.selected == 2",
    "has(state.focus) && state.focus.title == 'x'",
    "state.focus != null && state.focus.column == 'todo'",
    "state.filter.kind == 'byTag'",
    "state.filter.kind == 'byTag' && state.filter.tag == 'x'",
    "state.owner.name == 'ann'",
    "state.owner.email == 'a@b.c'",
    "state.extra.anything.goes == 3",
    "state.extra['x'] > 2",
    "state.history.exists(h, h.exists(s, s == 'x'))",
    "state.members.map(m, m.name).exists(n, n == 'ann')",
    "state.count + 1 > 2 && state.ratio * 2.0 < 1.0",
    "int(state.ratio) == state.count",
    "type(state.count) == int",
];

const INVALID: [(&str, &str); 44] = [
    (
        "state.cards.exists(c, c.colum == 'doing')",
        "did you mean `column`?",
    ),
    (
        "state.cards.exists(c, c.column == 'doin')",
        "did you mean 'doing'?",
    ),
    (
        "state.cards.exists(c, c.column == 'archived')",
        "not one of its values",
    ),
    ("state.cardz.size() > 0", "did you mean `cards`?"),
    ("state.cards.length > 0", "use size(state.cards)"),
    ("state.name.length > 0", "use size(state.name)"),
    ("state.count.value > 0", "`state.count` is a number"),
    ("state.archived.x", "`state.archived` is a boolean"),
    (
        "state.count == 'three'",
        "compares `state.count` (a number) with `'three'`",
    ),
    ("state.name == 3", "compares"),
    ("state.archived == 'yes'", "compares"),
    ("state.name > 3", "orders"),
    ("state.cards > 3", "orders"),
    ("size(state.count) > 0", "takes size() of `state.count`"),
    ("state.count.size() > 0", "takes size() of"),
    ("size(state.archived) == 0", "takes size() of"),
    (
        "state.count.startsWith('1')",
        "calls startsWith() with `state.count`",
    ),
    ("state.name.contains(3)", "calls contains() with `3`"),
    (
        "state.count && state.archived",
        "uses as a condition `state.count`",
    ),
    ("!state.name", "uses as a condition"),
    (
        "state.cards.exists(c, c.title)",
        "uses as a condition `c.title`",
    ),
    ("state.cards.all(c, c.id)", "uses as a condition"),
    ("state.count.exists(x, x > 0)", "ranges over `state.count`"),
    ("state.name + 1 == 'a1'", "adds"),
    (
        "state.ratio + 1 > 2.0",
        "CEL does not mix int, uint and double",
    ),
    ("state.count * 2.5 > 1.0", "does not mix"),
    ("state.count - 'a' > 0", "subtracts"),
    ("-state.name == 'x'", "negates"),
    ("state.cards['x'].id == 1", "indexes a list with `'x'`"),
    ("state.name[0] == 'a'", "indexes `state.name`"),
    ("'x' in state.name", "use state.name.contains(…)"),
    ("3 in state.columns", "looks for"),
    (
        "state.cards.exists(c, c.tags.exists(t, t.size > 2))",
        "use size(t)",
    ),
    ("state.focus.titel == 'x'", "did you mean `title`?"),
    ("state.filter.kind == 'byTags'", "did you mean 'byTag'?"),
    ("state.filter.tags == 'x'", "did you mean `tag`?"),
    ("state.owner.nmae == 'x'", "did you mean `name`?"),
    (
        "state.members.exists(m, m.emial == 'x')",
        "did you mean `email`?",
    ),
    ("state.cards[0].column == 'doin'", "did you mean 'doing'?"),
    (
        "state.cards[0].column in ['todo', 'doin']",
        "did you mean 'doing'?",
    ),
    ("max(state.count, 3) > 2", "calls `max`"),
    ("state.name.lower() == 'x'", "calls `lower`"),
    ("state.count", "gives a number, not a boolean"),
    (
        "state.cards.map(c, c.id).exists(i, i == 'x')",
        "compares `i` (a number)",
    ),
];

#[test]
fn valid_expressions_pass() {
    for source in VALID {
        let found = report(source);
        assert!(found.errors.is_empty(), "{source}: {:?}", found.errors);
    }
}

#[test]
fn invalid_expressions_fail_with_their_reason() {
    for (source, expected) in INVALID {
        let found = report(source);
        let text: Vec<String> = found
            .errors
            .iter()
            .map(|f| format!("{}\nhelp: {}", f.problem, f.fix))
            .collect();
        assert!(
            text.iter().any(|t| t.contains(expected)),
            "{source}: expected {expected:?} in {text:#?}"
        );
    }
}

#[test]
fn the_typo_gate_names_the_field_and_suggests_the_right_one() {
    let found = report("state.cards.exists(c, c.colum == 'doing')");
    assert_eq!(found.errors.len(), 1, "{found:?}");
    assert_eq!(
        found.errors[0].problem,
        "`state.cards.exists(c, c.colum == 'doing')` reads `c.colum`, which is not in the schema"
    );
    assert_eq!(
        found.errors[0].fix,
        "did you mean `column`? the fields of `c` are: id, title, column, tags, estimate, \
         assignee, done"
    );
}

#[test]
fn unguarded_reads_through_options_warn() {
    let found = report("state.focus.title == 'x'");
    assert!(found.errors.is_empty(), "{found:?}");
    assert_eq!(
        found.warnings[0].problem,
        "`state.focus.title == 'x'` reads `state.focus.title`, but `state.focus` may be null \
         or absent"
    );
    assert!(
        report("state.cards.exists(c, c.assignee.name == 'x')")
            .warnings
            .len()
            == 1
    );
    assert!(report("has(state.focus) && state.focus.title == 'x'")
        .warnings
        .is_empty());
    // Comparing an optional value itself is fine (null is never equal to a string).
    assert!(report("state.owner.email == 'x'").warnings.is_empty());
}

#[test]
fn dynamic_parts_are_listed_not_checked() {
    let found = report("state.extra.a.b == 1 && state.extra.c");
    assert!(found.errors.is_empty(), "{found:?}");
    assert_eq!(found.dynamic, ["state.extra", "state.extra.a"]);
    // A state whose schema is `true` (a custom JsonSchema) checks nothing.
    assert!(check_gate("state.x.y == 1", &Value::Bool(true))
        .errors
        .is_empty());
    assert!(check_gate("state.x.y == 1", &serde_json::json!({}))
        .errors
        .is_empty());
}

#[test]
fn too_deep_or_broken_expressions_give_no_report() {
    let deep = format!("{}state.count{} > 0", "(".repeat(200), ")".repeat(200));
    assert_eq!(report(&deep), Report::default());
    assert_eq!(report("state."), Report::default());
    assert_eq!(report(""), Report::default());
}

/// Random CEL-ish text: tokens of the language, names of the state, brackets, quotes.
fn cel_ish() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let token = prop_oneof![
        Just("state".to_owned()),
        Just(".".to_owned()),
        Just("cards".to_owned()),
        Just("column".to_owned()),
        Just("c".to_owned()),
        Just("exists(".to_owned()),
        Just("map(".to_owned()),
        Just("has(".to_owned()),
        Just("size(".to_owned()),
        Just(",".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(" == ".to_owned()),
        Just(" && ".to_owned()),
        Just(" + ".to_owned()),
        Just(" in ".to_owned()),
        Just("!".to_owned()),
        Just("-".to_owned()),
        Just("?".to_owned()),
        Just(":".to_owned()),
        Just("'doing'".to_owned()),
        Just("\"".to_owned()),
        Just("1".to_owned()),
        Just("2.5".to_owned()),
        Just("null".to_owned()),
        "[a-z_]{1,6}",
        "\\PC{1,3}",
    ];
    proptest::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// The checker never panics, whatever the text: it reports, or gives up quietly on what
    /// does not parse.
    #[test]
    fn never_panics_on_cel_ish_text(source in cel_ish()) {
        let schema = state_schema::<Board>();
        // The public path (a panic there would be swallowed by its thread and give no
        // report), then the checker itself on this thread, where a panic fails the test.
        let _ = check_gate(&source, &schema);
        if let Ok(expr) = cel::parser::Parser::new().parse(&source) {
            let mut checker = super::check::Checker::new(
                &source,
                &schema,
                "state",
                super::ty::Ty::Schema(&schema),
            );
            checker.run(&expr);
            let _ = checker.into_report();
        }
    }
}
