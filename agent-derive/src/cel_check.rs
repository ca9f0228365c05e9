//! Compile-time syntax check of CEL expressions (`@routeGated`, `@validates`).

use std::panic::{catch_unwind, AssertUnwindSafe};

/// The CEL parser's error text for `source`, or `None` when it parses. The empty expression
/// is an error.
pub(crate) fn cel_error(source: &str) -> Option<String> {
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        cel::Program::compile(source)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }));
    match parsed {
        Ok(Ok(())) if source.trim().is_empty() => Some(EMPTY.to_owned()),
        Ok(Ok(())) => None,
        Ok(Err(message)) => Some(message),
        Err(_) => Some("ERROR: <input>: the CEL parser failed on this expression".to_owned()),
    }
}

/// The message for an empty expression, should the parser accept one.
const EMPTY: &str = "ERROR: <input>:1:1: Syntax error: the expression is empty";

#[cfg(test)]
mod tests {
    use super::cel_error;

    #[test]
    fn valid_expressions() {
        for source in [
            "state.ready",
            "state.matrix.kind == 'loaded'",
            "v >= 0 && v <= 100",
            "size(v) > 0",
            r"v.matches(r'^\d{5}$')",
            "state.mode == \"admin\"",
        ] {
            assert_eq!(cel_error(source), None, "{source}");
        }
    }

    #[test]
    fn invalid_expressions() {
        assert_eq!(
            cel_error("state.").unwrap().lines().next().unwrap(),
            "ERROR: <input>:1:7: Syntax error: no viable alternative at input '.'"
        );
        assert!(cel_error("v >= 0 &&").is_some());
        assert!(cel_error("").is_some());
        assert!(cel_error("   ").is_some());
    }
}
