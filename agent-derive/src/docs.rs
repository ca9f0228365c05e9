//! The doc attributes of an item: their values (for the tag grammar) and their spans (for
//! errors on the right `///` line).

use std::fmt::Display;

use syn::{Attribute, Expr, ExprLit, Lit, Meta};
use tea_agent_schema::tags::{doc_text, DocText, TagError};

/// The string-literal `#[doc = …]` attributes of one item, in source order.
pub(crate) struct Docs {
    /// The doc text built from the values (`docs/annotations.md` §1).
    pub(crate) text: DocText,
    /// The attribute of each value, parallel to the doc text's segments.
    attrs: Vec<Attribute>,
}

impl Docs {
    /// Collects the doc attributes of an item. Only string literals are read; `doc` values
    /// that are not literals (`include_str!(…)`) and `cfg_attr(…, doc = …)` are skipped.
    pub(crate) fn from_attrs(attrs: &[Attribute]) -> Docs {
        let mut values = Vec::new();
        let mut kept = Vec::new();
        for attr in attrs {
            if !attr.path().is_ident("doc") {
                continue;
            }
            if let Meta::NameValue(nv) = &attr.meta {
                if let Expr::Lit(ExprLit {
                    lit: Lit::Str(value),
                    ..
                }) = &nv.value
                {
                    values.push(value.value());
                    kept.push(attr.clone());
                }
            }
        }
        Docs {
            text: doc_text(values.iter().map(String::as_str)),
            attrs: kept,
        }
    }

    /// The doc text.
    pub(crate) fn as_str(&self) -> &str {
        &self.text.text
    }

    /// An error spanning the doc attribute that holds byte `offset` of the doc text, or
    /// `fallback` when there is none.
    pub(crate) fn error_at(
        &self,
        offset: usize,
        fallback: &dyn quote::ToTokens,
        message: impl Display,
    ) -> syn::Error {
        match self.attrs.get(self.text.segment_of(offset)) {
            Some(attr) => syn::Error::new_spanned(attr, message),
            None => syn::Error::new_spanned(fallback, message),
        }
    }

    /// [`Docs::error_at`] for a tag error.
    pub(crate) fn tag_error(&self, error: &TagError, fallback: &dyn quote::ToTokens) -> syn::Error {
        self.error_at(error.offset, fallback, error)
    }
}
