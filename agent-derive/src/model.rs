//! The derive's view of the enum: variants with their wire names, shapes, docs and fields.
//! Wire names and the enum representation are serde's own reading of the `#[serde(…)]`
//! attributes (`serde_derive_internals`, as schemars uses). Building it reports the
//! structural errors (E12 … E16, E22 … E25).

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use serde_derive_internals::ast::{self, Container, Style};
use serde_derive_internals::attr::TagType;
use serde_derive_internals::{Ctxt, Derive};
use syn::{Data, DeriveInput, GenericParam, Generics, Ident, Path, Type, Visibility};
use tea_agent_schema::shape::TypeNode;
use tea_agent_schema::tags::TagErrorKind;

use crate::docs::Docs;
use crate::errors::Errors;

/// The derived enum.
pub(crate) struct Model {
    /// The enum's name.
    pub(crate) ident: Ident,
    /// The enum's visibility (that of its generated kind enum too).
    pub(crate) vis: Visibility,
    /// The generated kind enum's name: the enum's name followed by `Kind`.
    pub(crate) kind: Ident,
    /// Its generics (passed through to the impl).
    pub(crate) generics: Generics,
    /// The path of the `tea_agent_schema` crate in emitted code.
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
    /// Every name serde accepts for it: the wire name and its aliases.
    pub(crate) accepted: Vec<String>,
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
    /// Its JSON type when the derive can read it from the Rust type (a plain type without
    /// `with` attributes); `@validates` is then type-checked at compile time (E28).
    pub(crate) plain: Option<TypeNode>,
}

impl Model {
    /// Builds the model, pushing structural errors to `errors`. `None` when the input is not
    /// an enum (E15), has lifetime parameters (E23), or the crate path is unusable.
    pub(crate) fn build(input: &DeriveInput, errors: &mut Errors) -> Option<Model> {
        let item = match &input.data {
            Data::Enum(_) => None,
            Data::Struct(s) => Some(tokens(&(s.struct_token, &input.ident))),
            Data::Union(u) => Some(tokens(&(u.union_token, &input.ident))),
        };
        if let Some(item) = item {
            errors.push(syn::Error::new_spanned(item, TagErrorKind::NotAnEnum));
            return None;
        }
        if let Some(lifetime) = input.generics.lifetimes().next() {
            errors.push(syn::Error::new_spanned(
                lifetime,
                TagErrorKind::LifetimeEnum,
            ));
            return None;
        }
        let krate = crate::agent_attr::crate_path(&input.attrs, errors)?;
        // serde_derive_internals reads syn 3 syntax trees: the same tokens, parsed again (before
        // the `Ctxt` exists: it panics when dropped without `check`).
        let input3: syn3::DeriveInput = syn3::parse2(input.to_token_stream()).ok()?;
        let cx = Ctxt::new();
        let private = Ident::new("__private", Span::call_site());
        let container = Container::from_ast(&cx, &input3, Derive::Deserialize, &private);
        // Malformed serde attributes are serde's own derive's to report.
        let _ = cx.check();
        let container = container?;
        check_representation(input, &container, errors);
        let (ast::Data::Enum(variants), Data::Enum(originals)) = (&container.data, &input.data)
        else {
            return None;
        };
        if variants.is_empty() {
            errors.push(syn::Error::new_spanned(
                &input.ident,
                TagErrorKind::EmptyEnum,
            ));
        }
        let variants: Vec<Variant> = variants
            .iter()
            .zip(&originals.variants)
            .map(|(v, original)| build_variant(v, original, errors))
            .collect();
        check_wire_names(&variants, input, errors);
        Some(Model {
            ident: input.ident.clone(),
            vis: input.vis.clone(),
            kind: quote::format_ident!("{}Kind", input.ident),
            generics: input.generics.clone(),
            krate,
            docs: Docs::from_attrs(&input.attrs),
            variants,
        })
    }

    /// True when the enum has type or const parameters.
    pub(crate) fn is_generic(&self) -> bool {
        self.generics
            .params
            .iter()
            .any(|p| !matches!(p, GenericParam::Lifetime(_)))
    }
}

/// E13 / E14: the enum must be `#[serde(tag = "type")]` without `content` or `untagged`.
fn check_representation(input: &DeriveInput, container: &Container<'_>, errors: &mut Errors) {
    match container.attrs.tag() {
        TagType::Internal { tag } if tag == "type" => {}
        TagType::Internal { tag } => {
            let kind = TagErrorKind::WrongTagName { found: tag.clone() };
            let span_of = serde_attr_with(input, "tag");
            match span_of {
                Some(attr) => errors.push(syn::Error::new_spanned(attr, kind)),
                None => errors.push(syn::Error::new_spanned(&input.ident, kind)),
            }
        }
        TagType::External | TagType::Adjacent { .. } | TagType::None => errors.push(
            syn::Error::new_spanned(&input.ident, TagErrorKind::NotInternallyTagged),
        ),
    }
}

/// The first `#[serde(…)]` attribute of the enum whose tokens mention `key`.
fn serde_attr_with<'a>(input: &'a DeriveInput, key: &str) -> Option<&'a syn::Attribute> {
    input.attrs.iter().find(|a| {
        a.path().is_ident("serde")
            && a.meta
                .to_token_stream()
                .into_iter()
                .any(|t| contains_ident(&t, key))
    })
}

/// True when `tree` is, or contains, the identifier `key`.
fn contains_ident(tree: &proc_macro2::TokenTree, key: &str) -> bool {
    match tree {
        proc_macro2::TokenTree::Ident(ident) => ident == key,
        proc_macro2::TokenTree::Group(group) => {
            group.stream().into_iter().any(|t| contains_ident(&t, key))
        }
        _ => false,
    }
}

/// E25: two variants of the agent surface that serde reads under the same name (after
/// renames, `rename_all` and aliases).
fn check_wire_names(variants: &[Variant], input: &DeriveInput, errors: &mut Errors) {
    let mut seen: Vec<(&str, &Ident)> = Vec::new();
    for variant in variants.iter().filter(|v| !v.skipped) {
        for name in &variant.accepted {
            if let Some((_, first)) = seen.iter().find(|(n, _)| n == name) {
                if *first != &variant.ident {
                    let kind = TagErrorKind::DuplicateWireName {
                        wire_name: name.clone(),
                        first: first.to_string(),
                        second: variant.ident.to_string(),
                    };
                    let original = input_variant(input, &variant.ident);
                    errors.push(syn::Error::new_spanned(original, kind));
                    break;
                }
                continue;
            }
            seen.push((name, &variant.ident));
        }
    }
}

/// The `syn` variant named `ident` (for error spans), or the enum name.
fn input_variant(input: &DeriveInput, ident: &Ident) -> TokenStream {
    if let Data::Enum(data) = &input.data {
        if let Some(v) = data.variants.iter().find(|v| &v.ident == ident) {
            return v.ident.to_token_stream();
        }
    }
    input.ident.to_token_stream()
}

/// One variant of the model; E12 and E16 for variants that are part of the agent surface.
fn build_variant(
    variant: &ast::Variant<'_>,
    original: &syn::Variant,
    errors: &mut Errors,
) -> Variant {
    let names = variant.attrs.name();
    let wire_name = names.deserialize_name().value.clone();
    let mut accepted = vec![wire_name.clone()];
    for alias in variant.attrs.aliases() {
        if !accepted.contains(&alias.value) {
            accepted.push(alias.value.clone());
        }
    }
    let skipped = variant.attrs.skip_deserializing();
    let fields = match variant.style {
        Style::Unit => Vec::new(),
        Style::Struct => variant
            .fields
            .iter()
            .zip(&original.fields)
            .map(|(f, o)| build_field(f, o))
            .collect(),
        Style::Newtype => {
            let field = original.fields.iter().next();
            let field = field.expect("a newtype variant has one field");
            if !skipped {
                if let Some(kind) = non_struct_payload(&field.ty) {
                    errors.push(syn::Error::new_spanned(&field.ty, kind));
                }
            }
            vec![Field {
                wire_name: None,
                docs: Docs::from_attrs(&field.attrs),
                tokens: field.to_token_stream(),
                plain: None,
            }]
        }
        Style::Tuple => {
            if !skipped {
                let item = (&original.ident, &original.fields);
                errors.push(syn::Error::new_spanned(
                    tokens(&item),
                    TagErrorKind::TupleVariant,
                ));
            }
            Vec::new()
        }
    };
    Variant {
        ident: original.ident.clone(),
        wire_name,
        accepted,
        ser_name: names.serialize_name().value.clone(),
        skipped,
        docs: Docs::from_attrs(&original.attrs),
        fields,
    }
}

/// One named field of a struct variant.
fn build_field(field: &ast::Field<'_>, original: &syn::Field) -> Field {
    let wire_name = if field.attrs.flatten() || field.attrs.skip_deserializing() {
        None
    } else {
        Some(field.attrs.name().deserialize_name().value.clone())
    };
    // `with` attributes give the field another schema than its Rust type's.
    let rewritten = original.attrs.iter().any(|a| {
        (a.path().is_ident("serde") || a.path().is_ident("schemars"))
            && a.meta.to_token_stream().into_iter().any(|t| {
                ["with", "deserialize_with", "serialize_with", "schema_with"]
                    .iter()
                    .any(|key| contains_ident(&t, key))
            })
    });
    Field {
        wire_name,
        docs: Docs::from_attrs(&original.attrs),
        tokens: original.to_token_stream(),
        plain: if rewritten {
            None
        } else {
            crate::cel_check::plain_type(&original.ty)
        },
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
