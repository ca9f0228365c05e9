//! The known agent tags (the table of `docs/annotations.md` §2).

use std::fmt;

/// One known agent tag. The declaration order is the row order of the tag table; it breaks
/// ties when suggesting a tag for a misspelled name (E4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    /// `@intent("…")`: what the variant is for.
    Intent,
    /// `@requiresConfirm`: a human confirms before the message is applied.
    RequiresConfirm,
    /// `@humanOnly`: agents may never send it.
    HumanOnly,
    /// `@agentOnly`: offered to agents even without a UI binding.
    AgentOnly,
    /// `@alwaysAffordable`: listed to agents whatever the state.
    AlwaysAffordable,
    /// `@example(…)`: an example payload (quoted or JSON literal).
    Example,
    /// `@warning("…")`: shown to agents before they send it.
    Warning,
    /// `@emits("a", …)`: effects this message may start.
    Emits,
    /// `@routeGated("expr", "reason")`: a CEL gate over the state.
    RouteGated,
    /// `@should("…")`: a field hint (field tag).
    Should,
    /// `@validates("expr")`: a CEL check of a field value (field tag).
    Validates,
    /// `@redact`: a field of the app's state that agents never see (state field tag).
    Redact,
}

impl Tag {
    /// Every known tag, in table order.
    pub const ALL: [Tag; 12] = [
        Tag::Intent,
        Tag::RequiresConfirm,
        Tag::HumanOnly,
        Tag::AgentOnly,
        Tag::AlwaysAffordable,
        Tag::Example,
        Tag::Warning,
        Tag::Emits,
        Tag::RouteGated,
        Tag::Should,
        Tag::Validates,
        Tag::Redact,
    ];

    /// The tag name without the `@`, exactly as it must be written.
    pub fn name(self) -> &'static str {
        match self {
            Tag::Intent => "intent",
            Tag::RequiresConfirm => "requiresConfirm",
            Tag::HumanOnly => "humanOnly",
            Tag::AgentOnly => "agentOnly",
            Tag::AlwaysAffordable => "alwaysAffordable",
            Tag::Example => "example",
            Tag::Warning => "warning",
            Tag::Emits => "emits",
            Tag::RouteGated => "routeGated",
            Tag::Should => "should",
            Tag::Validates => "validates",
            Tag::Redact => "redact",
        }
    }

    /// The tag with exactly this name (case-sensitive), if any.
    pub fn from_name(name: &str) -> Option<Tag> {
        Tag::ALL.into_iter().find(|t| t.name() == name)
    }

    /// True for the presence flags (`@requiresConfirm`, `@humanOnly`, `@agentOnly`,
    /// `@alwaysAffordable`, `@redact`); false for call tags.
    pub fn is_flag(self) -> bool {
        matches!(
            self,
            Tag::RequiresConfirm
                | Tag::HumanOnly
                | Tag::AgentOnly
                | Tag::AlwaysAffordable
                | Tag::Redact
        )
    }

    /// True for the tags of the app's state fields (`@redact`): they mean nothing on a
    /// message, its variants or its fields.
    pub fn is_state_tag(self) -> bool {
        self == Tag::Redact
    }

    /// True for the field tags (`@should`, `@validates`); false for variant tags.
    pub fn is_field_tag(self) -> bool {
        matches!(self, Tag::Should | Tag::Validates)
    }

    /// True when the argument may be a JSON object/array literal (only `@example`).
    pub fn accepts_json(self) -> bool {
        self == Tag::Example
    }
}

impl fmt::Display for Tag {
    /// Writes the tag with its `@`, e.g. `@intent`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.name())
    }
}
