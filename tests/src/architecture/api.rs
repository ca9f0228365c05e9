//! The public API: every item reachable from the crate root by `pub` paths (all features on,
//! test code and `#[doc(hidden)]` left out), with the pub fields and inherent pub methods of
//! the public types. Functions, methods, constants and fields carry their signature or type,
//! so a changed parameter type shows in review.

use std::collections::{BTreeMap, BTreeSet};

use quote::ToTokens;
use syn::{ImplItem, Item, Type};

use super::resolve::Res;
use super::syntax::{
    cfg_enabled, hidden, is_pub, item_attrs, item_name_kind, item_vis, macro_export, use_leaves,
    UseLeaf,
};
use super::Crate;

/// A crate's public API, as sorted lines `kind path`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublicApi {
    /// Items, one per public path: `struct krate::a::S`, `mod krate::a`, `reexport krate::X =
    /// other::X` (an item of another crate, counted once)…
    pub items: BTreeSet<String>,
    /// Pub fields of the public structs and unions: `field krate::S.name`, at the type's
    /// shortest public path.
    pub fields: BTreeSet<String>,
    /// Pub functions of the inherent impls of the public types: `method krate::S::new`.
    pub methods: BTreeSet<String>,
}

impl PublicApi {
    /// Every line, sorted: items, then fields, then methods.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.items.iter().cloned().collect();
        lines.extend(self.fields.iter().cloned());
        lines.extend(self.methods.iter().cloned());
        lines
    }

    /// `items: N, fields: N, methods: N`.
    pub fn counts(&self) -> String {
        format!(
            "items: {}, fields: {}, methods: {}",
            self.items.len(),
            self.fields.len(),
            self.methods.len()
        )
    }
}

struct Walker<'a> {
    krate: &'a Crate,
    api: PublicApi,
    /// Public types (module, name) → their public paths.
    types: BTreeMap<(usize, String), BTreeSet<String>>,
    seen: BTreeSet<(usize, String)>,
}

impl Crate {
    /// The public API, paths starting with `name` (the crate's name as other crates write it).
    pub fn public_api(&self, name: &str) -> PublicApi {
        let mut w = Walker {
            krate: self,
            api: PublicApi::default(),
            types: BTreeMap::new(),
            seen: BTreeSet::new(),
        };
        w.module(0, name);
        for module in self.modules.iter().filter(|m| !m.test) {
            for item in &module.items {
                if let Item::Macro(m) = item {
                    let attrs = &m.attrs;
                    if let (Some(ident), true) = (&m.ident, macro_export(attrs)) {
                        if cfg_enabled(attrs, Some(true)) && !hidden(attrs) {
                            w.api.items.insert(format!("macro {name}::{ident}"));
                        }
                    }
                }
            }
        }
        w.members();
        w.api
    }
}

/// Shown in the API: compiled with all features, not test-only, not hidden.
fn shown(attrs: &[syn::Attribute]) -> bool {
    cfg_enabled(attrs, Some(true)) && !hidden(attrs)
}

impl Walker<'_> {
    fn module(&mut self, m: usize, prefix: &str) {
        if !self.seen.insert((m, prefix.to_string())) {
            return;
        }
        let krate = self.krate;
        for item in &krate.modules[m].items {
            if !shown(item_attrs(item)) || !is_pub(item_vis(item)) {
                continue;
            }
            match item {
                Item::Use(u) => {
                    for leaf in use_leaves(u) {
                        self.reexport(m, prefix, leaf, 0);
                    }
                }
                Item::Mod(md) => {
                    let name = md.ident.to_string();
                    if let Some(&c) = krate.modules[m].children.get(&name) {
                        if !krate.modules[c].test {
                            let path = format!("{prefix}::{name}");
                            self.api.items.insert(format!("mod {path}"));
                            self.module(c, &path);
                        }
                    }
                }
                Item::ExternCrate(e) => {
                    let name = e.rename.as_ref().map_or(&e.ident, |(_, r)| r);
                    self.api
                        .items
                        .insert(format!("reexport {prefix}::{name} = {}", e.ident));
                }
                _ => {
                    if let Some((name, kind)) = item_name_kind(item) {
                        let path = format!("{prefix}::{name}");
                        self.emit(kind, m, &name, &format!("{path}{}", signature(item)));
                    }
                }
            }
        }
    }

    /// Records an item; `path` may end with its signature (`(…) -> …`, `: Type`), which the
    /// types' own paths never carry.
    fn emit(&mut self, kind: &str, module: usize, name: &str, path: &str) {
        self.api.items.insert(format!("{kind} {path}"));
        if matches!(kind, "struct" | "enum" | "union") {
            self.types
                .entry((module, name.to_string()))
                .or_default()
                .insert(path.to_string());
        }
    }

    fn reexport(&mut self, m: usize, prefix: &str, leaf: UseLeaf, depth: usize) {
        let krate = self.krate;
        let abs = krate.absolute(m, &leaf.segs);
        let Some(name) = leaf.name else {
            // `pub use a::*`: every public name of `a`.
            if depth > 8 {
                return;
            }
            for res in krate.resolve(&abs) {
                match res {
                    Res::Local { module, item: None } => {
                        for name in krate.public_names(module, 0) {
                            let segs = [abs.clone(), vec![name.clone()]].concat();
                            let leaf = UseLeaf {
                                segs,
                                name: Some(name),
                                line: leaf.line,
                            };
                            self.reexport(m, prefix, leaf, depth + 1);
                        }
                    }
                    Res::Extern(p) => {
                        let p = p.join("::");
                        self.api
                            .items
                            .insert(format!("reexport {prefix}::* = {p}::*"));
                    }
                    Res::Local { .. } => {}
                }
            }
            return;
        };
        let path = format!("{prefix}::{name}");
        let found = krate.resolve(&abs);
        if found.is_empty() {
            self.api.items.insert(format!("item {path}"));
        }
        for res in found {
            match res {
                Res::Extern(p) => {
                    self.api
                        .items
                        .insert(format!("reexport {path} = {}", p.join("::")));
                }
                Res::Local { module, item: None } => {
                    self.api.items.insert(format!("mod {path}"));
                    self.module(module, &path);
                }
                Res::Local {
                    module,
                    item: Some(item),
                } => {
                    let kinds: Vec<&str> = krate
                        .scope(module)
                        .defs
                        .get(&item)
                        .map(|d| d.iter().map(|(k, _)| *k).collect())
                        .unwrap_or_default();
                    if kinds.is_empty() {
                        self.api.items.insert(format!("item {path}"));
                    }
                    let defs = krate.scope(module).defs.get(&item).cloned();
                    for (kind, idx) in defs.into_iter().flatten() {
                        let shape = signature(&krate.modules[module].items[idx]);
                        self.emit(kind, module, &item, &format!("{path}{shape}"));
                    }
                }
            }
        }
    }

    /// Fields and inherent methods of the public types, at each type's shortest public path.
    fn members(&mut self) {
        let krate = self.krate;
        let canonical: BTreeMap<(usize, String), String> = self
            .types
            .iter()
            .filter_map(|(k, paths)| {
                let best = paths
                    .iter()
                    .min_by_key(|p| (p.matches("::").count(), p.to_string()))?;
                Some((k.clone(), best.clone()))
            })
            .collect();
        for ((module, name), path) in &canonical {
            for &(kind, idx) in krate.scope(*module).defs.get(name).into_iter().flatten() {
                let fields = match (&krate.modules[*module].items[idx], kind) {
                    (Item::Struct(s), "struct") => &s.fields,
                    (Item::Union(u), "union") => {
                        for f in u.fields.named.iter().filter(|f| is_pub(Some(&f.vis))) {
                            if shown(&f.attrs) {
                                let name = f.ident.as_ref().expect("named");
                                let ty = tokens(&f.ty);
                                self.api.fields.insert(format!("field {path}.{name}: {ty}"));
                            }
                        }
                        continue;
                    }
                    _ => continue,
                };
                for (i, f) in fields.iter().enumerate() {
                    if is_pub(Some(&f.vis)) && shown(&f.attrs) {
                        let fname = f.ident.as_ref().map_or(i.to_string(), ToString::to_string);
                        let ty = tokens(&f.ty);
                        self.api
                            .fields
                            .insert(format!("field {path}.{fname}: {ty}"));
                    }
                }
            }
        }
        for (m, module) in krate.modules.iter().enumerate() {
            if module.test {
                continue;
            }
            for item in &module.items {
                let Item::Impl(imp) = item else { continue };
                if imp.trait_.is_some() || !shown(&imp.attrs) {
                    continue;
                }
                let Type::Path(tp) = &*imp.self_ty else {
                    continue;
                };
                if tp.qself.is_some() {
                    continue;
                }
                let segs: Vec<String> = tp
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                let abs = krate.absolute(m, &segs);
                for res in krate.resolve(&abs) {
                    let Res::Local {
                        module,
                        item: Some(name),
                    } = res
                    else {
                        continue;
                    };
                    let Some(path) = canonical.get(&(module, name)) else {
                        continue;
                    };
                    for f in &imp.items {
                        if let ImplItem::Fn(f) = f {
                            if is_pub(Some(&f.vis)) && shown(&f.attrs) {
                                let shape = fn_shape(&f.sig);
                                let line = format!("method {path}::{}{shape}", f.sig.ident);
                                self.api.methods.insert(line);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What follows an item's path in the listing: a function's `(parameters) -> output`, a
/// constant's or static's `: Type`, nothing for the rest.
fn signature(item: &Item) -> String {
    match item {
        Item::Fn(f) => fn_shape(&f.sig),
        Item::Const(c) => format!(": {}", tokens(&c.ty)),
        Item::Static(s) => format!(": {}", tokens(&s.ty)),
        Item::Type(t) => format!("{} = {}", tokens(&t.generics), tokens(&t.ty)),
        _ => String::new(),
    }
}

/// `<generics>(parameters) -> output where …` of a signature, `async` first when it is.
fn fn_shape(sig: &syn::Signature) -> String {
    let mut shape = String::new();
    if sig.asyncness.is_some() {
        shape.push_str(" async");
    }
    shape.push_str(&tokens(&sig.generics));
    shape.push('(');
    let inputs: Vec<String> = sig.inputs.iter().map(tokens).collect();
    shape.push_str(&inputs.join(", "));
    shape.push(')');
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        shape.push_str(" -> ");
        shape.push_str(&tokens(ty));
    }
    if let Some(w) = &sig.generics.where_clause {
        shape.push(' ');
        shape.push_str(&tokens(w));
    }
    shape
}

/// Tokens as Rust is written: `Option<&'a str>`, not `Option < & 'a str >`. (Types and
/// signatures hold no string literals, so the printed tokens split on spaces.)
fn tokens(t: &impl ToTokens) -> String {
    let printed = t.to_token_stream().to_string();
    let mut out = String::with_capacity(printed.len());
    let mut prev = "";
    for token in printed.split(' ') {
        let ident_before = prev
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let glued = prev.is_empty()
            || matches!(prev, "(" | "[" | "<" | "&" | "::" | "#" | "!")
            || matches!(token, "," | ";" | ")" | "]" | ">" | "?" | ":" | "::")
            || (ident_before && matches!(token, "(" | "<" | "!"));
        if !glued {
            out.push(' ');
        }
        out.push_str(token);
        prev = token;
    }
    out
}
