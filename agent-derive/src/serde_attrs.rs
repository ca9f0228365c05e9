//! The parts of `#[serde(…)]` attributes that decide wire names and the enum representation.
//!
//! Parsing is best effort: a malformed serde attribute is serde's own derive's to report, so
//! anything this module does not understand is skipped silently.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitStr, Token};

use crate::case::RenameRule;

/// A name or rule given per direction (`x = "…"` sets both, `x(serialize = "…",
/// deserialize = "…")` each one).
#[derive(Debug, Clone, Default)]
pub(crate) struct PerDirection<T> {
    /// The serialize side.
    pub(crate) ser: Option<T>,
    /// The deserialize side (the wire name the derive and the LAP use).
    pub(crate) de: Option<T>,
}

impl<T> PerDirection<T> {
    /// Takes every side that `other` sets (a later attribute wins, like in serde).
    fn merge(&mut self, other: PerDirection<T>) {
        if other.ser.is_some() {
            self.ser = other.ser;
        }
        if other.de.is_some() {
            self.de = other.de;
        }
    }
}

/// A `rename_all`-style rule pair.
pub(crate) type Rules = PerDirection<RenameRule>;

impl Rules {
    /// The serialize rule, [`RenameRule::None`] if not set.
    pub(crate) fn ser_rule(&self) -> RenameRule {
        self.ser.unwrap_or_default()
    }

    /// The deserialize rule, [`RenameRule::None`] if not set.
    pub(crate) fn de_rule(&self) -> RenameRule {
        self.de.unwrap_or_default()
    }
}

/// Serde attributes of the enum.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// `tag = "…"` with the attribute that holds it (the span of E14).
    pub(crate) tag: Option<(String, Attribute)>,
    /// `content = "…"` present (adjacently tagged).
    pub(crate) content: bool,
    /// `untagged` present.
    pub(crate) untagged: bool,
    /// `rename_all`: applies to variant names.
    pub(crate) rename_all: Rules,
    /// `rename_all_fields`: applies to the fields of every struct variant.
    pub(crate) rename_all_fields: Rules,
}

/// Serde attributes of a variant.
#[derive(Default)]
pub(crate) struct VariantAttrs {
    /// `rename`.
    pub(crate) rename: PerDirection<String>,
    /// `rename_all`: applies to the variant's field names.
    pub(crate) rename_all: Rules,
    /// `skip` or `skip_deserializing`: not part of the agent surface.
    pub(crate) skip_deserializing: bool,
}

/// Serde attributes of a field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// `rename`.
    pub(crate) rename: PerDirection<String>,
    /// `flatten`: the field has no wire name of its own.
    pub(crate) flatten: bool,
    /// `skip` or `skip_deserializing`: the field is never read from the wire.
    pub(crate) skip_deserializing: bool,
}

impl ContainerAttrs {
    /// Reads the serde attributes of the enum.
    pub(crate) fn parse(attrs: &[Attribute]) -> ContainerAttrs {
        let mut out = ContainerAttrs::default();
        for attr in serde_attrs(attrs) {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("tag") {
                    let value: LitStr = meta.value()?.parse()?;
                    out.tag = Some((value.value(), attr.clone()));
                } else if meta.path.is_ident("content") {
                    out.content = true;
                    skip(&meta)?;
                } else if meta.path.is_ident("untagged") {
                    out.untagged = true;
                } else if meta.path.is_ident("rename_all") {
                    out.rename_all.merge(parse_rules(&meta)?);
                } else if meta.path.is_ident("rename_all_fields") {
                    out.rename_all_fields.merge(parse_rules(&meta)?);
                } else {
                    skip(&meta)?;
                }
                Ok(())
            });
        }
        out
    }
}

impl VariantAttrs {
    /// Reads the serde attributes of a variant.
    pub(crate) fn parse(attrs: &[Attribute]) -> VariantAttrs {
        let mut out = VariantAttrs::default();
        for attr in serde_attrs(attrs) {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("rename") {
                    out.rename.merge(parse_names(&meta)?);
                } else if meta.path.is_ident("rename_all") {
                    out.rename_all.merge(parse_rules(&meta)?);
                } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing") {
                    out.skip_deserializing = true;
                } else {
                    skip(&meta)?;
                }
                Ok(())
            });
        }
        out
    }
}

impl FieldAttrs {
    /// Reads the serde attributes of a field.
    pub(crate) fn parse(attrs: &[Attribute]) -> FieldAttrs {
        let mut out = FieldAttrs::default();
        for attr in serde_attrs(attrs) {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("rename") {
                    out.rename.merge(parse_names(&meta)?);
                } else if meta.path.is_ident("flatten") {
                    out.flatten = true;
                } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing") {
                    out.skip_deserializing = true;
                } else {
                    skip(&meta)?;
                }
                Ok(())
            });
        }
        out
    }
}

/// The `#[serde(…)]` attributes among `attrs`.
fn serde_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("serde"))
}

/// `key = "v"` (both directions) or `key(serialize = "a", deserialize = "b")`.
fn parse_per_direction(meta: &ParseNestedMeta<'_>) -> syn::Result<PerDirection<String>> {
    let mut out = PerDirection::default();
    if meta.input.peek(Token![=]) {
        let value = meta.value()?.parse::<LitStr>()?.value();
        out.ser = Some(value.clone());
        out.de = Some(value);
    } else {
        meta.parse_nested_meta(|inner| {
            if inner.path.is_ident("serialize") {
                out.ser = Some(inner.value()?.parse::<LitStr>()?.value());
            } else if inner.path.is_ident("deserialize") {
                out.de = Some(inner.value()?.parse::<LitStr>()?.value());
            } else {
                skip(&inner)?;
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// A `rename` value.
fn parse_names(meta: &ParseNestedMeta<'_>) -> syn::Result<PerDirection<String>> {
    parse_per_direction(meta)
}

/// A `rename_all`-style value; unknown convention names are left unset (serde rejects them).
fn parse_rules(meta: &ParseNestedMeta<'_>) -> syn::Result<Rules> {
    let names = parse_per_direction(meta)?;
    Ok(Rules {
        ser: names.ser.as_deref().and_then(RenameRule::from_name),
        de: names.de.as_deref().and_then(RenameRule::from_name),
    })
}

/// Skips the value of a key this module does not use: `= expr`, `(…)`, or nothing.
fn skip(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}
