//! Tag errors and their exact message texts (`annotations.md` §6).
//!
//! Every message is formatted here, so the derive (compile errors) and the runtime (host
//! construction errors for nested fields) print the same text.

use std::fmt;

use super::kind::TagErrorKind;
use super::tag::Tag;

/// Why a tag call is malformed: the DETAIL of §6.1 (D1 … D9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// D1: the end of the doc text inside the argument list, outside any string or literal.
    UnclosedList,
    /// D2: a JSON literal is not balanced at the end of the doc text, or a closer does not
    /// match its opener. `opener` is the literal's first char (`{` or `[`).
    UnbalancedJson {
        /// `{` or `[`.
        opener: char,
    },
    /// D3: the JSON literal is not valid JSON; `error` is the first line of serde_json's error.
    InvalidJsonLiteral {
        /// First line of the serde_json error.
        error: String,
    },
    /// D4: an argument starts with a char other than a quote (or a bracket for `@example`).
    ExpectedString {
        /// The offending char.
        found: char,
    },
    /// D5: a string opened with `"` is never closed.
    UnclosedString,
    /// D5c: a string opened with `“` is never closed by a `”`.
    UnclosedCurlyString,
    /// D6: after an argument, a char other than `,` or `)`.
    ExpectedCommaOrClose {
        /// The offending char.
        found: char,
    },
    /// D7a: a tag that takes exactly one argument got `found`.
    ExactlyOne {
        /// Number of arguments found.
        found: usize,
    },
    /// D7b: `@emits` got no argument.
    AtLeastOne {
        /// Number of arguments found.
        found: usize,
    },
    /// D7c: `@routeGated` got a number of arguments other than 1 or 2.
    OneOrTwo {
        /// Number of arguments found.
        found: usize,
    },
    /// D8: a quoted `@example` whose value is not JSON; `error` is serde_json's first line.
    ExampleNotJson {
        /// First line of the serde_json error.
        error: String,
    },
    /// D9: a flag followed by a non-empty list; `found` is the first non-space char inside.
    FlagWithArguments {
        /// The offending char.
        found: char,
    },
}

impl Detail {
    /// The code of this detail (`D1` … `D9`, `D5c`, `D7a` …).
    pub fn code(&self) -> &'static str {
        match self {
            Detail::UnclosedList => "D1",
            Detail::UnbalancedJson { .. } => "D2",
            Detail::InvalidJsonLiteral { .. } => "D3",
            Detail::ExpectedString { .. } => "D4",
            Detail::UnclosedString => "D5",
            Detail::UnclosedCurlyString => "D5c",
            Detail::ExpectedCommaOrClose { .. } => "D6",
            Detail::ExactlyOne { .. } => "D7a",
            Detail::AtLeastOne { .. } => "D7b",
            Detail::OneOrTwo { .. } => "D7c",
            Detail::ExampleNotJson { .. } => "D8",
            Detail::FlagWithArguments { .. } => "D9",
        }
    }
}

impl Detail {
    /// What to do about this detail, when something more specific than the tag's general
    /// advice applies.
    pub(crate) fn hint(&self) -> Option<&'static str> {
        match self {
            Detail::ExpectedCommaOrClose { .. } => Some(
                "an unescaped quote inside the string ends it early: escape it as `\\\"` or use single quotes",
            ),
            Detail::UnclosedCurlyString => Some("close a `“` string with `”`"),
            Detail::FlagWithArguments { .. } => Some("write the flag alone, without arguments"),
            _ => None,
        }
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::UnclosedList => f.write_str("the argument list is never closed (missing `)`)"),
            Detail::UnbalancedJson { opener } => write!(
                f,
                "the `{opener}` is never balanced before the end of the doc comment"
            ),
            Detail::InvalidJsonLiteral { .. } => f.write_str("the JSON literal is not valid JSON"),
            Detail::ExpectedString { found } => {
                write!(f, "expected a quoted string argument, found `{found}`")
            }
            Detail::UnclosedString => {
                f.write_str("a quoted string is never closed before the end of the doc comment")
            }
            Detail::UnclosedCurlyString => f.write_str(
                "a `“` string is never closed by a `”` before the end of the doc comment",
            ),
            Detail::ExpectedCommaOrClose { found } => {
                write!(f, "expected `,` or `)` after an argument, found `{found}`")
            }
            Detail::ExactlyOne { found } => {
                write!(f, "expected exactly 1 quoted argument, found {found}")
            }
            Detail::AtLeastOne { found } => {
                write!(f, "expected at least 1 quoted arguments, found {found}")
            }
            Detail::OneOrTwo { found } => {
                write!(f, "expected 1–2 quoted arguments, found {found}")
            }
            Detail::ExampleNotJson { .. } => f.write_str("the quoted example is not valid JSON"),
            Detail::FlagWithArguments { found } => {
                write!(f, "flag tags take no arguments, found `{found}`")
            }
        }
    }
}

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
    /// The exact message text of `annotations.md` §6.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for TagError {}

/// The 1-based line of the doc text `doc` holding byte `offset`.
pub fn line_of(doc: &str, offset: usize) -> usize {
    doc[..offset.min(doc.len())].matches('\n').count() + 1
}

/// The first line of `text` (without its line break).
pub fn first_line(text: &str) -> &str {
    text.split(['\n', '\r']).next().unwrap_or("")
}

/// The EXCERPT of a malformed call (§6.1): every whitespace run that contains a newline
/// (together with one optional `*` after each newline) becomes one space; the result is
/// trimmed; past 60 chars it is cut to its first 59 chars plus `…`.
pub fn excerpt(call_text: &str) -> String {
    let chars: Vec<char> = call_text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_space(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        let mut has_newline = false;
        while i < chars.len() && is_space(chars[i]) {
            if chars[i] == '\n' {
                has_newline = true;
                i += 1;
                while i < chars.len() && matches!(chars[i], ' ' | '\t') {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '*' {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        if has_newline {
            out.push(' ');
        } else {
            out.extend(&chars[start..i]);
        }
    }
    let trimmed = out.trim_matches(is_space);
    if trimmed.chars().count() > 60 {
        let mut cut: String = trimmed.chars().take(59).collect();
        cut.push('…');
        cut
    } else {
        trimmed.to_owned()
    }
}

/// Whitespace of the grammar: space, tab, `\n`, `\r`.
pub(crate) fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}
