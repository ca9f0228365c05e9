//! Collecting every error of one derive, each with its own span.

use proc_macro2::TokenStream;

/// The errors found so far, in the order they were found.
#[derive(Default)]
pub(crate) struct Errors {
    list: Vec<syn::Error>,
}

impl Errors {
    /// Adds one error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.list.push(error);
    }

    /// True when no error was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// All errors as `compile_error!` invocations (one per error, each with its span).
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        let mut combined: Option<syn::Error> = None;
        for error in &self.list {
            match &mut combined {
                Some(all) => all.combine(error.clone()),
                None => combined = Some(error.clone()),
            }
        }
        combined.map(|e| e.to_compile_error()).unwrap_or_default()
    }
}
