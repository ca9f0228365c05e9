//! `@redact`, the state field tag: read on state fields, a clear error in a message.

use super::super::{parse_field_doc, parse_nested_field_doc, parse_state_field_doc};
use super::{doc, variant_errors};

fn state_codes(lines: &[&str]) -> Vec<&'static str> {
    match parse_state_field_doc(&doc(lines)) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.kind.code()).collect(),
    }
}

#[test]
fn redact_is_read_on_state_fields() {
    assert_eq!(
        parse_state_field_doc(&doc(&[" The API key.", " @redact"])),
        Ok(true)
    );
    assert_eq!(parse_state_field_doc(&doc(&[" @redact()"])), Ok(true));
    assert_eq!(parse_state_field_doc(&doc(&[" The API key."])), Ok(false));
    // Other tags, known or not, are not the state's business (types are shared with messages).
    assert_eq!(
        parse_state_field_doc(&doc(&[" @should(\"x\") @intent(\"y\") @alice"])),
        Ok(false)
    );
    // Prose mentions stay prose.
    assert_eq!(parse_state_field_doc(&doc(&[" see `@redact`"])), Ok(false));
}

#[test]
fn near_misses_of_redact_are_errors() {
    assert_eq!(state_codes(&[" @redacted"]), ["E4"]);
    assert_eq!(state_codes(&[" @Redact"]), ["E4"]);
    assert_eq!(state_codes(&[" Hidden (@redact)."]), ["E17"]);
    assert_eq!(state_codes(&[" Never shown, @redact"]), ["E17"]);
    assert_eq!(state_codes(&[" @redact(\"x\")"]), ["D9"]);
    let errors = parse_state_field_doc(&doc(&[" @redacted"])).unwrap_err();
    assert!(
        errors[0].to_string().contains("did you mean `@redact`?"),
        "{}",
        errors[0]
    );
}

#[test]
fn redact_in_a_message_is_a_clear_error() {
    let errors = variant_errors("a", &[" @intent(\"x\")", " @redact"]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].kind.code(), "E27");
    assert_eq!(
        errors[0].to_string(),
        "`@redact` marks a field of the app's state, not part of a message\n\
         help: put `@redact` on the field of the state (or of a struct inside it) to hide from agents"
    );
    let errors = parse_field_doc(&doc(&[" @redact"])).unwrap_err();
    assert_eq!(errors[0].kind.code(), "E27");
    // Nested payload types may be shared with the state: their `@redact` is not read there.
    assert_eq!(
        parse_nested_field_doc(&doc(&[" @redact"])),
        Ok(Default::default())
    );
}
