//! The per-variant annotation record (`MessageAnnotations`) and the per-field tags.
//!
//! The derive emits the compile-time forms ([`StaticAnnotations`], [`StaticFieldTags`]); the
//! runtime and the describe document use the owned, serializable forms.

use serde::{Deserialize, Serialize};

/// Who may dispatch a variant.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum DispatchMode {
    /// Agent and human may both send it (the default).
    #[default]
    Shared,
    /// Only the human may send it (`@humanOnly`); agents are always refused.
    HumanOnly,
    /// Offered to agents even when the UI does not bind it (`@agentOnly`).
    AgentOnly,
}

impl DispatchMode {
    /// The wire string (`shared`, `human-only`, `agent-only`).
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchMode::Shared => "shared",
            DispatchMode::HumanOnly => "human-only",
            DispatchMode::AgentOnly => "agent-only",
        }
    }
}

/// The full annotation record of one variant: always all nine keys, in this order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageAnnotations {
    /// First `@intent("…")` argument.
    pub intent: Option<String>,
    /// `@alwaysAffordable` present.
    pub always_affordable: bool,
    /// `@requiresConfirm` present.
    pub requires_confirm: bool,
    /// `@humanOnly` / `@agentOnly`.
    pub dispatch_mode: DispatchMode,
    /// Every `@example(…)` argument, in source order, verbatim.
    pub examples: Vec<String>,
    /// First `@warning("…")` argument.
    pub warning: Option<String>,
    /// Arguments of the first `@emits(…)`, duplicates removed keeping the first.
    pub emits: Vec<String>,
    /// CEL source of the first `@routeGated` (first argument).
    pub route_gate: Option<String>,
    /// Second argument of that same `@routeGated`, if given.
    pub route_gate_reason: Option<String>,
}

impl MessageAnnotations {
    /// True when every field holds its default (`""` and `[""]` are not defaults).
    pub fn is_default(&self) -> bool {
        *self == MessageAnnotations::default()
    }
}

/// The compile-time form of [`MessageAnnotations`] emitted by `#[derive(AgentMsg)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticAnnotations {
    /// See [`MessageAnnotations::intent`].
    pub intent: Option<&'static str>,
    /// See [`MessageAnnotations::always_affordable`].
    pub always_affordable: bool,
    /// See [`MessageAnnotations::requires_confirm`].
    pub requires_confirm: bool,
    /// See [`MessageAnnotations::dispatch_mode`].
    pub dispatch_mode: DispatchMode,
    /// See [`MessageAnnotations::examples`].
    pub examples: &'static [&'static str],
    /// See [`MessageAnnotations::warning`].
    pub warning: Option<&'static str>,
    /// See [`MessageAnnotations::emits`].
    pub emits: &'static [&'static str],
    /// See [`MessageAnnotations::route_gate`].
    pub route_gate: Option<&'static str>,
    /// See [`MessageAnnotations::route_gate_reason`].
    pub route_gate_reason: Option<&'static str>,
}

impl StaticAnnotations {
    /// The default record, usable in `const` context.
    pub const DEFAULT: StaticAnnotations = StaticAnnotations {
        intent: None,
        always_affordable: false,
        requires_confirm: false,
        dispatch_mode: DispatchMode::Shared,
        examples: &[],
        warning: None,
        emits: &[],
        route_gate: None,
        route_gate_reason: None,
    };

    /// The owned, serializable record.
    pub fn to_annotations(&self) -> MessageAnnotations {
        let owned = |s: &[&str]| s.iter().map(|v| v.to_string()).collect();
        MessageAnnotations {
            intent: self.intent.map(str::to_owned),
            always_affordable: self.always_affordable,
            requires_confirm: self.requires_confirm,
            dispatch_mode: self.dispatch_mode,
            examples: owned(self.examples),
            warning: self.warning.map(str::to_owned),
            emits: owned(self.emits),
            route_gate: self.route_gate.map(str::to_owned),
            route_gate_reason: self.route_gate_reason.map(str::to_owned),
        }
    }
}

/// Field tags (`@should`, `@validates`) of one field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FieldTags {
    /// First `@should("…")` argument.
    pub hint: Option<String>,
    /// First `@validates("…")` argument (CEL source).
    pub validates: Option<String>,
}

impl FieldTags {
    /// True when neither tag is present.
    pub fn is_empty(&self) -> bool {
        self.hint.is_none() && self.validates.is_none()
    }
}

/// The compile-time form of the tags of one named field of a struct variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticFieldTags {
    /// The field's wire name.
    pub wire_name: &'static str,
    /// First `@should("…")` argument.
    pub hint: Option<&'static str>,
    /// First `@validates("…")` argument.
    pub validates: Option<&'static str>,
}

impl StaticFieldTags {
    /// The owned tags.
    pub fn to_field_tags(&self) -> FieldTags {
        FieldTags {
            hint: self.hint.map(str::to_owned),
            validates: self.validates.map(str::to_owned),
        }
    }
}
