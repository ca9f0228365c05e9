//! Compile-time check of CEL expressions (`@routeGated`, `@validates`): syntax, nesting depth
//! and scope, through `agent_schema::tags::cel` (which parses on a big-stack thread, so no
//! expression can crash the compiler).

use agent_schema::tags::cel::check_expression;
use agent_schema::tags::{Tag, TagErrorKind};

/// The error of `tag`'s expression `source`, or `None` when it can be used.
pub(crate) fn cel_error(tag: Tag, source: &str) -> Option<TagErrorKind> {
    check_expression(tag, source)
}

#[cfg(test)]
mod tests {
    use super::cel_error;
    use agent_schema::tags::Tag;

    #[test]
    fn valid_expressions() {
        for (tag, source) in [
            (Tag::RouteGated, "state.ready"),
            (Tag::RouteGated, "state.matrix.kind == 'loaded'"),
            (Tag::Validates, "v >= 0 && v <= 100"),
            (Tag::Validates, "size(v) > 0"),
            (Tag::Validates, r"v.matches(r'^\d{5}$')"),
            (Tag::RouteGated, "state.mode == \"admin\""),
            (Tag::RouteGated, "state.items.exists(t, t.done)"),
        ] {
            assert_eq!(cel_error(tag, source), None, "{source}");
        }
    }

    #[test]
    fn invalid_expressions() {
        let error = cel_error(Tag::RouteGated, "state.").unwrap();
        assert_eq!(
            error.help().unwrap(),
            "ERROR: <input>:1:7: Syntax error: no viable alternative at input '.'"
        );
        assert_eq!(error.code(), "E6");
        assert_eq!(cel_error(Tag::Validates, "v >= 0 &&").unwrap().code(), "E7");
        assert_eq!(cel_error(Tag::Validates, "").unwrap().code(), "E7");
        assert_eq!(cel_error(Tag::Validates, "   ").unwrap().code(), "E7");
        assert_eq!(cel_error(Tag::Validates, "state.x").unwrap().code(), "E20");
        let deep = format!("{}state{}", "(".repeat(60), ")".repeat(60));
        assert_eq!(cel_error(Tag::RouteGated, &deep).unwrap().code(), "E21");
    }
}
