//! What is wrong in a doc text or a derived enum, and the message texts (`docs/annotations.md` §6).
//!
//! Every message has a first line of at most 100 chars saying what is wrong and, when there
//! is something to do about it, a second line starting with `help: ` saying how to fix it.

use std::fmt;

use super::detail::Detail;
use super::tag::Tag;

/// The general advice of a malformed `@example` call.
const ADVICE_EXAMPLE: &str =
    "the argument must be a quoted string or a JSON object/array literal, e.g. `@example({\"type\":\"inc\"})`";
/// The general advice of every other malformed call.
const ADVICE_OTHER: &str =
    "arguments are quoted strings; escape an inner quote as `\\\"` or use single quotes inside";

/// How a tag occurrence sits in the prose around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Right after punctuation (`(@humanOnly`, `**@humanOnly`, `"@humanOnly`).
    GluedBefore(char),
    /// A flag directly followed by punctuation (`@humanOnly.`, `@humanOnly**`).
    GluedAfter(char),
    /// After prose on the same line (`Only admins, @humanOnly`).
    InSentence,
}

/// What is wrong: a malformed call (§6.1, D1 … D9) or one of the other errors (E1 …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagErrorKind {
    /// §6.1: a malformed call.
    Malformed {
        /// The tag name as written (without `@`).
        tag: String,
        /// What is wrong.
        detail: Detail,
        /// The call text, whitespace-collapsed and truncated (see [`super::excerpt`]).
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
    /// E17: a known tag glued to punctuation, or written after prose on its line: it would
    /// silently read as prose.
    Misplaced {
        /// The tag.
        tag: Tag,
        /// How it sits.
        placement: Placement,
    },
    /// E18: a call tag not followed by `(`.
    CallWithoutList {
        /// The call tag.
        tag: Tag,
    },
    /// E19: a single-valued tag written a second time.
    DuplicateTag {
        /// The tag.
        tag: Tag,
        /// 1-based line of the doc text holding the first occurrence.
        first_line: usize,
        /// 1-based line of the doc text holding this occurrence.
        line: usize,
    },
    /// E20: a CEL expression reads a variable that is not bound for its tag.
    CelScope {
        /// [`Tag::RouteGated`] or [`Tag::Validates`].
        tag: Tag,
        /// The identifier read.
        ident: String,
    },
    /// E21: a CEL expression nested deeper than the evaluator allows.
    CelTooDeep {
        /// [`Tag::RouteGated`] or [`Tag::Validates`].
        tag: Tag,
        /// The allowed nesting depth.
        max: usize,
    },
    /// E23: the enum has lifetime parameters.
    LifetimeEnum,
    /// E24: the enum has no variants.
    EmptyEnum,
    /// E25: two variants read the same wire name.
    DuplicateWireName {
        /// The wire name.
        wire_name: String,
        /// The Rust name of the variant that reads it first.
        first: String,
        /// The Rust name of the later variant.
        second: String,
    },
    /// E26: the `tea_agent_schema` crate path could not be used.
    CratePath {
        /// What was found wrong.
        problem: String,
    },
    /// E27: a state field tag (`@redact`) on a message variant or a message field.
    StateTagInMsg {
        /// The state field tag.
        tag: Tag,
    },
    /// E28: a `@validates` expression does not type-check against the Rust type of its field
    /// (the derive checks fields of plain types: `String`, numbers, `bool`, `Vec<_>`,
    /// `Option<_>`; `docs/annotations.md` §7.9).
    CelType {
        /// [`Tag::Validates`].
        tag: Tag,
        /// What is wrong (the type checker's text, starting with the expression).
        problem: String,
        /// How to fix it.
        fix: String,
    },
}

impl TagErrorKind {
    /// The code of this error (`D1` … `D9` for malformed calls, `E1` … `E28` otherwise; E22 is
    /// unused: generic enums are supported).
    pub fn code(&self) -> &'static str {
        match self {
            TagErrorKind::Malformed { detail, .. } => detail.code(),
            TagErrorKind::HumanAndAgentOnly => "E1",
            TagErrorKind::ConfirmOnHumanOnly => "E2",
            TagErrorKind::AffordableOnHumanOnly => "E3",
            TagErrorKind::UnknownTag { .. } => "E4",
            TagErrorKind::ExampleWrongType { .. } => "E5",
            TagErrorKind::InvalidCel {
                tag: Tag::Validates,
                ..
            } => "E7",
            TagErrorKind::InvalidCel { .. } => "E6",
            TagErrorKind::FieldTagOnVariant { .. } => "E8",
            TagErrorKind::VariantTagOnField { .. } => "E9",
            TagErrorKind::FieldWithoutWireName { .. } => "E10",
            TagErrorKind::TagOnEnum => "E11",
            TagErrorKind::TupleVariant => "E12",
            TagErrorKind::NotInternallyTagged => "E13",
            TagErrorKind::WrongTagName { .. } => "E14",
            TagErrorKind::NotAnEnum => "E15",
            TagErrorKind::NewtypeNotStruct { .. } => "E16",
            TagErrorKind::Misplaced { .. } => "E17",
            TagErrorKind::CallWithoutList { .. } => "E18",
            TagErrorKind::DuplicateTag { .. } => "E19",
            TagErrorKind::CelScope { .. } => "E20",
            TagErrorKind::CelTooDeep { .. } => "E21",
            TagErrorKind::LifetimeEnum => "E23",
            TagErrorKind::EmptyEnum => "E24",
            TagErrorKind::DuplicateWireName { .. } => "E25",
            TagErrorKind::CratePath { .. } => "E26",
            TagErrorKind::StateTagInMsg { .. } => "E27",
            TagErrorKind::CelType { .. } => "E28",
        }
    }

    /// The first line: what is wrong.
    pub fn summary(&self) -> String {
        match self {
            TagErrorKind::Malformed { tag, detail, .. } => {
                format!("malformed `@{tag}(…)`: {detail}")
            }
            TagErrorKind::HumanAndAgentOnly => {
                "`@humanOnly` and `@agentOnly` exclude each other".into()
            }
            TagErrorKind::ConfirmOnHumanOnly => {
                "`@requiresConfirm` has no effect on a `@humanOnly` variant".into()
            }
            TagErrorKind::AffordableOnHumanOnly => {
                "`@alwaysAffordable` has no effect on a `@humanOnly` variant".into()
            }
            TagErrorKind::UnknownTag { name, suggestion } => {
                let name = shorten(name, 30);
                format!("unknown agent tag `@{name}`; did you mean `{suggestion}`?")
            }
            TagErrorKind::ExampleWrongType { found, wire_name } => {
                let found = shorten(found, 20);
                let wire_name = shorten(wire_name, 20);
                format!("`@example` has \"type\": {found}, but the variant's wire name is \"{wire_name}\"")
            }
            TagErrorKind::InvalidCel { tag, .. } => format!("`{tag}` expression is not valid CEL"),
            TagErrorKind::FieldTagOnVariant { tag } => {
                format!("`{tag}` is a field tag, not a variant tag")
            }
            TagErrorKind::VariantTagOnField { tag } => {
                format!("`{tag}` is a variant tag: it has no meaning on a field")
            }
            TagErrorKind::FieldWithoutWireName { tag } => {
                format!("`{tag}` needs a field with its own wire name")
            }
            TagErrorKind::TagOnEnum => {
                "agent tags belong on variants and fields, not on the enum itself".into()
            }
            TagErrorKind::TupleVariant => {
                "tuple variants are not supported by #[derive(AgentMsg)]".into()
            }
            TagErrorKind::NotInternallyTagged => {
                "#[derive(AgentMsg)] needs an internally tagged enum".into()
            }
            TagErrorKind::WrongTagName { found } => {
                let found = shorten(found, 40);
                format!("the LAP discriminant is \"type\", found tag = \"{found}\"")
            }
            TagErrorKind::NotAnEnum => "#[derive(AgentMsg)] only supports enums".into(),
            TagErrorKind::NewtypeNotStruct { ty } => {
                let ty = shorten(ty, 30);
                format!("a newtype variant must hold a struct: serde cannot tag a `{ty}` payload")
            }
            TagErrorKind::Misplaced { tag, placement } => match placement {
                Placement::GluedBefore(c) | Placement::GluedAfter(c) => {
                    format!("`{tag}` is glued to `{c}`, so it would be read as prose")
                }
                Placement::InSentence => {
                    format!("`{tag}` is inside a sentence, so it would be read as prose")
                }
            },
            TagErrorKind::CallWithoutList { tag } => format!("`{tag}` is not followed by `(`"),
            TagErrorKind::DuplicateTag {
                tag,
                first_line,
                line,
            } => format!("`{tag}` is written twice (doc lines {first_line} and {line})"),
            TagErrorKind::CelScope { tag, ident } => {
                let ident = shorten(ident, 30);
                let allowed = scope_variable(*tag);
                format!("`{tag}` reads `{ident}`, but only `{allowed}` is in scope")
            }
            TagErrorKind::CelTooDeep { tag, max } => {
                format!("`{tag}` expression is nested more than {max} levels deep")
            }
            TagErrorKind::LifetimeEnum => {
                "`AgentMsg` needs an owned `'static` message type, found a lifetime parameter"
                    .into()
            }
            TagErrorKind::EmptyEnum => "#[derive(AgentMsg)] needs at least one variant".into(),
            TagErrorKind::DuplicateWireName {
                wire_name,
                first,
                second,
            } => {
                let wire_name = shorten(wire_name, 16);
                let (first, second) = (shorten(first, 16), shorten(second, 16));
                format!("variants `{first}` and `{second}` read the same wire name \"{wire_name}\"")
            }
            TagErrorKind::CratePath { problem } => {
                format!(
                    "cannot use the `tea_agent_schema` crate path: {}",
                    shorten(problem, 50)
                )
            }
            TagErrorKind::StateTagInMsg { tag } => {
                format!("`{tag}` marks a field of the app's state, not part of a message")
            }
            TagErrorKind::CelType { problem, .. } => shorten(problem, 100),
        }
    }

    /// The second line without its `help: ` prefix: how to fix it, when there is advice.
    pub fn help(&self) -> Option<String> {
        let text = match self {
            TagErrorKind::Malformed { tag, detail, excerpt } => {
                let advice = detail.hint().unwrap_or(if tag == Tag::Example.name() {
                    ADVICE_EXAMPLE
                } else {
                    ADVICE_OTHER
                });
                match detail {
                    Detail::InvalidJsonLiteral { error } | Detail::ExampleNotJson { error } => {
                        format!("{error}: {advice}; in `{excerpt}`")
                    }
                    _ => format!("{advice}; in `{excerpt}`"),
                }
            }
            TagErrorKind::HumanAndAgentOnly => {
                "a variant is either human-only or agent-only: keep one of the two".into()
            }
            TagErrorKind::ConfirmOnHumanOnly => {
                "agents can never send a human-only variant: remove `@requiresConfirm`".into()
            }
            TagErrorKind::AffordableOnHumanOnly => {
                "human-only variants are never listed to agents: remove `@alwaysAffordable`".into()
            }
            TagErrorKind::UnknownTag { suggestion, .. } => format!(
                "write `{suggestion}`, or put the word in backticks if it is not meant as a tag"
            ),
            TagErrorKind::ExampleWrongType { wire_name, .. } => {
                format!("write \"type\":\"{wire_name}\" in the example, or leave \"type\" out")
            }
            TagErrorKind::InvalidCel { parser_message, .. } => parser_message.clone(),
            TagErrorKind::FieldTagOnVariant { .. } => "put it on a field of this variant".into(),
            TagErrorKind::VariantTagOnField { .. } => {
                "put it on the variant that holds this field".into()
            }
            TagErrorKind::FieldWithoutWireName { .. } => {
                "flattened, skipped and newtype payload fields have no wire name: tag the fields of the inner struct".into()
            }
            TagErrorKind::TagOnEnum => {
                "move the tag to a variant or a field, or put it in backticks to mention it".into()
            }
            TagErrorKind::TupleVariant => {
                "use a struct variant `V { … }`, a unit variant, or a newtype variant holding a struct".into()
            }
            TagErrorKind::NotInternallyTagged => "add #[serde(tag = \"type\")]".into(),
            TagErrorKind::WrongTagName { .. } => "use #[serde(tag = \"type\")]".into(),
            TagErrorKind::NotAnEnum => {
                "derive it on the `Msg` enum; structs and unions cannot be messages".into()
            }
            TagErrorKind::NewtypeNotStruct { .. } => {
                "use a struct variant `V { … }`, or wrap the payload in a struct".into()
            }
            TagErrorKind::Misplaced { tag, .. } => format!(
                "write `{tag}` at the start of a doc line or after other tags, separated by spaces; \
                 to mention it in prose, put it in backticks"
            ),
            TagErrorKind::CallWithoutList { tag } => {
                let args = if *tag == Tag::Example { "{…}" } else { "\"…\"" };
                format!(
                    "write `{tag}({args})`; to mention the tag in prose, put it in backticks"
                )
            }
            TagErrorKind::DuplicateTag { tag, .. } => {
                format!("only one `{tag}` counts: keep one and remove the other")
            }
            TagErrorKind::CelScope { tag, ident } => {
                let allowed = scope_variable(*tag);
                if *tag == Tag::Validates && ident == "state" {
                    "`@validates` sees only the field's value `v`; a check on the state belongs in `@routeGated`".into()
                } else if *tag == Tag::RouteGated && ident == "v" {
                    "`@routeGated` sees only `state`; a check on a field belongs in `@validates` on that field".into()
                } else {
                    format!("read the value through `{allowed}`, e.g. `{allowed}.{ident}`")
                }
            }
            TagErrorKind::CelTooDeep { .. } => {
                "split the expression, or move the check into the app's update function".into()
            }
            TagErrorKind::LifetimeEnum => {
                "use owned types (`String`, `Vec<T>`) instead of borrowed ones".into()
            }
            TagErrorKind::EmptyEnum => {
                "an app without messages has nothing to offer agents: add a variant".into()
            }
            TagErrorKind::DuplicateWireName { .. } => {
                "give one of them another #[serde(rename = \"…\")]".into()
            }
            TagErrorKind::CratePath { .. } => {
                "write #[agent(crate = \"path::to::tea_agent_schema\")], e.g. \"tea_agent_runtime::tea_agent_schema\"".into()
            }
            TagErrorKind::StateTagInMsg { tag } => format!(
                "put `{tag}` on the field of the state (or of a struct inside it) to hide from agents"
            ),
            // The whole problem when the first line had to cut it.
            TagErrorKind::CelType { problem, fix, .. } if problem.chars().count() > 100 => {
                format!("{problem}; {fix}")
            }
            TagErrorKind::CelType { fix, .. } => fix.clone(),
        };
        Some(text)
    }
}

/// The variable bound for `tag`'s expression: `v` for `@validates`, `state` otherwise.
pub(crate) fn scope_variable(tag: Tag) -> &'static str {
    if tag == Tag::Validates {
        "v"
    } else {
        "state"
    }
}

/// `text` cut to `max` chars (plus `…` when cut), so a first line stays short.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max - 1).collect();
        cut.push('…');
        cut
    }
}

impl fmt::Display for TagErrorKind {
    /// The summary line, then `help: …` on a second line when there is advice.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())?;
        if let Some(help) = self.help() {
            write!(f, "\nhelp: {help}")?;
        }
        Ok(())
    }
}
