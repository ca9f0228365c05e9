//! Where the `tea_agent_schema` crate is: `#[agent(crate = "path")]` on the enum, else found in
//! the app's `Cargo.toml` (a direct `tea-agent-schema` dependency, or its re-export
//! `tea_agent_runtime::tea_agent_schema`), else `::tea_agent_schema`.

use proc_macro2::Span;
use proc_macro_crate::{crate_name, FoundCrate};
use syn::{Attribute, Ident, LitStr, Path};
use tea_agent_schema::tags::TagErrorKind;

use crate::errors::Errors;

/// The crate path to use in emitted code. `None` (with errors pushed) when the attribute is
/// malformed.
pub(crate) fn crate_path(attrs: &[Attribute], errors: &mut Errors) -> Option<Path> {
    let mut path = None;
    let mut ok = true;
    for attr in attrs.iter().filter(|a| a.path().is_ident("agent")) {
        let result = attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("crate") {
                return Err(meta.error(TagErrorKind::CratePath {
                    problem: "unknown `agent` attribute key; expected `crate = \"path\"`".into(),
                }));
            }
            let value = meta.value()?.parse::<LitStr>()?;
            match value.parse::<Path>() {
                Ok(parsed) => path = Some(parsed),
                Err(_) => {
                    let problem = format!("\"{}\" is not a Rust path", value.value());
                    return Err(syn::Error::new(
                        value.span(),
                        TagErrorKind::CratePath { problem },
                    ));
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
            ok = false;
        }
    }
    ok.then(|| path.unwrap_or_else(found_crate))
}

/// The path of `tea_agent_schema` from the app's dependencies.
fn found_crate() -> Path {
    match crate_name("tea-agent-schema") {
        Ok(FoundCrate::Itself) => return syn::parse_quote!(::tea_agent_schema),
        Ok(FoundCrate::Name(name)) => {
            let name = Ident::new(&name, Span::call_site());
            return syn::parse_quote!(::#name);
        }
        Err(_) => {}
    }
    if let Ok(FoundCrate::Name(name)) = crate_name("tea-agent-runtime") {
        let name = Ident::new(&name, Span::call_site());
        return syn::parse_quote!(::#name::tea_agent_schema);
    }
    syn::parse_quote!(::tea_agent_schema)
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    use super::found_crate;

    /// `found_crate` for a package whose `Cargo.toml` lists `dependencies`.
    fn found_with(name: &str, dependencies: &str) -> String {
        let dir = std::env::temp_dir().join(format!("agent-derive-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let manifest = format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\n{dependencies}"
        );
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        let saved = std::env::var_os("CARGO_MANIFEST_DIR");
        std::env::set_var("CARGO_MANIFEST_DIR", &dir);
        let path = found_crate().to_token_stream().to_string().replace(' ', "");
        match saved {
            Some(value) => std::env::set_var("CARGO_MANIFEST_DIR", value),
            None => std::env::remove_var("CARGO_MANIFEST_DIR"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        path
    }

    #[test]
    fn the_schema_crate_is_found_directly_or_through_the_runtime() {
        assert_eq!(
            found_with("direct", "tea-agent-schema = \"0.1\"\n"),
            "::tea_agent_schema"
        );
        assert_eq!(
            found_with(
                "renamed",
                "schema = { package = \"tea-agent-schema\", version = \"0.1\" }\n"
            ),
            "::schema"
        );
        assert_eq!(
            found_with("runtime_only", "tea-agent-runtime = \"0.1\"\n"),
            "::tea_agent_runtime::tea_agent_schema"
        );
        assert_eq!(found_with("neither", ""), "::tea_agent_schema");
    }
}
