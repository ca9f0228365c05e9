//! The emitted `impl AgentMsg`: static descriptors plus a `variant_name` match. No doc text is
//! parsed at run time.

use agent_schema::{DispatchMode, FieldTags, MessageAnnotations};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

use crate::checks::Record;
use crate::model::Model;

/// The `impl AgentMsg for …` of a checked enum, inside `const _: () = { … }` that imports the
/// crate path once: a wrong `#[agent(crate = …)]` gives one unresolved-import error there.
///
/// A generic enum gets the bounds the trait needs on the enum type itself, so it implements
/// `AgentMsg` exactly for the parameters serde and schemars support.
pub(crate) fn emit(model: &Model, records: &[Record<'_>]) -> TokenStream {
    let path = &model.krate;
    let krate: Path = syn::parse_quote!(__agent_schema);
    let krate = &krate;
    let ident = &model.ident;
    let (impl_generics, ty_generics, where_clause) = model.generics.split_for_impl();
    let mut where_clause = where_clause.cloned();
    if model.is_generic() {
        let clause = where_clause.get_or_insert_with(|| syn::parse_quote!(where));
        clause.predicates.push(syn::parse_quote! {
            #ident #ty_generics: #krate::__private::serde::Serialize
                + #krate::__private::serde::de::DeserializeOwned
                + #krate::__private::schemars::JsonSchema
                + ::core::marker::Send
                + 'static
        });
    }
    let descriptors = records.iter().map(|r| descriptor(krate, r));
    let arms = model.variants.iter().map(|v| {
        let name = &v.ident;
        // Skipped variants are not on the agent surface; they answer their serialize name.
        let wire = if v.skipped { &v.ser_name } else { &v.wire_name };
        quote!(Self::#name { .. } => #wire,)
    });
    quote! {
        const _: () = {
        use #path as __agent_schema;
        #[automatically_derived]
        impl #impl_generics #krate::AgentMsg for #ident #ty_generics #where_clause {
            fn variants() -> &'static [#krate::VariantDescriptor] {
                static VARIANTS: &[#krate::VariantDescriptor] = &[#(#descriptors),*];
                VARIANTS
            }

            fn variant_name(&self) -> &'static str {
                match *self {
                    #(#arms)*
                }
            }
        }
        };
    }
}

/// One `VariantDescriptor { … }` expression.
fn descriptor(krate: &Path, record: &Record<'_>) -> TokenStream {
    let wire = &record.variant.wire_name;
    let annotations = annotations(krate, &record.annotations);
    let fields = record
        .fields
        .iter()
        .map(|(name, tags)| field(krate, name, tags));
    quote! {
        #krate::VariantDescriptor {
            wire_name: #wire,
            annotations: #annotations,
            fields: &[#(#fields),*],
        }
    }
}

/// A `StaticAnnotations` expression; only non-default fields are written.
fn annotations(krate: &Path, ann: &MessageAnnotations) -> TokenStream {
    if ann.is_default() {
        return quote!(#krate::StaticAnnotations::DEFAULT);
    }
    let mut set = Vec::new();
    if let Some(intent) = &ann.intent {
        set.push(quote!(intent: ::core::option::Option::Some(#intent)));
    }
    if ann.always_affordable {
        set.push(quote!(always_affordable: true));
    }
    if ann.requires_confirm {
        set.push(quote!(requires_confirm: true));
    }
    match ann.dispatch_mode {
        DispatchMode::Shared => {}
        DispatchMode::HumanOnly => {
            set.push(quote!(dispatch_mode: #krate::DispatchMode::HumanOnly));
        }
        DispatchMode::AgentOnly => {
            set.push(quote!(dispatch_mode: #krate::DispatchMode::AgentOnly));
        }
    }
    if !ann.examples.is_empty() {
        let examples = &ann.examples;
        set.push(quote!(examples: &[#(#examples),*]));
    }
    if let Some(warning) = &ann.warning {
        set.push(quote!(warning: ::core::option::Option::Some(#warning)));
    }
    if !ann.emits.is_empty() {
        let emits = &ann.emits;
        set.push(quote!(emits: &[#(#emits),*]));
    }
    if let Some(gate) = &ann.route_gate {
        set.push(quote!(route_gate: ::core::option::Option::Some(#gate)));
    }
    if let Some(reason) = &ann.route_gate_reason {
        set.push(quote!(route_gate_reason: ::core::option::Option::Some(#reason)));
    }
    quote! {
        #krate::StaticAnnotations { #(#set,)* ..#krate::StaticAnnotations::DEFAULT }
    }
}

/// A `StaticFieldTags` expression.
fn field(krate: &Path, wire_name: &str, tags: &FieldTags) -> TokenStream {
    let hint = option(tags.hint.as_deref());
    let validates = option(tags.validates.as_deref());
    quote! {
        #krate::StaticFieldTags { wire_name: #wire_name, hint: #hint, validates: #validates }
    }
}

/// `Some("…")` or `None`.
fn option(value: Option<&str>) -> TokenStream {
    match value {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    }
}
