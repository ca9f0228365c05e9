//! Name resolution, as far as the checks need it: what each module defines and imports, paths
//! made absolute (`crate::…`) and followed through re-exports to the module that defines the
//! item.

use std::collections::{BTreeMap, BTreeSet};

use syn::Item;

use super::syntax::{
    cfg_enabled, hidden, is_pub, item_attrs, item_name_kind, item_vis, use_leaves,
};
use super::Crate;

/// How deep re-exports and globs are followed (a guard against loops).
const MAX_DEPTH: usize = 16;

/// The names a module's items bring into scope.
#[derive(Debug, Default)]
pub(crate) struct Scope {
    /// Names the module defines: kind and index in `Module::items`.
    pub defs: BTreeMap<String, Vec<(&'static str, usize)>>,
    /// Names it imports (`use`), with the path as written.
    pub imports: BTreeMap<String, Vec<String>>,
    /// Its glob imports, as written.
    pub globs: Vec<Vec<String>>,
    /// The names it makes `pub` (items, `pub use`, `pub mod`).
    pub public: BTreeSet<String>,
    /// Its `pub use …::*`, as written.
    pub public_globs: Vec<Vec<String>>,
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Res {
    /// A module (`item: None`) or an item defined in a module of the crate.
    Local { module: usize, item: Option<String> },
    /// Something of another crate: its path.
    Extern(Vec<String>),
}

/// The scopes of all modules (test code and items `cfg`'d off for sure left out).
pub(crate) fn scopes(krate: &Crate) -> Vec<Scope> {
    krate
        .modules
        .iter()
        .map(|module| {
            let mut scope = Scope::default();
            for (idx, item) in module.items.iter().enumerate() {
                if !cfg_enabled(item_attrs(item), None) {
                    continue;
                }
                let public = is_pub(item_vis(item)) && !hidden(item_attrs(item));
                if let Item::Use(u) = item {
                    for leaf in use_leaves(u) {
                        match leaf.name {
                            Some(name) => {
                                if public {
                                    scope.public.insert(name.clone());
                                }
                                scope.imports.entry(name).or_insert(leaf.segs);
                            }
                            None if public => {
                                scope.public_globs.push(leaf.segs.clone());
                                scope.globs.push(leaf.segs);
                            }
                            None => scope.globs.push(leaf.segs),
                        }
                    }
                } else if let Some((name, kind)) = item_name_kind(item) {
                    if public {
                        scope.public.insert(name.clone());
                    }
                    // A child module is found through `Module::children`.
                    if kind != "mod" {
                        scope.defs.entry(name).or_default().push((kind, idx));
                    }
                }
            }
            scope
        })
        .collect()
}

impl Crate {
    pub(crate) fn scope(&self, module: usize) -> &Scope {
        &self.scopes[module]
    }

    /// `segs`, as written in `module`, made absolute: `crate::…` for the crate's own paths,
    /// else the other crate's path (or, for names not known here — generics, `Self`, locals —
    /// the path unchanged, which does not start with `crate`).
    pub(crate) fn absolute(&self, module: usize, segs: &[String]) -> Vec<String> {
        self.absolute_at(module, segs, 0)
    }

    fn absolute_at(&self, module: usize, segs: &[String], depth: usize) -> Vec<String> {
        let Some(first) = segs.first() else {
            return Vec::new();
        };
        let here = |rest: &[String]| -> Vec<String> {
            let mut out = vec!["crate".to_string()];
            out.extend(self.modules[module].path.iter().cloned());
            out.extend(rest.iter().cloned());
            out
        };
        match first.as_str() {
            "crate" | "$crate" => [vec!["crate".to_string()], segs[1..].to_vec()].concat(),
            "::" => segs[1..].to_vec(),
            "self" => here(&segs[1..]),
            "super" => {
                let mut m = module;
                let mut i = 0;
                while segs.get(i).is_some_and(|s| s == "super") {
                    m = self.modules[m].parent.unwrap_or(0);
                    i += 1;
                }
                self.absolute_at(
                    m,
                    &[vec!["self".to_string()], segs[i..].to_vec()].concat(),
                    depth,
                )
            }
            _ if self.modules[module].children.contains_key(first) => here(segs),
            _ if self.scopes[module].defs.contains_key(first) => here(segs),
            _ => match self.scopes[module].imports.get(first) {
                Some(target) if depth < MAX_DEPTH && target.as_slice() != [first.clone()] => {
                    let mut out = self.absolute_at(module, target, depth + 1);
                    out.extend(segs[1..].iter().cloned());
                    out
                }
                _ => segs.to_vec(),
            },
        }
    }

    /// What an absolute path names: where its item is defined, through re-exports and globs
    /// (more than one answer when a name is both a module and an item). Empty when not found.
    pub(crate) fn resolve(&self, abs: &[String]) -> Vec<Res> {
        self.resolve_at(abs, 0)
    }

    fn resolve_at(&self, abs: &[String], depth: usize) -> Vec<Res> {
        if abs.first().map(String::as_str) != Some("crate") {
            return vec![Res::Extern(abs.to_vec())];
        }
        let mut m = 0;
        for (i, seg) in abs.iter().enumerate().skip(1) {
            let last = i + 1 == abs.len();
            let child = self.modules[m].children.get(seg).copied();
            if let (Some(c), false) = (child, last) {
                m = c;
                continue;
            }
            let mut out: Vec<Res> = child
                .map(|c| Res::Local {
                    module: c,
                    item: None,
                })
                .into_iter()
                .collect();
            let scope = &self.scopes[m];
            if scope.defs.contains_key(seg) {
                out.push(Res::Local {
                    module: m,
                    item: Some(seg.clone()),
                });
                return out;
            }
            if depth >= MAX_DEPTH {
                return out;
            }
            if let Some(target) = scope.imports.get(seg) {
                let mut next = self.absolute(m, target);
                next.extend(abs[i + 1..].iter().cloned());
                out.extend(self.resolve_at(&next, depth + 1));
            } else {
                for glob in &scope.globs {
                    let mut next = self.absolute(m, glob);
                    if next.first().map(String::as_str) != Some("crate") {
                        continue;
                    }
                    next.extend(abs[i..].iter().cloned());
                    let found = self.resolve_at(&next, depth + 1);
                    if !found.is_empty() {
                        out.extend(found);
                        break;
                    }
                }
            }
            return out;
        }
        vec![Res::Local {
            module: m,
            item: None,
        }]
    }

    /// The module an absolute path reaches by its module segments alone.
    pub(crate) fn module_prefix(&self, abs: &[String]) -> usize {
        let mut m = 0;
        for seg in abs.iter().skip(1) {
            match self.modules[m].children.get(seg) {
                Some(&c) => m = c,
                None => break,
            }
        }
        m
    }

    /// The names `module` makes `pub`, with those of its `pub use …::*`.
    pub(crate) fn public_names(&self, module: usize, depth: usize) -> BTreeSet<String> {
        let scope = &self.scopes[module];
        let mut names = scope.public.clone();
        if depth < MAX_DEPTH {
            for glob in &scope.public_globs {
                let abs = self.absolute(module, glob);
                for res in self.resolve(&abs) {
                    if let Res::Local {
                        module: m,
                        item: None,
                    } = res
                    {
                        names.extend(self.public_names(m, depth + 1));
                    }
                }
            }
        }
        names
    }
}
