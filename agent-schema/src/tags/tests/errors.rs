//! §8.3: compile errors found by the grammar, with their exact texts.

use super::{doc, one_error, variant_errors};
use crate::tags::{check_enum_doc, Detail, Tag, TagError, TagErrorKind};

const ADVICE: &str =
    r#"arguments are quoted strings; escape an inner quote as `\"` or use single quotes inside"#;
const ADVICE_EXAMPLE: &str = r#"the argument must be a quoted string or a JSON object/array literal, e.g. `@example({"type":"inc"})`"#;

/// The full malformed-call message with the tag's general advice.
fn malformed(tag: &str, detail: &str, excerpt: &str) -> String {
    let advice = if tag == "example" {
        ADVICE_EXAMPLE
    } else {
        ADVICE
    };
    malformed_with(tag, detail, advice, excerpt)
}

/// The full malformed-call message with specific advice.
fn malformed_with(tag: &str, detail: &str, advice: &str, excerpt: &str) -> String {
    format!("malformed `@{tag}(…)`: {detail}\nhelp: {advice}; in `{excerpt}`")
}

/// The code of the single error of a one-line variant doc.
fn code(wire: &str, line: &str) -> &'static str {
    let errors = variant_errors(wire, &[line]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors[0].code()
}

#[test]
fn e1_human_and_agent_only() {
    // §8.3 #35: the span is the later of the two tags.
    let errors = variant_errors("a", &[" @humanOnly", " @agentOnly"]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].offset, "@humanOnly\n".len());
    assert_eq!(
        errors[0].to_string(),
        "`@humanOnly` and `@agentOnly` exclude each other\n\
         help: a variant is either human-only or agent-only: keep one of the two"
    );
    let errors = variant_errors("a", &[" @agentOnly @humanOnly"]);
    assert_eq!(errors[0].offset, "@agentOnly ".len());
}

#[test]
fn e2_e3_flags_on_human_only() {
    // §8.3 #36
    assert_eq!(
        one_error("a", " @humanOnly @requiresConfirm"),
        "`@requiresConfirm` has no effect on a `@humanOnly` variant\n\
         help: agents can never send a human-only variant: remove `@requiresConfirm`"
    );
    assert_eq!(
        one_error("a", " @humanOnly @alwaysAffordable"),
        "`@alwaysAffordable` has no effect on a `@humanOnly` variant\n\
         help: human-only variants are never listed to agents: remove `@alwaysAffordable`"
    );
    let errors = variant_errors("a", &[" @requiresConfirm", " @humanOnly"]);
    assert_eq!(errors[0].code(), "E2");
    assert_eq!(errors[0].offset, 0);
}

#[test]
fn e4_close_tags() {
    // §8.3 #37
    for (line, written, known) in [
        (" @requireConfirm", "requireConfirm", "requiresConfirm"),
        (" @Intent(\"x\")", "Intent", "intent"),
        (" @warn(\"x\")", "warn", "warning"),
        (" @examples({})", "examples", "example"),
        (" @HumanOnly", "HumanOnly", "humanOnly"),
        (" @intnet(\"x\")", "intnet", "intent"),
        (" @emit(\"a\")", "emit", "emits"),
        (" @route(\"x\")", "route", "routeGated"),
        (" @valid", "valid", "validates"),
    ] {
        assert_eq!(
            one_error("a", line),
            format!(
                "unknown agent tag `@{written}`; did you mean `@{known}`?\n\
                 help: write `@{known}`, or put the word in backticks if it is not meant as a tag"
            )
        );
    }
    // The arguments of a misspelled call are not scanned.
    assert_eq!(code("a", " @Intent(\"not @humanOnly\")"), "E4");
}

#[test]
fn d6_unescaped_quote() {
    // §8.3 #38
    assert_eq!(
        one_error("a", r#" @routeGated("state.mode == "admin"")"#),
        malformed_with(
            "routeGated",
            "expected `,` or `)` after an argument, found `a`",
            r#"an unescaped quote inside the string ends it early: escape it as `\"` or use single quotes"#,
            r#"@routeGated("state.mode == "admin"")"#,
        )
    );
}

#[test]
fn d5_unclosed_strings() {
    // §8.3 #39
    assert_eq!(
        one_error("a", " @intent(\"never closed"),
        malformed(
            "intent",
            "a quoted string is never closed before the end of the doc comment",
            "@intent(\"never closed",
        )
    );
    assert_eq!(
        one_error("a", " @intent(“never closed\""),
        malformed_with(
            "intent",
            "a `“` string is never closed by a `”` before the end of the doc comment",
            "close a `“` string with `”`",
            "@intent(“never closed\"",
        )
    );
    // The excerpt of a call that swallowed later lines collapses their line breaks.
    let errors = variant_errors("a", &[" @intent(\"open", " * more text"]);
    assert!(errors[0]
        .to_string()
        .ends_with("; in `@intent(\"open more text`"));
}

#[test]
fn d1_unclosed_list() {
    assert_eq!(
        one_error("a", " @emits(\"a\", \"b\""),
        malformed(
            "emits",
            "the argument list is never closed (missing `)`)",
            "@emits(\"a\", \"b\"",
        )
    );
    assert_eq!(code("a", " @intent("), "D1");
    assert_eq!(code("a", " @humanOnly("), "D1");
}

#[test]
fn d7_arity() {
    // §8.3 #40
    assert_eq!(
        one_error("a", " @intent(\"a\", \"b\")"),
        malformed(
            "intent",
            "expected exactly 1 quoted argument, found 2",
            "@intent(\"a\", \"b\")"
        )
    );
    assert_eq!(
        one_error("a", " @emits()"),
        malformed(
            "emits",
            "expected at least 1 quoted arguments, found 0",
            "@emits()"
        )
    );
    assert_eq!(
        one_error("a", " @routeGated(\"a\", \"b\", \"c\")"),
        malformed(
            "routeGated",
            "expected 1–2 quoted arguments, found 3",
            "@routeGated(\"a\", \"b\", \"c\")"
        )
    );
    assert_eq!(code("a", " @routeGated()"), "D7c");
    assert_eq!(code("a", " @example()"), "D7a");
    assert_eq!(code("a", " @warning(\"a\",\"b\",)"), "D7a");
}

#[test]
fn d4_bracket_for_other_tags() {
    // §8.3 #41
    for tag in ["intent", "warning", "routeGated", "emits"] {
        let line = format!(" @{tag}({{\"a\":1}})");
        assert_eq!(
            one_error("a", &line),
            malformed(
                tag,
                "expected a quoted string argument, found `{`",
                &format!("@{tag}({{\"a\":1}})")
            )
        );
    }
    assert_eq!(code("a", " @intent(x)"), "D4");
    assert_eq!(code("a", " @emits(\"a\", 'b')"), "D4");
    assert_eq!(code("a", " @emits(,)"), "D4");
}

#[test]
fn d3_d2_json_literals() {
    // §8.3 #42
    let message = one_error("a", " @example({not json})");
    assert_eq!(
        message,
        malformed(
            "example",
            "the JSON literal is not valid JSON",
            "@example({not json})"
        )
        .replace("help: ", "help: key must be a string at line 1 column 2: ")
    );
    assert_eq!(code("select", " @example({'type':'select'})"), "D3");
    assert_eq!(code("a", " @example({\"a\":1,})"), "D3");
    assert_eq!(
        one_error("a", " @example({\"a\":1)"),
        malformed(
            "example",
            "the `{` is never balanced before the end of the doc comment",
            "@example({\"a\":1)"
        )
    );
    assert_eq!(
        one_error("a", " @example({\"a\":[1})"),
        malformed(
            "example",
            "the `{` is never balanced before the end of the doc comment",
            "@example({\"a\":[1})"
        )
    );
    assert_eq!(
        one_error("a", " @example([1, 2"),
        malformed(
            "example",
            "the `[` is never balanced before the end of the doc comment",
            "@example([1, 2"
        )
    );
}

#[test]
fn d8_quoted_example_not_json() {
    // §8.3 #43
    assert_eq!(
        one_error("a", " @example(\"\")"),
        malformed(
            "example",
            "the quoted example is not valid JSON",
            "@example(\"\")"
        )
        .replace(
            "help: ",
            "help: EOF while parsing a value at line 1 column 0: "
        )
    );
    assert_eq!(code("inc", " @example(\"{ type: 'inc' }\")"), "D8");
}

#[test]
fn e5_example_names_another_variant() {
    // §8.3 #44
    assert_eq!(
        one_error("inc", r#" @example({"type":"dec"})"#),
        "`@example` has \"type\": \"dec\", but the variant's wire name is \"inc\"\n\
         help: write \"type\":\"inc\" in the example, or leave \"type\" out"
    );
    assert_eq!(
        one_error("inc", r#" @example("{\"type\":3}")"#),
        "`@example` has \"type\": 3, but the variant's wire name is \"inc\"\n\
         help: write \"type\":\"inc\" in the example, or leave \"type\" out"
    );
}

#[test]
fn e6_e7_texts() {
    // §8.3 #45: the derive runs the CEL parser; the text is formatted here.
    let parser = "ERROR: <input>:1:7: Syntax error: no viable alternative at input '.'\n | state.\n | ......^";
    let error = TagError::invalid_cel(3, Tag::RouteGated, parser);
    assert_eq!(error.code(), "E6");
    assert_eq!(
        error.to_string(),
        "`@routeGated` expression is not valid CEL\n\
         help: ERROR: <input>:1:7: Syntax error: no viable alternative at input '.'"
    );
    let error = TagError::invalid_cel(0, Tag::Validates, "oops");
    assert_eq!(error.code(), "E7");
    assert_eq!(
        error.to_string(),
        "`@validates` expression is not valid CEL\nhelp: oops"
    );
}

#[test]
fn e8_field_tag_on_variant() {
    // §8.3 #46
    assert_eq!(
        one_error("a", " @should(\"x\")"),
        "`@should` is a field tag, not a variant tag\nhelp: put it on a field of this variant"
    );
    assert_eq!(code("a", " @validates(\"v > 0\")"), "E8");
    // A prose mention in backticks is fine.
    assert!(super::variant("a", &[" the `@should` tag goes on fields"]).is_default());
}

#[test]
fn d9_flag_with_arguments() {
    // §8.3 #47
    assert_eq!(
        one_error("a", " @requiresConfirm(true)"),
        malformed_with(
            "requiresConfirm",
            "flag tags take no arguments, found `t`",
            "write the flag alone, without arguments",
            "@requiresConfirm(true)"
        )
    );
    assert_eq!(code("a", " @humanOnly (see below)"), "D9");
}

#[test]
fn e11_tags_on_the_enum() {
    // §8.3 #50
    let errors = check_enum_doc(&doc(&[" The messages.", " @intent(\"x\")"]));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].offset, "The messages.\n".len());
    assert_eq!(
        errors[0].to_string(),
        "agent tags belong on variants and fields, not on the enum itself\n\
         help: move the tag to a variant or a field, or put it in backticks to mention it"
    );
    assert_eq!(check_enum_doc("@humanOnly and @should(\"x\")").len(), 2);
    // Every known tag outside backticks counts, prose mentions included.
    assert_eq!(check_enum_doc("Use the @intent tag on variants").len(), 1);
    assert!(check_enum_doc("Use the `@intent` tag on variants; mail a@b.c").is_empty());
    assert_eq!(check_enum_doc("@intnet(\"x\")")[0].code(), "E4");
}

#[test]
fn every_error_of_a_doc_is_reported() {
    // §8.3 #51
    let errors = variant_errors(
        "a",
        &[
            " @intent(\"this string is far too long to be shown in one excerpt\", \"x\")",
            " @requiresConfirm(yes) @warning(\"ok\")",
            " @emits(\"a\"",
        ],
    );
    let codes: Vec<_> = errors.iter().map(TagError::code).collect();
    assert_eq!(codes, ["D7a", "D9", "D1"]);
    assert_eq!(
        errors[0].to_string(),
        malformed(
            "intent",
            "expected exactly 1 quoted argument, found 2",
            "@intent(\"this string is far too long to be shown in one exc…"
        )
    );
    // After a broken call the scan resumes after its `)` on the same line.
    let errors = variant_errors("a", &[" @intent(x) @warning(y)", " @emits(z"]);
    let codes: Vec<_> = errors.iter().map(TagError::code).collect();
    assert_eq!(codes, ["D4", "D4", "D4"]);
    // ... or at the end of the line.
    let errors = variant_errors("a", &[" @intent(\"a\" b", " @humanOnly @agentOnly"]);
    let codes: Vec<_> = errors.iter().map(TagError::code).collect();
    assert_eq!(codes, ["D6", "E1"]);
}

#[test]
fn excerpt_rules() {
    use crate::tags::excerpt;
    assert_eq!(
        excerpt("@emits(\"a\",\n   *   \"b\")"),
        "@emits(\"a\", \"b\")"
    );
    assert_eq!(
        excerpt("@emits(\"a\",  \t\"b\")"),
        "@emits(\"a\",  \t\"b\")"
    );
    assert_eq!(excerpt("@intent(\"x\n\n * \n"), "@intent(\"x");
    let sixty = format!("@{}", "a".repeat(59));
    assert_eq!(excerpt(&sixty), sixty);
    let long = format!("@{}", "é".repeat(60));
    assert_eq!(excerpt(&long), format!("@{}…", "é".repeat(58)));
}

#[test]
fn derive_level_texts() {
    let text = |kind: TagErrorKind| kind.to_string();
    assert_eq!(
        text(TagErrorKind::FieldWithoutWireName { tag: Tag::Should }),
        "`@should` needs a field with its own wire name\n\
         help: flattened, skipped and newtype payload fields have no wire name: tag the fields of the inner struct"
    );
    assert_eq!(
        text(TagErrorKind::TupleVariant),
        "tuple variants are not supported by #[derive(AgentMsg)]\n\
         help: use a struct variant `V { … }`, a unit variant, or a newtype variant holding a struct"
    );
    assert_eq!(
        text(TagErrorKind::NotInternallyTagged),
        "#[derive(AgentMsg)] needs an internally tagged enum\nhelp: add #[serde(tag = \"type\")]"
    );
    assert_eq!(
        text(TagErrorKind::WrongTagName {
            found: "kind".into()
        }),
        "the LAP discriminant is \"type\", found tag = \"kind\"\nhelp: use #[serde(tag = \"type\")]"
    );
    assert_eq!(
        text(TagErrorKind::NewtypeNotStruct {
            ty: "Vec<String>".into()
        }),
        "a newtype variant must hold a struct: serde cannot tag a `Vec<String>` payload\n\
         help: use a struct variant `V { … }`, or wrap the payload in a struct"
    );
    assert_eq!(Detail::UnclosedCurlyString.code(), "D5c");
}
