//! Collecting every error of one derive, each with its own span.

use proc_macro2::TokenStream;

/// The errors found so far, in the order they were found.
///
/// The collector must be consumed by [`Errors::check`]: dropping it unchecked panics (unless
/// the thread is already panicking), so no path of the derive can lose its errors.
pub(crate) struct Errors {
    /// `None` once [`Errors::check`] has taken the list.
    list: Option<Vec<syn::Error>>,
}

impl Errors {
    /// An empty collector, to be consumed by [`Errors::check`].
    pub(crate) fn new() -> Errors {
        Errors {
            list: Some(Vec::new()),
        }
    }

    /// Adds one error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.list
            .as_mut()
            .expect("an error collector is consumed when checked")
            .push(error);
    }

    /// Consumes the collector: `Err` with every error as `compile_error!` invocations (one per
    /// error, each with its span) when any was found.
    pub(crate) fn check(mut self) -> Result<(), TokenStream> {
        let list = self.list.take().unwrap_or_default();
        let mut combined: Option<syn::Error> = None;
        for error in list {
            match &mut combined {
                Some(all) => all.combine(error),
                None => combined = Some(error),
            }
        }
        match combined {
            Some(all) => Err(all.to_compile_error()),
            None => Ok(()),
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if self.list.is_some() && !std::thread::panicking() {
            panic!("forgot to check for errors: an `Errors` collector was dropped unchecked");
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;

    use super::Errors;

    fn error(message: &str) -> syn::Error {
        syn::Error::new(Span::call_site(), message)
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn an_unchecked_collector_panics_on_drop() {
        let mut errors = Errors::new();
        errors.push(error("lost"));
        drop(errors);
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn an_unchecked_collector_without_errors_panics_too() {
        drop(Errors::new());
    }

    #[test]
    fn a_checked_collector_drops_quietly() {
        assert!(Errors::new().check().is_ok());

        let mut errors = Errors::new();
        errors.push(error("first"));
        errors.push(error("second"));
        let tokens = errors.check().unwrap_err().to_string();
        assert_eq!(tokens.matches("compile_error").count(), 2, "{tokens}");
        assert!(
            tokens.contains("first") && tokens.contains("second"),
            "{tokens}"
        );
    }
}
