//! Why a tag call is malformed: the DETAIL of `docs/annotations.md` §6.1 (D1 … D9) and its text.
//!
//! Layering: depends on nothing else in `tags`; `kind` (E3's detail), `errors`, `cursor`,
//! `args`, `json_form`, `scanner` and `records` use it.

use std::fmt;

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
