//! The `AgentMsg` trait implemented by `#[derive(AgentMsg)]`, and [`VariantKind`], the
//! payload-free kind of a variant the derive generates beside the enum.

use crate::annotations::{StaticAnnotations, StaticFieldTags};

/// Everything the derive knows about one variant, in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariantDescriptor {
    /// The wire name serde reads as the `type` discriminant.
    pub wire_name: &'static str,
    /// The variant's annotation record.
    pub annotations: StaticAnnotations,
    /// Tags of the variant's own named fields (empty for unit and newtype variants).
    pub fields: &'static [StaticFieldTags],
}

impl VariantDescriptor {
    /// The tags of the named field `wire_name`, if the variant has such a field.
    pub fn field(&self, wire_name: &str) -> Option<&StaticFieldTags> {
        self.fields.iter().find(|f| f.wire_name == wire_name)
    }
}

/// A TEA message enum that agents can drive. Implemented by `#[derive(AgentMsg)]`.
///
/// The enum must be serde-internally-tagged with `#[serde(tag = "type")]`; its JSON Schema
/// (from schemars) is the source of truth for payload shapes, the derive supplies the tags.
pub trait AgentMsg:
    serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static
{
    /// The kind of a variant without its payload: `#[derive(AgentMsg)]` generates, beside the
    /// enum `Msg`, a fieldless enum `MsgKind` with the same variant names (every variant, the
    /// `#[serde(skip)]` ones included) and the enum's visibility. An app names the variants
    /// its UI offers with it (`App::bindings` in `tea-agent-runtime`), so a misspelt name does not
    /// compile.
    type Kind: VariantKind;

    /// Every variant that is part of the agent surface, in declaration order
    /// (variants with `#[serde(skip)]` / `#[serde(skip_deserializing)]` are left out).
    fn variants() -> &'static [VariantDescriptor];

    /// The kind of this value's variant.
    fn kind(&self) -> Self::Kind;

    /// The wire name of this value's variant (the serialize name of a `#[serde(skip)]` one).
    fn variant_name(&self) -> &'static str {
        self.kind().wire_name()
    }

    /// The descriptor of the variant with this wire name.
    fn variant(wire_name: &str) -> Option<&'static VariantDescriptor> {
        Self::variants().iter().find(|v| v.wire_name == wire_name)
    }
}

/// The kind of one variant of an [`AgentMsg`] enum, without its payload: the type
/// [`AgentMsg::Kind`] names. `#[derive(AgentMsg)]` implements it on the fieldless enum it
/// generates (`MsgKind` for `Msg`).
pub trait VariantKind:
    Copy + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static
{
    /// The wire name serde reads as the `type` discriminant (for a `#[serde(skip)]` variant,
    /// which is not on the agent surface, the name serde writes).
    fn wire_name(self) -> &'static str;
}
