//! §8.2: field tags (the grammar part; the rich-field shape is the schema builder's).

use super::{doc, field};
use crate::annotations::FieldTags;
use crate::tags::{parse_field_doc, parse_nested_field_doc, TagErrorKind};

#[test]
fn should_gives_the_hint() {
    // §8.2 #28, #29
    assert_eq!(
        field(&[" @should(\"why the change\")"]),
        FieldTags {
            hint: Some("why the change".into()),
            validates: None
        }
    );
}

#[test]
fn validates_gives_the_expression() {
    // §8.2 #30
    let tags = field(&[" @validates(\"v >= 0 && v <= 100\")"]);
    assert_eq!(tags.validates.as_deref(), Some("v >= 0 && v <= 100"));
    assert_eq!(tags.hint, None);
}

#[test]
fn both_field_tags() {
    // §8.2 #31
    let tags = field(&[
        " @should(\"Cite the source.\")",
        " @validates(\"size(v) > 0\")",
    ]);
    assert_eq!(tags.hint.as_deref(), Some("Cite the source."));
    assert_eq!(tags.validates.as_deref(), Some("size(v) > 0"));
}

#[test]
fn regex_survives_untouched() {
    // §8.2 #32
    let tags = field(&[r#" @validates("v.matches(r'^\d{5}$')")"#]);
    assert_eq!(tags.validates.as_deref(), Some(r"v.matches(r'^\d{5}$')"));
}

#[test]
fn curly_hint() {
    // §8.2 #33
    assert_eq!(
        field(&[" @should(“curly hint”)"]).hint.as_deref(),
        Some("curly hint")
    );
}

#[test]
fn no_tags() {
    // §8.2 #34
    assert!(field(&[]).is_empty());
    assert!(field(&[" The title. Mention the `@should` tag in prose."]).is_empty());
}

#[test]
fn a_repeated_field_tag_is_e19() {
    let text = doc(&[
        " @should(\"a\") @validates(\"x\")",
        " @should(\"b\") @validates(\"y\")",
    ]);
    let errors = parse_field_doc(&text).unwrap_err();
    let codes: Vec<_> = errors.iter().map(|e| e.code()).collect();
    assert_eq!(codes, ["E19", "E19"]);
    assert_eq!(errors[0].first, Some(0));
    assert_eq!(
        errors[0].to_string(),
        "`@should` is written twice (doc lines 1 and 2)\n\
         help: only one `@should` counts: keep one and remove the other"
    );
    // Nested docs get the same check.
    assert_eq!(
        parse_nested_field_doc("@validates(\"v > 0\")\n@validates(\"v < 9\")").unwrap_err()[0]
            .code(),
        "E19"
    );
}

#[test]
fn variant_tags_on_a_field_are_e9() {
    // §8.3 #46
    for (line, tag) in [
        (" @intent(\"x\")", "@intent"),
        (" @humanOnly", "@humanOnly"),
        (" @requiresConfirm()", "@requiresConfirm"),
    ] {
        let errors = parse_field_doc(&doc(&[line])).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code(), "E9");
        assert_eq!(
            errors[0].to_string(),
            format!(
                "`{tag}` is a variant tag: it has no meaning on a field\n\
                 help: put it on the variant that holds this field"
            )
        );
    }
    // A prose mention of a tag belongs in backticks.
    assert!(field(&[" Set by the `@intent` tag"]).is_empty());
}

#[test]
fn field_errors_are_e4_and_malformed_calls() {
    let errors = parse_field_doc(&doc(&[" @Should(\"x\") @validates(\"v\", \"w\")"])).unwrap_err();
    let codes: Vec<_> = errors.iter().map(|e| e.code()).collect();
    assert_eq!(codes, ["E4", "D7a"]);
    assert_eq!(
        errors[0].to_string(),
        "unknown agent tag `@Should`; did you mean `@should`?\n\
         help: write `@should`, or put the word in backticks if it is not meant as a tag"
    );
}

#[test]
fn nested_fields_ignore_other_tags() {
    // §7.4: only @should/@validates are interpreted; other tags are ignored.
    let text = "The id.\n@intent(\"x\") @humanOnly @Intnet(\"y\")\n@should(\"the row id\")";
    let tags = parse_nested_field_doc(text).unwrap();
    assert_eq!(tags.hint.as_deref(), Some("the row id"));
    assert!(parse_field_doc(text).is_err());
    // A near miss of a field tag is an error there too.
    let errors = parse_nested_field_doc("The id.\n@Should(\"y\")").unwrap_err();
    assert_eq!(errors[0].code(), "E4");
    // Text inside an ignored call is still not scanned.
    let tags = parse_nested_field_doc("@intent(\"@should(\\\"no\\\")\")").unwrap();
    assert!(tags.is_empty());
}

#[test]
fn nested_fields_still_reject_malformed_field_tags() {
    // §7.4, §8.4 #67 (the CEL part is checked by the caller)
    let errors = parse_nested_field_doc("@validates(v > 0)").unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        &errors[0].kind,
        TagErrorKind::Malformed { tag, .. } if tag == "validates"
    ));
    assert_eq!(errors[0].code(), "D4");
    // A malformed variant tag there is ignored.
    assert!(parse_nested_field_doc("@intent(x) @humanOnly(1)")
        .unwrap()
        .is_empty());
}
