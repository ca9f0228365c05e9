//! Compile-time check of CEL expressions (`@routeGated`, `@validates`): syntax, nesting depth
//! and scope, through `tea_agent_schema::tags::cel` (which parses on a big-stack thread, so no
//! expression can crash the compiler); and the types of a `@validates` on a field whose Rust
//! type the derive can read, through the start-up type checker
//! (`tea_agent_schema::shape::validates_type_errors`).

use syn::{GenericArgument, PathArguments, Type};
use tea_agent_schema::shape::{validates_type_errors, TypeKind, TypeNode};
use tea_agent_schema::tags::cel::check_expression;
use tea_agent_schema::tags::{Tag, TagErrorKind};

/// The error of `tag`'s expression `source`, or `None` when it can be used.
pub(crate) fn cel_error(tag: Tag, source: &str) -> Option<TagErrorKind> {
    check_expression(tag, source)
}

/// E28: the type errors of the `@validates` expression `source` (already known to parse) on a
/// field of type `ty`.
pub(crate) fn cel_type_errors(source: &str, ty: &TypeNode) -> Vec<TagErrorKind> {
    validates_type_errors(source, ty)
        .into_iter()
        .map(|(problem, fix)| TagErrorKind::CelType {
            tag: Tag::Validates,
            problem,
            fix,
        })
        .collect()
}

/// The JSON type of a field written as a plain type whose schema schemars gives without
/// reading any other item: `String`/`str` (through references), the integer and float
/// types, `bool`, `Vec<T>` (of a plain `T`, else of anything) and `Option<T>` (nullable).
/// `None` for every other type (a struct, an alias, a generic parameter): those are checked
/// at start-up against the real schema.
pub(crate) fn plain_type(ty: &Type) -> Option<TypeNode> {
    match ty {
        Type::Paren(inner) => plain_type(&inner.elem),
        Type::Group(inner) => plain_type(&inner.elem),
        Type::Reference(reference) => plain_type(&reference.elem),
        Type::Path(path) if path.qself.is_none() => {
            let segments = &path.path.segments;
            // `String` or `std::string::String`; not a path into the app's own modules, where
            // a type could reuse the name.
            let std_path = segments.len() == 1
                || segments.first().is_some_and(|s| {
                    matches!(s.ident.to_string().as_str(), "std" | "core" | "alloc")
                });
            let last = segments.last()?;
            if !std_path {
                return None;
            }
            let name = last.ident.to_string();
            let kind = match name.as_str() {
                "String" | "str" => TypeKind::String,
                "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64"
                | "u128" | "usize" => TypeKind::Number { integer: true },
                "f32" | "f64" => TypeKind::Number { integer: false },
                "bool" => TypeKind::Boolean,
                "Vec" => {
                    let item = only_argument(&last.arguments)?;
                    let item = plain_type(item).unwrap_or_else(|| TypeNode::new(TypeKind::Unknown));
                    TypeKind::Array(Box::new(item))
                }
                "Option" => {
                    let mut node = plain_type(only_argument(&last.arguments)?)?;
                    node.nullable = true;
                    return Some(node);
                }
                _ => return None,
            };
            let plain_arguments = matches!(last.arguments, PathArguments::None) || name == "Vec";
            plain_arguments.then(|| TypeNode::new(kind))
        }
        _ => None,
    }
}

/// The one type argument of `Vec<T>` / `Option<T>`.
fn only_argument(arguments: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(list) = arguments else {
        return None;
    };
    match list.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(ty)] => Some(ty),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{cel_error, cel_type_errors, plain_type};
    use tea_agent_schema::shape::TypeKind;
    use tea_agent_schema::tags::Tag;

    /// The E28 codes and first lines of `source` on a field of Rust type `ty`.
    fn type_errors(ty: &str, source: &str) -> Vec<String> {
        let ty: syn::Type = syn::parse_str(ty).unwrap();
        let node = plain_type(&ty).expect("a plain type");
        cel_type_errors(source, &node)
            .iter()
            .map(|kind| format!("{} {}", kind.code(), kind.summary()))
            .collect()
    }

    #[test]
    fn plain_types_are_read_others_are_left_to_start_up() {
        for (ty, kind) in [
            ("String", TypeKind::String),
            ("&'static str", TypeKind::String),
            ("std::string::String", TypeKind::String),
            ("u8", TypeKind::Number { integer: true }),
            ("f64", TypeKind::Number { integer: false }),
            ("bool", TypeKind::Boolean),
        ] {
            let node = plain_type(&syn::parse_str(ty).unwrap()).unwrap();
            assert_eq!(node.kind, kind, "{ty}");
            assert!(!node.nullable, "{ty}");
        }
        let option = plain_type(&syn::parse_str("Option<i32>").unwrap()).unwrap();
        assert!(option.nullable);
        let list = plain_type(&syn::parse_str("Vec<Row>").unwrap()).unwrap();
        assert!(matches!(list.kind, TypeKind::Array(item) if item.kind == TypeKind::Unknown));
        for ty in [
            "Row",
            "crate::String",
            "Option<Row>",
            "HashMap<String, u8>",
            "T",
            "(u8, u8)",
            "serde_json::Value",
        ] {
            assert!(plain_type(&syn::parse_str(ty).unwrap()).is_none(), "{ty}");
        }
    }

    #[test]
    fn validates_on_plain_fields_are_type_checked() {
        for (ty, source) in [
            ("String", "size(v) > 0 && size(v) <= 200"),
            ("String", r"v.matches('^[a-z]+$')"),
            ("u32", "v >= 1 && v <= 10"),
            ("f64", "v >= 0 && v <= 100"),
            ("f64", "v > 0.5"),
            ("Vec<String>", "size(v) > 0 && v.all(s, size(s) > 0)"),
            ("Option<String>", "size(v) < 10"),
            ("bool", "v"),
            ("Vec<Row>", "v.all(r, r.id > 0)"),
        ] {
            assert_eq!(
                type_errors(ty, source),
                Vec::<String>::new(),
                "{ty}: {source}"
            );
        }
        for (ty, source) in [
            ("u32", "size(v) > 0"),
            ("f64", "v > 'a'"),
            ("String", "v.foo == 1"),
            ("bool", "v > 1"),
            ("Vec<u8>", "v.exists(x, x == 'a')"),
        ] {
            let errors = type_errors(ty, source);
            assert!(!errors.is_empty(), "{ty}: {source}");
            assert!(errors.iter().all(|e| e.starts_with("E28 ")), "{errors:?}");
        }
    }

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
