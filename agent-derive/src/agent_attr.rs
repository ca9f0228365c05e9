//! The derive's own attribute: `#[agent(crate = "path")]` on the enum names the path of the
//! `agent_schema` crate in emitted code (default `::agent_schema`), for apps that only depend
//! on a crate re-exporting it.

use syn::{Attribute, LitStr, Path};

use crate::errors::Errors;

/// The crate path from `#[agent(crate = "…")]`, or `::agent_schema`. `None` (with errors
/// pushed) when the attribute is malformed.
pub(crate) fn crate_path(attrs: &[Attribute], errors: &mut Errors) -> Option<Path> {
    let mut path: Path = syn::parse_quote!(::agent_schema);
    let mut ok = true;
    for attr in attrs.iter().filter(|a| a.path().is_ident("agent")) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                path = meta.value()?.parse::<LitStr>()?.parse()?;
                Ok(())
            } else {
                Err(meta.error("unknown `agent` attribute key; expected `crate = \"path\"`"))
            }
        });
        if let Err(error) = result {
            errors.push(error);
            ok = false;
        }
    }
    ok.then_some(path)
}
