//! A tag error: what is wrong ([`TagErrorKind`]) and where in the doc text (`docs/annotations.md`
//! §6). Its text is its kind's, so the derive (compile errors) and the runtime (host
//! construction errors for nested fields) print the same text.
//!
//! Layering: depends on `kind` (the error kinds and their texts), `tag` and `text`. The call
//! details (D1 … D9) are in `detail` and the text helpers (`first_line`, `excerpt` …) in
//! `text`, both below `kind`, so `kind` never reaches back here.

use std::fmt;

use super::kind::TagErrorKind;
use super::tag::Tag;
use super::text::first_line;

/// One error found in a doc text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagError {
    /// Byte offset, in the doc text, of the `@` of the offending tag. (Errors that are not
    /// about a doc text, E12 … E16, use 0.)
    pub offset: usize,
    /// What is wrong.
    pub kind: TagErrorKind,
    /// For an error about a repeated tag, the byte offset of the first occurrence.
    pub first: Option<usize>,
}

impl TagError {
    /// An error at `offset`.
    pub fn new(offset: usize, kind: TagErrorKind) -> TagError {
        TagError {
            offset,
            kind,
            first: None,
        }
    }

    /// The same error, also pointing at the first occurrence of a repeated tag.
    pub fn with_first(mut self, first: usize) -> TagError {
        self.first = Some(first);
        self
    }

    /// E6/E7 for the expression of `tag` at `offset`; only the first line of
    /// `parser_error` is kept, so the message stays on one line.
    pub fn invalid_cel(offset: usize, tag: Tag, parser_error: &str) -> TagError {
        TagError::new(
            offset,
            TagErrorKind::InvalidCel {
                tag,
                parser_message: first_line(parser_error).to_owned(),
            },
        )
    }

    /// The code of this error (see [`TagErrorKind::code`]).
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}

impl fmt::Display for TagError {
    /// The exact message text of `docs/annotations.md` §6.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for TagError {}
