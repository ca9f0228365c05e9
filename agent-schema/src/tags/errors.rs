//! Tag errors and their exact message texts (`annotations.md` §6).
//!
//! Every message is formatted here, so the derive (compile errors) and the runtime (host
//! construction errors for nested fields) print the same text.

use std::fmt;

use super::tag::Tag;

/// The advice appended to a malformed `@example` call.
const ADVICE_EXAMPLE: &str = "The argument must be a quoted string or a JSON object/array literal (e.g. `@example({\"type\":\"inc\"})`).";
/// The advice appended to every other malformed call.
const ADVICE_OTHER: &str = "Arguments must be quoted strings; escape an embedded quote as `\\\"` (e.g. `@tag(\"v == \\\"admin\\\"\")`) or use single quotes inside the string.";
/// The closing sentence of every malformed-call message.
const REFUSAL: &str = "The derive refuses to guess: a half-read predicate would open a `@routeGated` gate or make `@validates` accept everything.";

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

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::UnclosedList => f.write_str("the argument list is never closed (missing `)`)"),
            Detail::UnbalancedJson { opener } => write!(
                f,
                "the `{opener}` is never balanced before the end of the doc comment"
            ),
            Detail::InvalidJsonLiteral { error } => {
                write!(f, "the JSON literal is not valid JSON ({error})")
            }
            Detail::ExpectedString { found } => {
                write!(f, "expected a quoted string argument, found `{found}`")
            }
            Detail::UnclosedString => {
                f.write_str("a quoted string is never closed before the end of the doc comment")
            }
            Detail::UnclosedCurlyString => f.write_str(
                "a quoted string is never closed before the end of the doc comment (a `“` must be closed by a `”`)",
            ),
            Detail::ExpectedCommaOrClose { found } => write!(
                f,
                "expected `,` or `)` after an argument, found `{found}` (an unescaped quote inside the string ends it early)"
            ),
            Detail::ExactlyOne { found } => {
                write!(f, "expected exactly 1 quoted argument, found {found}")
            }
            Detail::AtLeastOne { found } => {
                write!(f, "expected at least 1 quoted arguments, found {found}")
            }
            Detail::OneOrTwo { found } => {
                write!(f, "expected 1–2 quoted arguments, found {found}")
            }
            Detail::ExampleNotJson { error } => {
                write!(f, "the quoted example is not valid JSON ({error})")
            }
            Detail::FlagWithArguments { found } => {
                write!(f, "flag tags take no arguments, found `{found}`")
            }
        }
    }
}

/// What is wrong: one of the errors of §6.1 (`Malformed`) or §6.2 (E1 … E16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagErrorKind {
    /// §6.1: a malformed call.
    Malformed {
        /// The tag name as written (without `@`).
        tag: String,
        /// What is wrong.
        detail: Detail,
        /// The call text, whitespace-collapsed and truncated (see [`excerpt`]).
        excerpt: String,
    },
    /// E1: `@humanOnly` and `@agentOnly` on one variant.
    HumanAndAgentOnly,
    /// E2: `@requiresConfirm` on a `@humanOnly` variant.
    ConfirmOnHumanOnly,
    /// E3: `@alwaysAffordable` on a `@humanOnly` variant.
    AffordableOnHumanOnly,
    /// E4: an unknown tag close to a known one.
    UnknownTag {
        /// The name as written (without `@`).
        name: String,
        /// The closest known tag.
        suggestion: Tag,
    },
    /// E5: an `@example` object whose `"type"` is not the variant's wire name.
    ExampleWrongType {
        /// The compact JSON text of the example's `"type"` value.
        found: String,
        /// The variant's wire name.
        wire_name: String,
    },
    /// E6 (`@routeGated`) / E7 (`@validates`): the expression is not valid CEL.
    InvalidCel {
        /// [`Tag::RouteGated`] or [`Tag::Validates`].
        tag: Tag,
        /// The first line of the CEL parser's error text.
        parser_message: String,
    },
    /// E8: a field tag on a variant.
    FieldTagOnVariant {
        /// The field tag.
        tag: Tag,
    },
    /// E9: a variant tag on a field.
    VariantTagOnField {
        /// The variant tag.
        tag: Tag,
    },
    /// E10: a field tag on a field without its own wire name (flatten, skip, newtype payload).
    FieldWithoutWireName {
        /// The field tag.
        tag: Tag,
    },
    /// E11: a known tag in the enum's own doc comment.
    TagOnEnum,
    /// E12: a tuple variant with zero or several fields.
    TupleVariant,
    /// E13: the enum is not internally tagged.
    NotInternallyTagged,
    /// E14: internally tagged with a tag other than `"type"`.
    WrongTagName {
        /// The tag name found.
        found: String,
    },
    /// E15: the derive is used on something other than an enum.
    NotAnEnum,
    /// E16: a newtype variant whose payload type is not a struct.
    NewtypeNotStruct {
        /// The payload type as written.
        ty: String,
    },
}

impl TagErrorKind {
    /// The code of this error (`D1` … `D9` for malformed calls, `E1` … `E16` otherwise).
    pub fn code(&self) -> &'static str {
        match self {
            TagErrorKind::Malformed { detail, .. } => detail.code(),
            TagErrorKind::HumanAndAgentOnly => "E1",
            TagErrorKind::ConfirmOnHumanOnly => "E2",
            TagErrorKind::AffordableOnHumanOnly => "E3",
            TagErrorKind::UnknownTag { .. } => "E4",
            TagErrorKind::ExampleWrongType { .. } => "E5",
            TagErrorKind::InvalidCel { tag, .. } => {
                if *tag == Tag::Validates {
                    "E7"
                } else {
                    "E6"
                }
            }
            TagErrorKind::FieldTagOnVariant { .. } => "E8",
            TagErrorKind::VariantTagOnField { .. } => "E9",
            TagErrorKind::FieldWithoutWireName { .. } => "E10",
            TagErrorKind::TagOnEnum => "E11",
            TagErrorKind::TupleVariant => "E12",
            TagErrorKind::NotInternallyTagged => "E13",
            TagErrorKind::WrongTagName { .. } => "E14",
            TagErrorKind::NotAnEnum => "E15",
            TagErrorKind::NewtypeNotStruct { .. } => "E16",
        }
    }
}

impl fmt::Display for TagErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagErrorKind::Malformed { tag, detail, excerpt } => {
                let advice = if tag == Tag::Example.name() {
                    ADVICE_EXAMPLE
                } else {
                    ADVICE_OTHER
                };
                write!(
                    f,
                    "Malformed `@{tag}(…)` annotation — {detail}: `{excerpt}`. {advice} {REFUSAL}"
                )
            }
            TagErrorKind::HumanAndAgentOnly => f.write_str(
                "`@humanOnly` and `@agentOnly` exclude each other: a variant is either human-only or agent-only",
            ),
            TagErrorKind::ConfirmOnHumanOnly => f.write_str(
                "`@requiresConfirm` has no effect on a `@humanOnly` variant: agents can never send it",
            ),
            TagErrorKind::AffordableOnHumanOnly => f.write_str(
                "`@alwaysAffordable` has no effect on a `@humanOnly` variant: human-only variants are never listed to agents",
            ),
            TagErrorKind::UnknownTag { name, suggestion } => {
                write!(f, "unknown agent tag `@{name}`; did you mean `{suggestion}`?")
            }
            TagErrorKind::ExampleWrongType { found, wire_name } => write!(
                f,
                "this `@example` has \"type\": {found} but the variant's wire name is \"{wire_name}\""
            ),
            TagErrorKind::InvalidCel {
                tag,
                parser_message,
            } => write!(
                f,
                "`{tag}` expression is not valid CEL: {parser_message}"
            ),
            TagErrorKind::FieldTagOnVariant { tag } => {
                write!(f, "`{tag}` is a field tag: put it on a field of this variant")
            }
            TagErrorKind::VariantTagOnField { tag } => {
                write!(f, "`{tag}` is a variant tag: it has no meaning on a field")
            }
            TagErrorKind::FieldWithoutWireName { tag } => {
                write!(f, "`{tag}` needs a field with its own wire name")
            }
            TagErrorKind::TagOnEnum => f.write_str(
                "agent tags belong on variants and fields, not on the enum itself",
            ),
            TagErrorKind::TupleVariant => f.write_str(
                "tuple variants are not supported by #[derive(AgentMsg)]: use a struct variant `V { … }`, a unit variant, or a newtype variant holding a struct",
            ),
            TagErrorKind::NotInternallyTagged => f.write_str(
                "#[derive(AgentMsg)] needs an internally tagged enum: add #[serde(tag = \"type\")]",
            ),
            TagErrorKind::WrongTagName { found } => write!(
                f,
                "the LAP discriminant is \"type\": use #[serde(tag = \"type\")] (found tag = \"{found}\")"
            ),
            TagErrorKind::NotAnEnum => f.write_str("#[derive(AgentMsg)] only supports enums"),
            TagErrorKind::NewtypeNotStruct { ty } => write!(
                f,
                "a newtype variant must hold a struct: serde cannot tag a `{ty}` payload; use a struct variant `V {{ … }}`"
            ),
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
}

impl TagError {
    /// An error at `offset`.
    pub fn new(offset: usize, kind: TagErrorKind) -> TagError {
        TagError { offset, kind }
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
