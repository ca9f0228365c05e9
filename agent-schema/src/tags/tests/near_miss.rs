//! Issue 11: no near miss of a tag is silent, and every message is short.

use super::{doc, variant, variant_errors};
use crate::annotations::DispatchMode;
use crate::tags::{check_enum_doc, Detail, Placement, Tag, TagErrorKind};

/// The codes of the errors of a one-line variant doc.
fn codes(line: &str) -> Vec<&'static str> {
    variant_errors("a", &[line])
        .iter()
        .map(|e| e.code())
        .collect()
}

#[test]
fn near_miss_names_get_a_suggestion() {
    for (line, known) in [
        (" @requiresConfirmation", Tag::RequiresConfirm),
        (" @requireConfirmation", Tag::RequiresConfirm),
        (" @confirm", Tag::RequiresConfirm),
        (" @confirmed", Tag::RequiresConfirm),
        (" @humanOnlyVariant", Tag::HumanOnly),
        (" @human_only", Tag::HumanOnly),
        (" @affordable", Tag::AlwaysAffordable),
        (" @gated(\"state.x\")", Tag::RouteGated),
        (" @validated(\"v > 0\")", Tag::Validates),
        (" @_humanOnly", Tag::HumanOnly),
    ] {
        let errors = variant_errors("a", &[line]);
        assert_eq!(errors.len(), 1, "{line}");
        assert_eq!(
            errors[0].kind,
            TagErrorKind::UnknownTag {
                name: line.trim_start()[1..].split('(').next().unwrap().to_owned(),
                suggestion: known
            },
            "{line}"
        );
    }
}

#[test]
fn glued_and_in_sentence_tags_are_errors() {
    for (line, placement) in [
        (" (@humanOnly)", Placement::GluedBefore('(')),
        (" **@humanOnly**", Placement::GluedBefore('*')),
        (" @humanOnly.", Placement::GluedAfter('.')),
        (" @humanOnly@agentOnly", Placement::GluedAfter('@')),
        (" Only admins may do this @humanOnly", Placement::InSentence),
        (" Deletes. @intent(\"x\")", Placement::InSentence),
    ] {
        let errors = variant_errors("a", &[line]);
        assert_eq!(errors.len(), 1, "{line}: {errors:#?}");
        assert!(
            matches!(errors[0].kind, TagErrorKind::Misplaced { placement: p, .. } if p == placement),
            "{line}: {errors:#?}"
        );
    }
    assert_eq!(
        variant_errors("a", &[" (@humanOnly)"])[0].to_string(),
        "`@humanOnly` is glued to `(`, so it would be read as prose\n\
         help: write `@humanOnly` at the start of a doc line or after other tags, separated by \
         spaces; to mention it in prose, put it in backticks"
    );
    // List markers and block-comment stars before a tag are fine, and so are other tags.
    let ann = variant("a", &[" - @humanOnly", " * @intent(\"x\") @warning(\"y\")"]);
    assert_eq!(ann.dispatch_mode, DispatchMode::HumanOnly);
    assert_eq!(ann.warning.as_deref(), Some("y"));
    // Prose after a tag on its line is fine.
    assert!(variant("a", &[" @requiresConfirm because it deletes"]).requires_confirm);
}

#[test]
fn call_tags_need_their_list() {
    assert_eq!(codes(" @intent \"x\""), ["E18"]);
    assert_eq!(codes(" @intent: \"x\""), ["E18"]);
    assert_eq!(codes(" @emits"), ["E18"]);
}

#[test]
fn literal_at_signs_that_are_not_tag_like_stay_prose() {
    for line in [
        " Mail support@example.com or ping @alice on chat.",
        " Cost: 3 @ 5 each; see `@humanOnly` and ``@intent(…)``.",
        " Handles like @bob_the_builder and @jane are fine.",
    ] {
        assert!(variant("a", &[line]).is_default(), "{line}");
    }
}

#[test]
fn tag_between_two_fenced_blocks_is_read() {
    let lines = [
        " ```",
        " @agentOnly",
        " ```",
        " @humanOnly",
        " ~~~",
        " @agentOnly",
        " ~~~",
    ];
    assert_eq!(variant("a", &lines).dispatch_mode, DispatchMode::HumanOnly);
}

#[test]
fn error_offsets_after_fenced_lines_point_at_the_tag() {
    let lines = [
        " ```",
        " @intent(",
        " ```",
        " ```",
        " x",
        " ```",
        " @intnet(\"y\")",
    ];
    let errors = variant_errors("a", &lines);
    assert_eq!(errors.len(), 1);
    let text = doc(&lines);
    assert_eq!(errors[0].offset, text.find("@intnet").unwrap());
}

#[test]
fn nothing_inside_a_misspelled_call_is_scanned() {
    assert_eq!(codes(" @intnet(x @humanOnly)"), ["E4"]);
    assert_eq!(codes(" @intnet(\"x\" @humanOnly)"), ["E4"]);
}

#[test]
fn enum_doc_mentions_need_backticks() {
    assert_eq!(check_enum_doc("See the @intent tag.")[0].code(), "E11");
    assert!(check_enum_doc("See the `@intent` tag.").is_empty());
}

#[test]
fn every_first_line_is_short_and_every_message_has_a_fix() {
    let long = "x".repeat(300);
    let kinds = [
        TagErrorKind::Malformed {
            tag: "routeGated".into(),
            detail: Detail::ExpectedCommaOrClose { found: 'a' },
            excerpt: long.clone(),
        },
        TagErrorKind::Malformed {
            tag: "intent".into(),
            detail: Detail::UnclosedCurlyString,
            excerpt: long.clone(),
        },
        TagErrorKind::Malformed {
            tag: "example".into(),
            detail: Detail::InvalidJsonLiteral {
                error: "key must be a string at line 1 column 2".into(),
            },
            excerpt: long.clone(),
        },
        TagErrorKind::HumanAndAgentOnly,
        TagErrorKind::ConfirmOnHumanOnly,
        TagErrorKind::AffordableOnHumanOnly,
        TagErrorKind::UnknownTag {
            name: "requiresConfirmation".into(),
            suggestion: Tag::RequiresConfirm,
        },
        TagErrorKind::ExampleWrongType {
            found: long.clone(),
            wire_name: "aVeryLongWireNameForAVariant".into(),
        },
        TagErrorKind::InvalidCel {
            tag: Tag::RouteGated,
            parser_message: long.clone(),
        },
        TagErrorKind::FieldTagOnVariant {
            tag: Tag::Validates,
        },
        TagErrorKind::VariantTagOnField {
            tag: Tag::AlwaysAffordable,
        },
        TagErrorKind::FieldWithoutWireName {
            tag: Tag::Validates,
        },
        TagErrorKind::TagOnEnum,
        TagErrorKind::TupleVariant,
        TagErrorKind::NotInternallyTagged,
        TagErrorKind::WrongTagName {
            found: long.clone(),
        },
        TagErrorKind::NotAnEnum,
        TagErrorKind::NewtypeNotStruct { ty: long.clone() },
        TagErrorKind::Misplaced {
            tag: Tag::AlwaysAffordable,
            placement: Placement::InSentence,
        },
        TagErrorKind::CallWithoutList {
            tag: Tag::RouteGated,
        },
        TagErrorKind::DuplicateTag {
            tag: Tag::RouteGated,
            first_line: 100,
            line: 200,
        },
        TagErrorKind::CelScope {
            tag: Tag::RouteGated,
            ident: long.clone(),
        },
        TagErrorKind::CelTooDeep {
            tag: Tag::RouteGated,
            max: 32,
        },
        TagErrorKind::LifetimeEnum,
        TagErrorKind::EmptyEnum,
        TagErrorKind::DuplicateWireName {
            wire_name: long.clone(),
            first: "AVeryLongVariantName".into(),
            second: "AnotherVeryLongVariantName".into(),
        },
        TagErrorKind::CratePath { problem: long },
    ];
    for kind in kinds {
        let text = kind.to_string();
        let mut lines = text.lines();
        let first = lines.next().unwrap();
        assert!(first.chars().count() <= 100, "{first}");
        assert!(lines.next().unwrap().starts_with("help: "), "{text}");
        assert!(lines.next().is_none(), "{text}");
    }
}
