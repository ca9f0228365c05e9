//! Start-up checks of `describe` against the real types (issue 11): examples deserialize and
//! pass `@validates`, and expressions read only field paths the schemas have.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_derive::AgentMsg;
use tea_agent_schema::{describe, SchemaError};

#[derive(Serialize, Deserialize, JsonSchema)]
struct State {
    todos: Vec<String>,
    mode: String,
    filter: Filter,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Filter {
    done: bool,
}

/// The error text of `describe::<M, State>`.
fn error_of<M: tea_agent_schema::AgentMsg>() -> String {
    describe::<M, State>("app", "1", None)
        .unwrap_err()
        .to_string()
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Good {
    /// @example({"type":"setWeight","weight":50})
    /// @example({"weight": 5})
    /// @example([{"type":"setWeight","weight":1},{"type":"setWeight","weight":2}])
    /// @routeGated("size(state.todos) > 0 && state.mode == 'edit' && !state.filter.done")
    SetWeight {
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
    },
    /// @routeGated("state.todos.exists(t, t == 'x')")
    Clear,
}

#[test]
fn valid_examples_and_paths_pass() {
    let doc = describe::<Good, State>("app", "1", None).unwrap();
    assert_eq!(
        doc.annotations["setWeight"]["examples"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum WrongFieldType {
    /// @example({"type":"setWeight","weight":"heavy"})
    SetWeight { weight: f64 },
}

#[test]
fn an_example_with_a_wrong_field_type_fails() {
    assert_eq!(
        error_of::<WrongFieldType>(),
        "variant \"setWeight\": `@example` #1 does not deserialize as the message: invalid type: \
         string \"heavy\", expected f64\n\
         help: make the example match the variant's fields, or remove it"
    );
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum MissingField {
    /// @example({"type":"rename"})
    Rename { to: String },
}

#[test]
fn an_example_missing_a_required_field_fails() {
    assert_eq!(
        error_of::<MissingField>(),
        "variant \"rename\": `@example` #1 does not deserialize as the message: missing field `to`\n\
         help: make the example match the variant's fields, or remove it"
    );
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum FailsValidates {
    /// @example({"weight": 50})
    /// @example({"weight": 150})
    SetWeight {
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
    },
}

#[test]
fn an_example_failing_validates_fails() {
    assert_eq!(
        error_of::<FailsValidates>(),
        "variant \"setWeight\": `@example` #2 fails `@validates(\"v >= 0 && v <= 100\")` of field \
         `weight` with 150\n\
         help: change the example's `weight` or the predicate"
    );
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum LengthHabit {
    /// @routeGated("state.todos.length > 0")
    Clear,
}

#[test]
fn length_on_a_list_says_use_size() {
    assert_eq!(
        error_of::<LengthHabit>(),
        "variant \"clear\": `@routeGated` `state.todos.length > 0` reads `state.todos.length` of \
         a list\n\
         help: CEL has no `.length`: use size(state.todos)"
    );
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum MissingStateField {
    /// @routeGated("state.filter.archived")
    Clear,
}

#[test]
fn a_state_path_that_does_not_exist_fails() {
    assert_eq!(
        error_of::<MissingStateField>(),
        "variant \"clear\": `@routeGated` `state.filter.archived` reads `state.filter.archived`, \
         which is not in the schema\n\
         help: the fields of `state.filter` are: done"
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Range {
    min: f64,
    max: f64,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum FieldPaths {
    SetRange {
        /// @validates("v.min <= v.maximum")
        range: Range,
    },
}

#[test]
fn a_validates_path_that_does_not_exist_fails() {
    assert_eq!(
        error_of::<FieldPaths>(),
        "variant \"setRange\": `@validates` on `range`: `v.min <= v.maximum` reads `v.maximum`, \
         which is not in the schema\n\
         help: did you mean `max`? the fields of `v` are: min, max"
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Cell {
    /// The note.
    /// @shuold("cite it")
    note: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum NestedTypo {
    SetCell { cell: Cell },
}

#[test]
fn a_near_miss_on_a_nested_field_fails() {
    let text = error_of::<NestedTypo>();
    assert!(
        text.starts_with(
            "agent tag error in the doc of the Msg schema property `/$defs/Cell/properties/note`: \
             unknown agent tag `@shuold`; did you mean `@should`?"
        ),
        "{text}"
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Limits {
    /// @validates("v <= state.max")
    low: f64,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum NestedScope {
    SetLimits { limits: Limits },
}

#[test]
fn a_nested_validates_reading_state_fails() {
    assert_eq!(
        error_of::<NestedScope>(),
        "variant \"setLimits\": `@validates` on `limits.low`: `@validates` reads `state`, but only `v` is \
         in scope\n\
         help: `@validates` sees only the field's value `v`; a check on the state belongs in \
         `@routeGated`"
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Note {
    /// @shuold("cite it")
    text: String,
    /// @validates("v.size > 0")
    tags: Vec<String>,
    /// @shoud("the source")
    source: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Many {
    /// @example({"weight": "heavy"})
    /// @example({"weight": 50})
    /// @example({"weight": 150})
    SetWeight {
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
    },
    /// @routeGated("state.todos.length > 0 && state.filter.archived")
    Clear,
    AddNote {
        note: Note,
    },
}

#[test]
fn every_error_is_reported_at_once() {
    let errors = describe::<Many, State>("app", "1", None).unwrap_err();
    let texts: Vec<String> = errors.errors().iter().map(ToString::to_string).collect();
    let firsts: Vec<&str> = texts.iter().map(|t| t.lines().next().unwrap()).collect();
    assert_eq!(
        firsts,
        [
            "agent tag error in the doc of the Msg schema property \
             `/$defs/Note/properties/text`: unknown agent tag `@shuold`; did you mean `@should`?",
            "agent tag error in the doc of the Msg schema property \
             `/$defs/Note/properties/source`: unknown agent tag `@shoud`; did you mean `@should`?",
            "variant \"setWeight\": `@example` #1 does not deserialize as the message: invalid \
             type: string \"heavy\", expected f64",
            "variant \"setWeight\": `@example` #3 fails `@validates(\"v >= 0 && v <= 100\")` of \
             field `weight` with 150",
            "variant \"clear\": `@routeGated` `state.todos.length > 0 && state.filter.archived` \
             reads `state.todos.length` of a list",
            "variant \"clear\": `@routeGated` `state.todos.length > 0 && state.filter.archived` \
             reads `state.filter.archived`, which is not in the schema",
            "variant \"addNote\": `@validates` on `note.tags`: `v.size > 0` reads `v.size` of a \
             list",
        ]
    );
    // Where: the variant, the field and the tag.
    let Some(tea_agent_schema::StartupError::Msg(SchemaError::Startup {
        variant,
        field,
        tag,
        ..
    })) = errors.errors().last()
    else {
        panic!("{errors}")
    };
    assert_eq!(
        (variant.as_str(), field.as_deref()),
        ("addNote", Some("note.tags"))
    );
    assert_eq!(*tag, tea_agent_schema::tags::Tag::Validates);
    let text = errors.to_string();
    assert!(
        text.starts_with("7 start-up errors:\n- agent tag error"),
        "{text}"
    );
    assert!(
        text.contains("\n  help: CEL has no `.length`: use size(state.todos)\n- variant"),
        "{text}"
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Secrets {
    /// @redacted
    key: String,
    /// @redact(now)
    token: String,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Rotate {
    Rotate,
}

#[test]
fn malformed_redact_tags_fail_describe() {
    let errors = describe::<Rotate, Secrets>("app", "1", None).unwrap_err();
    let pointers: Vec<&str> = errors
        .errors()
        .iter()
        .map(|e| match e {
            tea_agent_schema::StartupError::State(e) => e.pointer.as_str(),
            other => panic!("not a state error: {other}"),
        })
        .collect();
    assert_eq!(pointers, ["/properties/key", "/properties/token"]);
}

// Issue 51: gates and validations typed against the schemas, comprehensions included.

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum Column {
    Todo,
    Doing,
    Done,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Card {
    title: String,
    column: Column,
    points: u32,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Kanban {
    cards: Vec<Card>,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum KanbanTypo {
    /// @routeGated("state.cards.exists(c, c.colum == 'doing')", "no card is in doing")
    Finish,
}

#[test]
fn a_typo_in_a_comprehension_is_a_startup_error_with_a_suggestion() {
    let error = describe::<KanbanTypo, Kanban>("kanban", "1", None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "variant \"finish\": `@routeGated` `state.cards.exists(c, c.colum == 'doing')` reads \
         `c.colum`, which is not in the schema\n\
         help: did you mean `column`? the fields of `c` are: title, column, points"
    );
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum KanbanTypes {
    /// @routeGated("state.cards.exists(c, c.column == 'doin')")
    Finish,
    /// @routeGated("state.cards.all(c, c.points != 'many')")
    Estimate,
    /// @routeGated("state.cards.exists(c, c.column == 'doing' && c.points > 3)")
    Split,
    Rename {
        /// @validates("v.all(c, size(c.titel) > 0)")
        cards: Vec<Card>,
        /// @validates("v.points > 0 && v.column != 'todo'")
        card: Card,
    },
}

#[test]
fn enum_literals_kinds_and_validates_are_checked_all_at_once() {
    let errors = describe::<KanbanTypes, Kanban>("kanban", "1", None).unwrap_err();
    let lines: Vec<String> = errors
        .errors()
        .iter()
        .map(|e| e.to_string().lines().next().unwrap().to_owned())
        .collect();
    assert_eq!(
        lines,
        [
            "variant \"finish\": `@routeGated` `state.cards.exists(c, c.column == 'doin')` \
             compares `c.column` with 'doin', which is not one of its values",
            "variant \"estimate\": `@routeGated` `state.cards.all(c, c.points != 'many')` \
             compares `c.points` (a number) with `'many'` (a string)",
            "variant \"rename\": `@validates` on `cards`: `v.all(c, size(c.titel) > 0)` reads \
             `c.titel`, which is not in the schema",
        ]
    );
    assert!(
        errors.to_string().contains(
            "help: did you mean 'doing'? the values of `c.column` are: 'todo', 'doing', 'done'"
        ),
        "{errors}"
    );
}

// The gates and validations of README.md (§Annotating your `Msg`) and docs/guide.md (the notes
// app), restated over the states they read; `doc_expressions_are_the_ones_restated` keeps
// the restatement in step with the documents.

#[derive(Serialize, Deserialize, JsonSchema)]
struct Todo {
    title: String,
    done: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct TodoState {
    todos: Vec<Todo>,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum ReadmeMsg {
    /// @routeGated("state.todos.exists(t, t.done)", "nothing is completed yet")
    ClearCompleted,
    SetCount {
        /// @validates("v >= 0 && v <= 1000")
        value: i64,
    },
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct GuideNote {
    id: u32,
    text: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct NotesState {
    notes: Vec<GuideNote>,
    next_id: u32,
}

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum GuideMsg {
    Add {
        /// @validates("size(v) > 0 && size(v) <= 200")
        text: String,
    },
    /// @routeGated("size(state.notes) > 0", "there are no notes to clear")
    ClearAll,
}

const RESTATED: [&str; 4] = [
    "state.todos.exists(t, t.done)",
    "v >= 0 && v <= 1000",
    "size(v) > 0 && size(v) <= 200",
    "size(state.notes) > 0",
];

#[test]
fn the_docs_gates_and_validations_type_check() {
    describe::<ReadmeMsg, TodoState>("readme", "1", None).unwrap();
    describe::<GuideMsg, NotesState>("guide", "1", None).unwrap();
}

#[test]
fn doc_expressions_are_the_ones_restated() {
    for doc in [
        include_str!("../../README.md"),
        include_str!("../../docs/guide.md"),
    ] {
        for line in doc.lines().filter(|l| l.trim_start().starts_with("///")) {
            for tag in ["@routeGated(\"", "@validates(\""] {
                let Some(start) = line.find(tag) else {
                    continue;
                };
                let rest = &line[start + tag.len()..];
                let expr = &rest[..rest.find('"').unwrap()];
                assert!(RESTATED.contains(&expr), "restate `{expr}` in this test");
            }
        }
    }
}
