//! The derive's view of the enum: variants with their wire names, shapes, docs and fields.
//! Building it reports the structural errors (E12 … E16).

use agent_schema::tags::TagErrorKind;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, Generics, Ident, Path, Type};

use crate::docs::Docs;
use crate::errors::Errors;
use crate::serde_attrs::{ContainerAttrs, FieldAttrs, Rules, VariantAttrs};

/// The derived enum.
pub(crate) struct Model {
    /// The enum's name.
    pub(crate) ident: Ident,
    /// Its generics (passed through to the impl).
    pub(crate) generics: Generics,
    /// The path of the `agent_schema` crate in emitted code.
    pub(crate) krate: Path,
    /// The enum's own docs (E11).
    pub(crate) docs: Docs,
    /// Every variant, in declaration order.
    pub(crate) variants: Vec<Variant>,
}

/// One variant.
pub(crate) struct Variant {
    /// The Rust name.
    pub(crate) ident: Ident,
    /// The wire name serde reads (deserialize name).
    pub(crate) wire_name: String,
    /// The name serde writes (serialize name); `variant_name` of a skipped variant.
    pub(crate) ser_name: String,
    /// `#[serde(skip)]` / `#[serde(skip_deserializing)]`: no record.
    pub(crate) skipped: bool,
    /// The variant's docs.
    pub(crate) docs: Docs,
    /// Fields: the named fields of a struct variant, or the one unnamed field of a newtype.
    pub(crate) fields: Vec<Field>,
}

/// One field.
pub(crate) struct Field {
    /// The field's wire name, `None` when it has none of its own (flatten, skip, newtype).
    pub(crate) wire_name: Option<String>,
    /// The field's docs.
    pub(crate) docs: Docs,
    /// The field (for error spans without a doc line).
    pub(crate) tokens: TokenStream,
}

impl Model {
    /// Builds the model, pushing structural errors to `errors`. `None` when the input is not
    /// an enum (E15), or the `#[agent]` attribute is unusable.
    pub(crate) fn build(input: &DeriveInput, errors: &mut Errors) -> Option<Model> {
        let data = match &input.data {
            Data::Enum(data) => data,
            Data::Struct(s) => {
                let item = (s.struct_token, &input.ident);
                errors.push(syn::Error::new_spanned(
                    tokens(&item),
                    TagErrorKind::NotAnEnum,
                ));
                return None;
            }
            Data::Union(u) => {
                let item = (u.union_token, &input.ident);
                errors.push(syn::Error::new_spanned(
                    tokens(&item),
                    TagErrorKind::NotAnEnum,
                ));
                return None;
            }
        };
        let krate = crate::agent_attr::crate_path(&input.attrs, errors)?;
        let container = ContainerAttrs::parse(&input.attrs);
        check_representation(input, &container, errors);
        let variants = data
            .variants
            .iter()
            .map(|v| build_variant(v, &container, errors))
            .collect();
        Some(Model {
            ident: input.ident.clone(),
            generics: input.generics.clone(),
            krate,
            docs: Docs::from_attrs(&input.attrs),
            variants,
        })
    }
}

/// E13 / E14: the enum must be `#[serde(tag = "type")]` without `content` or `untagged`.
fn check_representation(input: &DeriveInput, container: &ContainerAttrs, errors: &mut Errors) {
    match &container.tag {
        _ if container.untagged || container.content => errors.push(syn::Error::new_spanned(
            &input.ident,
            TagErrorKind::NotInternallyTagged,
        )),
        None => errors.push(syn::Error::new_spanned(
            &input.ident,
            TagErrorKind::NotInternallyTagged,
        )),
        Some((tag, attr)) if tag != "type" => errors.push(syn::Error::new_spanned(
            attr,
            TagErrorKind::WrongTagName { found: tag.clone() },
        )),
        Some(_) => {}
    }
}

/// One variant of the model; E12 and E16 for variants that are part of the agent surface.
fn build_variant(
    variant: &syn::Variant,
    container: &ContainerAttrs,
    errors: &mut Errors,
) -> Variant {
    let attrs = VariantAttrs::parse(&variant.attrs);
    let ident_name = variant.ident.unraw().to_string();
    let wire_name = attrs
        .rename
        .de
        .clone()
        .unwrap_or_else(|| container.rename_all.de_rule().apply_to_variant(&ident_name));
    let ser_name = attrs.rename.ser.clone().unwrap_or_else(|| {
        container
            .rename_all
            .ser_rule()
            .apply_to_variant(&ident_name)
    });
    let skipped = attrs.skip_deserializing;
    let fields = match &variant.fields {
        Fields::Unit => Vec::new(),
        Fields::Named(named) => {
            let rules = field_rules(&attrs.rename_all, &container.rename_all_fields);
            named.named.iter().map(|f| build_field(f, rules)).collect()
        }
        Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1 => {
            let field = &unnamed.unnamed[0];
            if !skipped {
                if let Some(kind) = non_struct_payload(&field.ty) {
                    errors.push(syn::Error::new_spanned(&field.ty, kind));
                }
            }
            let field = Field {
                wire_name: None,
                docs: Docs::from_attrs(&field.attrs),
                tokens: field.to_token_stream(),
            };
            vec![field]
        }
        Fields::Unnamed(_) => {
            if !skipped {
                let item = (&variant.ident, &variant.fields);
                errors.push(syn::Error::new_spanned(
                    tokens(&item),
                    TagErrorKind::TupleVariant,
                ));
            }
            Vec::new()
        }
    };
    Variant {
        ident: variant.ident.clone(),
        wire_name,
        ser_name,
        skipped,
        docs: Docs::from_attrs(&variant.attrs),
        fields,
    }
}

/// The deserialize rule for a variant's field names: the variant's `rename_all`, else the
/// enum's `rename_all_fields` (per direction, as serde does).
fn field_rules(variant: &Rules, container_fields: &Rules) -> crate::case::RenameRule {
    variant.de_rule().or(container_fields.de_rule())
}

/// One named field of a struct variant.
fn build_field(field: &syn::Field, rule: crate::case::RenameRule) -> Field {
    let attrs = FieldAttrs::parse(&field.attrs);
    let wire_name = if attrs.flatten || attrs.skip_deserializing {
        None
    } else {
        let ident = field.ident.as_ref().map(|i| i.unraw().to_string());
        attrs
            .rename
            .de
            .clone()
            .or_else(|| ident.map(|i| rule.apply_to_field(&i)))
    };
    Field {
        wire_name,
        docs: Docs::from_attrs(&field.attrs),
        tokens: field.to_token_stream(),
    }
}

/// E16 when a newtype payload is written as a type serde cannot tag: `bool`, `char`, `str`,
/// `String`, a primitive number, `Vec<…>`, `Option<…>`, a tuple, an array, a slice, or a
/// reference to one of these.
fn non_struct_payload(ty: &Type) -> Option<TagErrorKind> {
    if is_untaggable(ty) {
        Some(TagErrorKind::NewtypeNotStruct { ty: type_text(ty) })
    } else {
        None
    }
}

/// See [`non_struct_payload`].
fn is_untaggable(ty: &Type) -> bool {
    match ty {
        Type::Paren(inner) => is_untaggable(&inner.elem),
        Type::Group(inner) => is_untaggable(&inner.elem),
        Type::Reference(reference) => is_untaggable(&reference.elem),
        Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => true,
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().is_some_and(|last| {
            matches!(
                last.ident.to_string().as_str(),
                "bool"
                    | "char"
                    | "str"
                    | "String"
                    | "i8"
                    | "i16"
                    | "i32"
                    | "i64"
                    | "i128"
                    | "isize"
                    | "u8"
                    | "u16"
                    | "u32"
                    | "u64"
                    | "u128"
                    | "usize"
                    | "f32"
                    | "f64"
                    | "Vec"
                    | "Option"
            )
        }),
        _ => false,
    }
}

/// A type as written, with the spaces `quote` puts between tokens removed where Rust code
/// has none (`Vec<String>`, `&'static str`, `(i32, i32)`, `[u8; 4]`).
pub(crate) fn type_text(ty: &Type) -> String {
    let raw = ty.to_token_stream().to_string();
    let mut out = raw;
    for (from, to) in [
        (" < ", "<"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& ", "&"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        out = out.replace(from, to);
    }
    out
}

/// The tokens of a pair, for an error spanning from the first to the last.
fn tokens(pair: &(impl ToTokens, impl ToTokens)) -> TokenStream {
    let mut stream = pair.0.to_token_stream();
    pair.1.to_tokens(&mut stream);
    stream
}
