//! §3: recognising tags, argument lists, strings and JSON literals in detail.

use super::{doc, strings, variant, variant_errors};
use crate::annotations::DispatchMode;
use crate::tags::{cel_sources, parse_variant_doc, written_tags, Tag};

#[test]
fn tag_boundaries() {
    // `@` must start the text or follow whitespace or `)`.
    assert_eq!(
        variant("a", &[" @intent(\"x\")@humanOnly"]).dispatch_mode,
        DispatchMode::HumanOnly
    );
    assert_eq!(
        variant("a", &["\t@agentOnly"]).dispatch_mode,
        DispatchMode::AgentOnly
    );
    // After a letter, digit or `_` an `@` is prose (emails).
    assert!(variant("a", &[" x@humanOnly 1@agentOnly _@humanOnly"]).is_default());
    // After other punctuation a known tag is an error, not prose (E17).
    let errors = variant_errors("a", &[" (@humanOnly 'x'@humanOnly"]);
    let codes: Vec<_> = errors.iter().map(|e| e.code()).collect();
    assert_eq!(codes, ["E17", "E17"]);
    // The identifier is taken maximally; a known tag as its prefix is a near miss (E4).
    let errors = variant_errors("a", &[" @humanOnlyExtra @intent_of_user(\"y\")"]);
    let codes: Vec<_> = errors.iter().map(|e| e.code()).collect();
    assert_eq!(codes, ["E4", "E4"]);
    assert_eq!(variant_errors("a", &[" @humanOnlyX"])[0].code(), "E4");
    // Punctuation after a flag glues it (E17), and prose before it puts it in a sentence.
    assert_eq!(
        variant_errors("a", &[" @requiresConfirm."])[0].code(),
        "E17"
    );
    assert_eq!(
        variant_errors("a", &[" This is @requiresConfirm"])[0].code(),
        "E17"
    );
    // `@` without an identifier is not a tag.
    assert!(variant("a", &[" @ @1 @-"]).is_default());
}

#[test]
fn filler_in_argument_lists() {
    let ann = variant("a", &[" @emits(", "   \"a\" ,", "  * \"b\"", " )\r"]);
    assert_eq!(ann.emits, strings(&["a", "b"]));
    let ann = variant("a", &[" @emits (\t\"a\"\t,\r\"b\" )"]);
    assert_eq!(ann.emits, strings(&["a", "b"]));
    // Only ONE `*` per line is filler.
    let errors = variant_errors("a", &[" @emits(", " * * \"a\")"]);
    assert_eq!(errors[0].code(), "D4");
    // A call tag followed by a newline before `(` has no list (E18).
    assert_eq!(
        variant_errors("a", &[" @intent", " (\"x\")"])[0].code(),
        "E18"
    );
}

#[test]
fn mixed_quote_styles_never_close_each_other() {
    let ann = variant("a", &[" @intent(“say \"hi\"”) @warning(\"a “b” c\")"]);
    assert_eq!(ann.intent.as_deref(), Some("say \"hi\""));
    assert_eq!(ann.warning.as_deref(), Some("a “b” c"));
    let ann = variant("a", &[r#" @intent("x \“ y \” z")"#]);
    assert_eq!(ann.intent.as_deref(), Some("x “ y ” z"));
    // Both styles in one list.
    let ann = variant("a", &[" @emits(\"a\", “b”)"]);
    assert_eq!(ann.emits, strings(&["a", "b"]));
}

#[test]
fn carriage_returns_never_end_up_in_values() {
    let ann = variant("a", &["@intent(\"a \r\n  b\")"]);
    assert_eq!(ann.intent.as_deref(), Some("a b"));
    let ann = variant("a", &["@intent(\"a\rb\")"]);
    assert_eq!(ann.intent.as_deref(), Some("a b"));
    let ann = variant("a", &["@example({\"type\":\r\n\"a\"})"]);
    assert_eq!(ann.examples, strings(&["{\"type\": \"a\"}"]));
    assert_eq!(
        variant("a", &["\r@humanOnly"]).dispatch_mode,
        DispatchMode::HumanOnly
    );
}

#[test]
fn json_literal_line_wrap_and_block_prefixes() {
    let ann = variant(
        "add",
        &["\n * @example({\n *   \"type\": \"add\",\n *\n *   \"n\": [1,\n *     2]\n * })\n "],
    );
    assert_eq!(
        ann.examples,
        strings(&["{ \"type\": \"add\", \"n\": [1, 2] }"])
    );
}

#[test]
fn json_literal_brackets_inside_strings() {
    let ann = variant("a", &[r#" @example(["]", "{", "\\"])"#]);
    assert_eq!(ann.examples, strings(&[r#"["]", "{", "\\"]"#]));
    // A bracket never opens inside any other tag.
    assert_eq!(variant_errors("a", &[" @emits([\"a\"])"])[0].code(), "D4");
    // A scalar JSON example is fine in quoted form.
    assert_eq!(
        variant("a", &[" @example(\"true\")"]).examples,
        strings(&["true"])
    );
}

#[test]
fn examples_are_all_kept_without_dedup() {
    let ann = variant(
        "a",
        &[
            " @example({\"type\":\"a\"}) @example({\"type\":\"a\"})",
            " @example(\"[]\")",
        ],
    );
    assert_eq!(
        ann.examples,
        strings(&["{\"type\":\"a\"}", "{\"type\":\"a\"}", "[]"])
    );
}

#[test]
fn cel_sources_lists_counted_expressions() {
    let text = doc(&[
        " @routeGated(\"state.a\", \"why\")",
        " @routeGated(\"state.b\")",
        " @routeGated()",
        " @validates(\"v > 0\") @validates(\"a\", \"b\")",
        " the @routeGated tag",
    ]);
    let sources: Vec<_> = cel_sources(&text)
        .into_iter()
        .map(|s| (s.offset, s.tag, s.source))
        .collect();
    let offset = |needle: &str| text.find(needle).unwrap();
    assert_eq!(
        sources,
        vec![
            (0, Tag::RouteGated, "state.a".to_owned()),
            (
                offset("@routeGated(\"state.b"),
                Tag::RouteGated,
                "state.b".to_owned()
            ),
            (offset("@validates(\"v"), Tag::Validates, "v > 0".to_owned()),
        ]
    );
    // The empty expression is listed (the CEL check rejects it).
    assert_eq!(cel_sources("@validates(\"\")")[0].source, "");
}

#[test]
fn error_offsets_point_at_the_at_sign() {
    let text = doc(&[" Prose first.", "  @intent(x)", " @Intent(\"y\")"]);
    let errors = parse_variant_doc(&text, "a").unwrap_err();
    assert_eq!(errors[0].offset, text.find("@intent").unwrap());
    assert_eq!(errors[1].offset, text.find("@Intent").unwrap());
}

#[test]
fn backslash_at_line_end_and_text_end() {
    // A backslash before a line break is kept; the break still wraps.
    let ann = variant("a", &[" @intent(\"a\\", " b\")"]);
    assert_eq!(ann.intent.as_deref(), Some("a\\ b"));
    assert_eq!(variant_errors("a", &[" @intent(\"a\\"])[0].code(), "D5");
}

#[test]
fn written_tags_skip_mentions_and_argument_text() {
    let text = "the @should tag; @should(\"@humanOnly\") @humanOnly @validates(x @Intent";
    assert_eq!(
        written_tags(text),
        vec![
            (text.find("@should(").unwrap(), Tag::Should),
            (text.find(" @humanOnly").unwrap() + 1, Tag::HumanOnly),
            (text.find("@validates").unwrap(), Tag::Validates),
        ]
    );
}
