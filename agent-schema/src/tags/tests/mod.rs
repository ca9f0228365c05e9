//! Unit tests of the tag grammar, following the acceptance list of `docs/annotations.md` §8.1–§8.3.

mod doc;
mod errors;
mod fields;
mod grammar;
mod near_miss;
mod redact;
mod suggest;
mod variants;

use super::{doc_text, parse_field_doc, parse_variant_doc, TagError};
use crate::annotations::{FieldTags, MessageAnnotations};

/// The doc text of `///` lines (each written as it follows the `///`, leading space included).
fn doc(lines: &[&str]) -> String {
    doc_text(lines.iter().copied()).text
}

/// The record of a variant with wire name `wire` and these `///` lines; panics on errors.
fn variant(wire: &str, lines: &[&str]) -> MessageAnnotations {
    let text = doc(lines);
    match parse_variant_doc(&text, wire) {
        Ok(ann) => ann,
        Err(errors) => panic!("unexpected errors for {text:?}: {errors:#?}"),
    }
}

/// The errors of a variant with wire name `wire` and these `///` lines; panics on success.
fn variant_errors(wire: &str, lines: &[&str]) -> Vec<TagError> {
    let text = doc(lines);
    match parse_variant_doc(&text, wire) {
        Ok(ann) => panic!("expected errors for {text:?}, got {ann:?}"),
        Err(errors) => errors,
    }
}

/// The single error message of a variant doc of one `///` line.
fn one_error(wire: &str, line: &str) -> String {
    let errors = variant_errors(wire, &[line]);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors[0].to_string()
}

/// The tags of a field with these `///` lines; panics on errors.
fn field(lines: &[&str]) -> FieldTags {
    let text = doc(lines);
    match parse_field_doc(&text) {
        Ok(tags) => tags,
        Err(errors) => panic!("unexpected errors for {text:?}: {errors:#?}"),
    }
}

/// A string slice list as owned strings.
fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}
