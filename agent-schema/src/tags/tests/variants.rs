//! §8.1: variant tags.

use super::{strings, variant, variant_errors};
use crate::annotations::{DispatchMode, MessageAnnotations};

#[test]
fn intent_only() {
    // §8.1 #1
    let ann = variant("inc", &[" @intent(\"increment the counter\")"]);
    assert_eq!(
        ann,
        MessageAnnotations {
            intent: Some("increment the counter".into()),
            ..Default::default()
        }
    );
}

#[test]
fn intent_and_requires_confirm() {
    // §8.1 #2
    let ann = variant("delete", &[" @intent(\"Delete\") @requiresConfirm"]);
    assert_eq!(ann.intent.as_deref(), Some("Delete"));
    assert!(ann.requires_confirm);
    assert_eq!(ann.dispatch_mode, DispatchMode::Shared);
}

#[test]
fn dispatch_modes() {
    // §8.1 #3
    assert_eq!(
        variant("a", &[" @humanOnly"]).dispatch_mode,
        DispatchMode::HumanOnly
    );
    assert_eq!(
        variant("a", &[" @agentOnly"]).dispatch_mode,
        DispatchMode::AgentOnly
    );
    // Writing a flag twice changes nothing.
    assert_eq!(
        variant("a", &[" @agentOnly @agentOnly"]).dispatch_mode,
        DispatchMode::AgentOnly
    );
}

#[test]
fn always_affordable_with_intent() {
    // §8.1 #4
    let ann = variant(
        "nav",
        &[" @alwaysAffordable @intent(\"navigate to route\")"],
    );
    assert!(ann.always_affordable);
    assert_eq!(ann.intent.as_deref(), Some("navigate to route"));
}

#[test]
fn no_tags_gives_the_default_record() {
    // §8.1 #5, #6
    assert!(variant("a", &[]).is_default());
    assert!(variant("a", &[" Plain prose."]).is_default());
    assert!(variant("a", &[" @someOtherTag @foo @see docs"]).is_default());
    assert!(variant("a", &[" @todo @internal @alice"]).is_default());
    let json = serde_json::to_string(&variant("a", &[" Plain prose."])).unwrap();
    assert_eq!(
        json,
        r#"{"intent":null,"alwaysAffordable":false,"requiresConfirm":false,"dispatchMode":"shared","examples":[],"warning":null,"emits":[],"routeGate":null,"routeGateReason":null}"#
    );
}

#[test]
fn json_form_example() {
    // §8.1 #7
    let ann = variant("inc", &[" @example({\"type\":\"inc\"})"]);
    assert_eq!(ann.examples, strings(&[r#"{"type":"inc"}"#]));
}

#[test]
fn examples_keep_source_order_across_forms() {
    // §8.1 #8
    let ann = variant(
        "add",
        &[
            r#" @example({"type":"add","n":1})"#,
            r#" @example("{\"type\":\"add\",\"n\":2}")"#,
            r#" @example({"type":"add","#,
            r#"   "n": 3})"#,
        ],
    );
    assert_eq!(
        ann.examples,
        strings(&[
            r#"{"type":"add","n":1}"#,
            r#"{"type":"add","n":2}"#,
            r#"{"type":"add", "n": 3}"#,
        ])
    );
}

#[test]
fn warning_does_not_imply_confirm() {
    // §8.1 #9
    let ann = variant("buy", &[" @warning(\"costs money\")"]);
    assert_eq!(ann.warning.as_deref(), Some("costs money"));
    assert!(!ann.requires_confirm);
}

#[test]
fn emits_first_call_deduplicated() {
    // §8.1 #10
    let emits = |line: &str| variant("a", &[line]).emits;
    assert_eq!(
        emits(" @emits(\"cloud/save\", \"analytics/track\")"),
        strings(&["cloud/save", "analytics/track"])
    );
    assert_eq!(emits(" @emits(\"cloud/save\")"), strings(&["cloud/save"]));
    assert_eq!(emits(" @emits(\"a\", \"b\", \"a\")"), strings(&["a", "b"]));
    // A second `@emits` is an error (E19), never silently dropped.
    assert_eq!(
        variant_errors("a", &[" @emits(\"a\") @emits(\"b\")"])[0].code(),
        "E19"
    );
    assert_eq!(emits(" @emits(\"a\",)"), strings(&["a"]));
    assert_eq!(emits(" no emits here"), Vec::<String>::new());
}

#[test]
fn route_gated_one_or_two_arguments() {
    // §8.1 #11
    let ann = variant(
        "a",
        &[" @routeGated(\"state.matrix.kind == 'loaded'\", \"load a matrix first\")"],
    );
    assert_eq!(
        ann.route_gate.as_deref(),
        Some("state.matrix.kind == 'loaded'")
    );
    assert_eq!(
        ann.route_gate_reason.as_deref(),
        Some("load a matrix first")
    );
    let ann = variant("a", &[" @routeGated(\"state.ready\")"]);
    assert_eq!(ann.route_gate.as_deref(), Some("state.ready"));
    assert_eq!(ann.route_gate_reason, None);
    // A second gate is an error naming both lines.
    let errors = variant_errors(
        "a",
        &[" @routeGated(\"x\")", " @routeGated(\"y\", \"why\")"],
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].kind.summary(),
        "`@routeGated` is written twice (doc lines 1 and 2)"
    );
}

#[test]
fn curly_quotes() {
    // §8.1 #12, #13
    let ann = variant("greet", &[" @intent(“Say hi”) @warning(“Careful”)"]);
    assert_eq!(ann.intent.as_deref(), Some("Say hi"));
    assert_eq!(ann.warning.as_deref(), Some("Careful"));
    let ann = variant("greet", &[" @example(“{\"type\":\"greet\"}”)"]);
    assert_eq!(ann.examples, strings(&[r#"{"type":"greet"}"#]));
    let ann = variant("greet", &[" @intent(“Say \\”hi\\” to the user”)"]);
    assert_eq!(ann.intent.as_deref(), Some("Say ”hi” to the user"));
    let ann = variant("greet", &[" @intent(\"it's fine\")"]);
    assert_eq!(ann.intent.as_deref(), Some("it's fine"));
}

#[test]
fn escaped_quotes_in_route_gate() {
    // §8.1 #14
    let ann = variant(
        "a",
        &[r#" @routeGated("state.mode == \"admin\"", "only while the \"admin\" mode is active")"#],
    );
    assert_eq!(ann.route_gate.as_deref(), Some(r#"state.mode == "admin""#));
    assert_eq!(
        ann.route_gate_reason.as_deref(),
        Some(r#"only while the "admin" mode is active"#)
    );
}

#[test]
fn backslashes() {
    // §8.1 #15
    let intent = |line: &str| variant("a", &[line]).intent.unwrap();
    assert_eq!(intent(r#" @intent("a \\ b")"#), r"a \ b");
    assert_eq!(intent(r#" @intent("a \d b")"#), r"a \d b");
    assert_eq!(intent(r#" @intent("a \n b")"#), r"a \n b");
}

#[test]
fn multi_line_strings() {
    // §8.1 #16
    let ann = variant("a", &[" @intent(\"first part", "    second part\")"]);
    assert_eq!(ann.intent.as_deref(), Some("first part second part"));
    let ann = variant("a", &[" @intent(\"first part", "", "    second part\")"]);
    assert_eq!(ann.intent.as_deref(), Some("first part second part"));
    // Trailing blanks before the line break are dropped too.
    let ann = variant("a", &[" @intent(\"first part  \t", "  \t  second part\")"]);
    assert_eq!(ann.intent.as_deref(), Some("first part second part"));
}

#[test]
fn empty_strings_are_values() {
    // §8.1 #17
    let ann = variant("a", &[" @intent(\"\") @warning(\"\")"]);
    assert_eq!(ann.intent.as_deref(), Some(""));
    assert_eq!(ann.warning.as_deref(), Some(""));
    assert!(!ann.is_default());
    let ann = variant("a", &[" @emits(\"\")"]);
    assert_eq!(ann.emits, strings(&[""]));
    assert!(!ann.is_default());
}

#[test]
fn a_repeated_single_valued_tag_is_e19() {
    // §8.1 #18 (changed): a second call is an error at the second, pointing at the first.
    let errors = variant_errors(
        "a",
        &[
            " @intent(\"x\") @intent(\"y\")",
            " @warning(\"w1\")",
            " @warning(\"w2\")",
        ],
    );
    let found: Vec<_> = errors
        .iter()
        .map(|e| (e.code(), e.offset, e.first))
        .collect();
    let second_warning = "@intent(\"x\") @intent(\"y\")\n@warning(\"w1\")\n".len();
    assert_eq!(
        found,
        [
            ("E19", "@intent(\"x\") ".len(), Some(0)),
            (
                "E19",
                second_warning,
                Some("@intent(\"x\") @intent(\"y\")\n".len())
            ),
        ]
    );
    // Flags and `@example` may repeat.
    let ann = variant(
        "a",
        &[" @requiresConfirm @requiresConfirm @example(\"1\") @example(\"2\")"],
    );
    assert!(ann.requires_confirm);
    assert_eq!(ann.examples.len(), 2);
}

#[test]
fn tags_inside_arguments_are_text() {
    // §8.1 #19
    let ann = variant("a", &[" @intent(\"never @humanOnly\")"]);
    assert_eq!(ann.dispatch_mode, DispatchMode::Shared);
    assert_eq!(ann.intent.as_deref(), Some("never @humanOnly"));
}

#[test]
fn tags_in_prose_after_quote_backtick_or_letter_are_not_tags() {
    // §8.1 #20
    // §8.1 #20 (changed): a quoted tag in prose is an error (E17); backticks and emails are
    // prose.
    let errors = variant_errors(
        "a",
        &[" Unlike \"@humanOnly\" ones, this is shared; mail support@example.com."],
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code(), "E17");
    let ann = variant(
        "a",
        &[" Unlike `@humanOnly` ones, this is shared; mail support@example.com."],
    );
    assert!(ann.is_default());
    assert!(variant("a", &[" Use ``@humanOnly`` or ```@agentOnly``` here."]).is_default());
    // A stray quote in prose never hides a later tag.
    assert_eq!(
        variant_errors("a", &[" Say \"hello. @humanOnly"])[0].code(),
        "E17"
    );
    // An unclosed backtick does not hide a tag, nor does a code span on another line.
    let ann = variant("a", &[" a ` b", " @humanOnly `c`"]);
    assert_eq!(ann.dispatch_mode, DispatchMode::HumanOnly);
}

#[test]
fn flag_with_empty_list() {
    // §8.1 #21
    assert!(variant("a", &[" @requiresConfirm()"]).requires_confirm);
    assert!(variant("a", &[" @requiresConfirm ( \t )"]).requires_confirm);
}

#[test]
fn call_tag_without_parenthesis_is_an_error() {
    // §8.1 #22 (changed): prose mentions go in backticks.
    assert_eq!(
        variant_errors("a", &[" see the @example tag"])[0].code(),
        "E17"
    );
    assert!(variant("a", &[" see the `@example` tag"])
        .examples
        .is_empty());
    let errors = variant_errors("a", &[" @intent", " (not a call)"]);
    assert_eq!(errors[0].code(), "E18");
    assert_eq!(
        errors[0].to_string(),
        "`@intent` is not followed by `(`\n\
         help: write `@intent(\"…\")`; to mention the tag in prose, put it in backticks"
    );
    assert_eq!(variant_errors("a", &[" @intent \"x\""])[0].code(), "E18");
    assert_eq!(variant_errors("a", &[" @intent: \"x\""])[0].code(), "E18");
}

#[test]
fn fenced_code_blocks_are_not_scanned() {
    // §8.1 #23
    let ann = variant("a", &[" Example:", " ```", " @humanOnly", " ```"]);
    assert_eq!(ann.dispatch_mode, DispatchMode::Shared);
    let ann = variant("a", &[" ~~~text", " @humanOnly", " ~~~", " @agentOnly"]);
    assert_eq!(ann.dispatch_mode, DispatchMode::AgentOnly);
    // An unclosed fence runs to the end.
    let ann = variant("a", &[" ```", " @humanOnly"]);
    assert_eq!(ann.dispatch_mode, DispatchMode::Shared);
    // A call that started before a fence still consumes its argument text.
    let ann = variant("a", &[" @intent(\"a", " ```", " b\") @humanOnly", " ```"]);
    assert_eq!(ann.intent.as_deref(), Some("a ``` b"));
    assert_eq!(ann.dispatch_mode, DispatchMode::Shared);
}

#[test]
fn hand_written_doc_attributes() {
    // §8.1 #24: values are the literal's value after Rust's unescaping.
    let ann = variant("a", &["@intent(\"hand written\")"]);
    assert_eq!(ann.intent.as_deref(), Some("hand written"));
    assert_eq!(
        variant("a", &["@agentOnly"]).dispatch_mode,
        DispatchMode::AgentOnly
    );
}

#[test]
fn block_comments() {
    // §8.1 #25: `/** @intent("one\n * two") */` has the value ` @intent("one\n * two") `.
    let ann = variant("a", &[" @intent(\"one\n * two\") "]);
    assert_eq!(ann.intent.as_deref(), Some("one two"));
    let ann = variant(
        "a",
        &["\n * Does things.\n * @emits(\n *   \"a\",\n *   \"b\"\n * )\n * @humanOnly\n "],
    );
    assert_eq!(ann.emits, strings(&["a", "b"]));
    assert_eq!(ann.dispatch_mode, DispatchMode::HumanOnly);
    // `*/` inside a `///` line is ordinary text.
    let ann = variant("a", &[" @intent(\"a */ b\")"]);
    assert_eq!(ann.intent.as_deref(), Some("a */ b"));
}

#[test]
fn record_for_a_renamed_variant() {
    // §8.1 #26 (keying is the derive's job; the E5 check uses the wire name given here).
    let ann = variant(
        "Matrix/AddCriteria",
        &[
            " @intent(\"Add criteria\")",
            r#" @example({"type":"Matrix/AddCriteria"})"#,
        ],
    );
    assert_eq!(ann.intent.as_deref(), Some("Add criteria"));
    assert_eq!(ann.examples.len(), 1);
}

#[test]
fn json_form_details() {
    // §8.1 #27
    let example = |line: &str| variant("select", &[line]).examples;
    assert_eq!(
        example(r#" @example({"type":"select","label":"a } b"})"#),
        strings(&[r#"{"type":"select","label":"a } b"}"#])
    );
    assert_eq!(
        example(r#" @example({"type":"select","nested":{"a":[1,{"b":2}]}})"#),
        strings(&[r#"{"type":"select","nested":{"a":[1,{"b":2}]}}"#])
    );
    assert_eq!(
        example(r#" @example([{"type":"select","id":1},{"type":"select","id":2}])"#),
        strings(&[r#"[{"type":"select","id":1},{"type":"select","id":2}]"#])
    );
    assert_eq!(
        example(r#" @example({"type":"select","id":42})"#),
        example(r#" @example("{\"type\":\"select\",\"id\":42}")"#)
    );
    // Escaped quotes inside JSON strings are copied as pairs.
    assert_eq!(
        example(r#" @example({"type":"select","q":"say \"}\""})"#),
        strings(&[r#"{"type":"select","q":"say \"}\""}"#])
    );
}

#[test]
fn the_spec_example_record() {
    // §4
    let ann = variant(
        "deleteRow",
        &[
            " Removes a row.",
            " @intent(\"Delete a row\") @requiresConfirm",
            " @emits(\"cloud/save\", \"analytics/track\", \"cloud/save\")",
            r#" @routeGated("state.mode == \"edit\"", "switch to edit mode first")"#,
        ],
    );
    assert_eq!(
        serde_json::to_string(&ann).unwrap(),
        r#"{"intent":"Delete a row","alwaysAffordable":false,"requiresConfirm":true,"dispatchMode":"shared","examples":[],"warning":null,"emits":["cloud/save","analytics/track"],"routeGate":"state.mode == \"edit\"","routeGateReason":"switch to edit mode first"}"#
    );
}

#[test]
fn payload_only_array_and_scalar_examples_skip_the_type_check() {
    // §8.3 #44 (accepted side)
    assert_eq!(
        variant("inc", &[r#" @example({"n":1})"#]).examples,
        strings(&[r#"{"n":1}"#])
    );
    assert_eq!(
        variant("inc", &[r#" @example("42")"#]).examples,
        strings(&["42"])
    );
    assert_eq!(
        variant("inc", &[r#" @example([{"type":"dec"}])"#])
            .examples
            .len(),
        1
    );
}
