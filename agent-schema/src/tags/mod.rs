//! The agent tag grammar (`docs/annotations.md` §1–§6), shared by `#[derive(AgentMsg)]` at compile
//! time and by the schema builder at run time (tags on nested fields, read from schemars
//! descriptions).
//!
//! - [`doc_text`] builds an item's doc text from its `#[doc]` values.
//! - [`parse_variant_doc`], [`parse_field_doc`], [`parse_nested_field_doc`] and
//!   [`check_enum_doc`] read the tags of a variant, a field, a nested field and the enum;
//!   [`parse_state_field_doc`] reads `@redact` on a field of the app's state.
//! - [`cel_sources`] lists the CEL expressions to syntax-check (this crate has no CEL
//!   parser; the caller reports failures with [`TagError::invalid_cel`]).
//! - [`cel`] checks the expressions: syntax, nesting depth and scope (`v` for `@validates`,
//!   `state` for `@routeGated`), parsing on a big-stack thread.
//! - [`TagError`] carries the byte offset of the offending `@`; its text is a first line of
//!   at most 100 chars saying what is wrong and a `help:` line with the fix.
//!
//! # No near miss is silent
//!
//! An `@` followed by an identifier is tag-like unless a letter, digit or `_` precedes it
//! (`support@example.com`) or it sits in an inline code span (backticks, closed on the same
//! line) or a fenced code block. A tag-like name is then:
//!
//! - a known tag standing where tags stand (start of a doc line, after other tags or a list
//!   marker, separated by whitespace): read;
//! - a known tag glued to punctuation (`(@humanOnly)`, `"@humanOnly"`, `@humanOnly.`) or after
//!   prose on its line: E17;
//! - a call tag not followed by `(`: E18;
//! - a single-valued tag written a second time: E19, naming both lines;
//! - an unknown name close to a known one ([`suggest`]): E4;
//! - any other name (`@alice`, `@see`): prose.
//!
//! ```
//! use tea_agent_schema::tags::{doc_text, parse_variant_doc};
//!
//! let doc = doc_text([" Removes a row.", " @intent(\"Delete a row\") @requiresConfirm"]);
//! let ann = parse_variant_doc(&doc.text, "deleteRow").unwrap();
//! assert_eq!(ann.intent.as_deref(), Some("Delete a row"));
//! assert!(ann.requires_confirm);
//! ```

mod args;
pub mod cel;
mod cursor;
mod detail;
mod doc;
mod errors;
mod json_form;
mod kind;
mod records;
mod scanner;
pub(crate) mod suggest;
mod tag;
mod text;

#[cfg(test)]
mod tests;

pub use detail::Detail;
pub use doc::{doc_text, DocText};
pub use errors::TagError;
pub use kind::{Placement, TagErrorKind};
pub use records::{
    cel_sources, check_enum_doc, parse_field_doc, parse_nested_field_doc, parse_state_field_doc,
    parse_variant_doc, written_tags, CelSource,
};
pub use scanner::prose_of;
pub use suggest::{osa_distance, suggest};
pub use tag::Tag;
pub use text::{excerpt, first_line, line_of};
