//! Small readings of `syn` trees: attributes (`cfg`, `doc(hidden)`, `path`), item names and
//! kinds, and `use` trees flattened into paths.

use syn::punctuated::Punctuated;
use syn::{Attribute, Item, Meta, Token, UseTree, Visibility};

/// Whether an item with these attributes is compiled. `test` is off; `features` is what
/// `feature = "…"` evaluates to (`None`: unknown, either way). Other predicates are unknown;
/// an item is dropped only when its `cfg` is surely false.
pub(crate) fn cfg_enabled(attrs: &[Attribute], features: Option<bool>) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .filter_map(|a| a.parse_args::<Meta>().ok())
        .all(|meta| eval_cfg(&meta, features) != Some(false))
}

fn eval_cfg(meta: &Meta, features: Option<bool>) -> Option<bool> {
    match meta {
        Meta::Path(p) if p.is_ident("test") => Some(false),
        Meta::Path(_) => None,
        Meta::NameValue(nv) if nv.path.is_ident("feature") => features,
        Meta::NameValue(_) => None,
        Meta::List(list) => {
            let inner = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()?;
            let values: Vec<Option<bool>> = inner.iter().map(|m| eval_cfg(m, features)).collect();
            if list.path.is_ident("not") {
                values.first().copied().flatten().map(|b| !b)
            } else if list.path.is_ident("all") {
                if values.contains(&Some(false)) {
                    Some(false)
                } else {
                    values.iter().all(|v| *v == Some(true)).then_some(true)
                }
            } else if list.path.is_ident("any") {
                if values.contains(&Some(true)) {
                    Some(true)
                } else {
                    values.iter().all(|v| *v == Some(false)).then_some(false)
                }
            } else {
                None
            }
        }
    }
}

/// `#[doc(hidden)]`.
pub(crate) fn hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| match &a.meta {
        Meta::List(list) if list.path.is_ident("doc") => list
            .tokens
            .clone()
            .into_iter()
            .any(|t| t.to_string() == "hidden"),
        _ => false,
    })
}

/// The value of `#[path = "…"]`, if any.
pub(crate) fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `#[macro_export]`.
pub(crate) fn macro_export(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("macro_export"))
}

/// An item's attributes.
pub(crate) fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// An item's visibility (`None` for items that have none: impls, macros…).
pub(crate) fn item_vis(item: &Item) -> Option<&Visibility> {
    match item {
        Item::Const(i) => Some(&i.vis),
        Item::Enum(i) => Some(&i.vis),
        Item::ExternCrate(i) => Some(&i.vis),
        Item::Fn(i) => Some(&i.vis),
        Item::Mod(i) => Some(&i.vis),
        Item::Static(i) => Some(&i.vis),
        Item::Struct(i) => Some(&i.vis),
        Item::Trait(i) => Some(&i.vis),
        Item::TraitAlias(i) => Some(&i.vis),
        Item::Type(i) => Some(&i.vis),
        Item::Union(i) => Some(&i.vis),
        Item::Use(i) => Some(&i.vis),
        _ => None,
    }
}

/// Exactly `pub` (not `pub(crate)`, `pub(super)`, `pub(in …)`).
pub(crate) fn is_pub(vis: Option<&Visibility>) -> bool {
    matches!(vis, Some(Visibility::Public(_)))
}

/// The name an item defines and its kind (`struct`, `fn`, `mod`, `macro`…).
pub(crate) fn item_name_kind(item: &Item) -> Option<(String, &'static str)> {
    let (ident, kind) = match item {
        Item::Const(i) => (&i.ident, "const"),
        Item::Enum(i) => (&i.ident, "enum"),
        Item::Fn(i) => (&i.sig.ident, "fn"),
        Item::Macro(i) => (i.ident.as_ref()?, "macro"),
        Item::Mod(i) => (&i.ident, "mod"),
        Item::Static(i) => (&i.ident, "static"),
        Item::Struct(i) => (&i.ident, "struct"),
        Item::Trait(i) => (&i.ident, "trait"),
        Item::TraitAlias(i) => (&i.ident, "trait"),
        Item::Type(i) => (&i.ident, "type"),
        Item::Union(i) => (&i.ident, "union"),
        _ => return None,
    };
    Some((ident.to_string(), kind))
}

/// One path of a `use` item: `segs` as written (a leading `::` is kept as a segment), the name
/// it binds (`None` for a glob) and the line of its last segment.
#[derive(Debug, Clone)]
pub(crate) struct UseLeaf {
    pub segs: Vec<String>,
    pub name: Option<String>,
    pub line: usize,
}

/// The paths a `use` item imports.
pub(crate) fn use_leaves(item: &syn::ItemUse) -> Vec<UseLeaf> {
    let mut prefix = Vec::new();
    if item.leading_colon.is_some() {
        prefix.push("::".to_string());
    }
    let mut out = Vec::new();
    flatten(&item.tree, &mut prefix, item_line(item), &mut out);
    out
}

fn item_line(item: &syn::ItemUse) -> usize {
    item.use_token.span.start().line
}

fn flatten(tree: &UseTree, prefix: &mut Vec<String>, line: usize, out: &mut Vec<UseLeaf>) {
    let leaf = |prefix: &[String], ident: &syn::Ident, rename: Option<&syn::Ident>| {
        let mut segs = prefix.to_vec();
        if ident != "self" {
            segs.push(ident.to_string());
        }
        let name = rename
            .map(ToString::to_string)
            .or_else(|| segs.last().cloned());
        UseLeaf {
            segs,
            name,
            line: ident.span().start().line,
        }
    };
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, line, out);
            prefix.pop();
        }
        UseTree::Name(n) => out.push(leaf(prefix, &n.ident, None)),
        UseTree::Rename(r) => out.push(leaf(prefix, &r.ident, Some(&r.rename))),
        UseTree::Glob(_) => out.push(UseLeaf {
            segs: prefix.clone(),
            name: None,
            line,
        }),
        UseTree::Group(g) => g.items.iter().for_each(|t| flatten(t, prefix, line, out)),
    }
}
