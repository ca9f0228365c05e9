//! The module graph: an edge from a module to each module whose items it names (`use`, paths
//! in code, paths in macro input), its cycles at each level of the tree, and a printable map.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::Item;

use super::resolve::Res;
use super::syntax::{cfg_enabled, item_attrs, use_leaves};
use super::Crate;

/// The import graph between a crate's modules (test code left out).
#[derive(Debug)]
pub struct Graph {
    names: Vec<String>,
    parents: Vec<Option<usize>>,
    test: Vec<bool>,
    /// (from, to) → (how many references, the first one's `file:line`).
    edges: BTreeMap<(usize, usize), (usize, String)>,
}

/// An edge of the graph, or of a level of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The module that names something.
    pub from: String,
    /// The module it names.
    pub to: String,
    /// How many references make it.
    pub count: usize,
    /// One of them, as `file:line`.
    pub example: String,
}

/// A cycle: modules of one level (the children of `parent`) that all
/// reach one another (a strongly connected component), with the edges between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The module whose children these are (`crate` for the top level).
    pub parent: String,
    /// The modules in the cycle.
    pub nodes: Vec<String>,
    /// The edges among them.
    pub edges: Vec<Edge>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "cycle under `{}`: {}",
            self.parent,
            self.nodes.join(", ")
        )?;
        for e in &self.edges {
            writeln!(
                f,
                "    {} -> {}  ({}×, e.g. {})",
                e.from, e.to, e.count, e.example
            )?;
        }
        Ok(())
    }
}

/// Collects the paths a module's items name, with their lines.
struct Refs {
    out: Vec<(Vec<String>, usize)>,
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item(&mut self, item: &'ast Item) {
        // A child module is a node of its own; code `cfg`'d to tests only is left out.
        if matches!(item, Item::Mod(_)) || !cfg_enabled(item_attrs(item), None) {
            return;
        }
        visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if cfg_enabled(attrs, None) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        for leaf in use_leaves(item) {
            self.out.push((leaf.segs, leaf.line));
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        // One segment names something in scope: its `use`, if any, is an edge already.
        if path.segments.len() > 1 {
            let mut segs: Vec<String> = path.leading_colon.iter().map(|_| "::".into()).collect();
            segs.extend(path.segments.iter().map(|s| s.ident.to_string()));
            let line = path.segments[0].ident.span().start().line;
            self.out.push((segs, line));
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        scan_tokens(mac.tokens.clone(), &mut self.out);
        visit::visit_macro(self, mac);
    }
}

/// Paths (`a::b…`, two segments or more; `$crate::…`) in a macro's input.
fn scan_tokens(tokens: TokenStream, out: &mut Vec<(Vec<String>, usize)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let punct =
        |i: usize, c: char| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => scan_tokens(g.stream(), out),
            TokenTree::Ident(ident) => {
                let dollar = i > 0 && punct(i - 1, '$');
                let mut segs = vec![if dollar {
                    format!("${ident}")
                } else {
                    ident.to_string()
                }];
                let line = ident.span().start().line;
                while matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
                    && punct(i + 2, ':')
                {
                    let Some(TokenTree::Ident(next)) = tokens.get(i + 3) else {
                        break;
                    };
                    segs.push(next.to_string());
                    i += 3;
                }
                let macro_var = dollar && segs[0] != "$crate";
                if segs.len() > 1 && !macro_var {
                    out.push((segs, line));
                }
            }
            _ => {}
        }
        i += 1;
    }
}

impl Crate {
    /// The import graph between the crate's modules, test code left out.
    pub fn graph(&self) -> Graph {
        let mut edges: BTreeMap<(usize, usize), (usize, String)> = BTreeMap::new();
        for (m, module) in self.modules.iter().enumerate() {
            if module.test {
                continue;
            }
            let mut refs = Refs { out: Vec::new() };
            for item in &module.items {
                refs.visit_item(item);
            }
            for (segs, line) in refs.out {
                let abs = self.absolute(m, &segs);
                if abs.first().map(String::as_str) != Some("crate") {
                    continue;
                }
                let mut targets: Vec<usize> = self
                    .resolve(&abs)
                    .into_iter()
                    .filter_map(|r| match r {
                        Res::Local { module, .. } => Some(module),
                        Res::Extern(_) => None,
                    })
                    .collect();
                if targets.is_empty() {
                    targets.push(self.module_prefix(&abs));
                }
                targets.sort_unstable();
                targets.dedup();
                for t in targets {
                    if t != m && !self.modules[t].test {
                        let e = edges
                            .entry((m, t))
                            .or_insert_with(|| (0, self.location(m, line)));
                        e.0 += 1;
                    }
                }
            }
        }
        Graph {
            names: self.modules.iter().map(|m| m.name()).collect(),
            parents: self.modules.iter().map(|m| m.parent).collect(),
            test: self.modules.iter().map(|m| m.test).collect(),
            edges,
        }
    }
}

impl Graph {
    /// Every edge between two modules.
    pub fn edges(&self) -> Vec<Edge> {
        self.edges
            .iter()
            .map(|(&(from, to), (count, example))| Edge {
                from: self.names[from].clone(),
                to: self.names[to].clone(),
                count: *count,
                example: example.clone(),
            })
            .collect()
    }

    /// The node of `parent`'s level that `module` belongs to: `parent` itself, or the child of
    /// `parent` it is (or is inside of).
    fn node(&self, parent: usize, mut module: usize) -> Option<usize> {
        if module == parent {
            return Some(module);
        }
        while let Some(p) = self.parents[module] {
            if p == parent {
                return Some(module);
            }
            module = p;
        }
        None
    }

    /// The edges among `parent` and its children, each module collapsed to the one of them it
    /// is in (or under).
    pub fn level(&self, parent: &str) -> Vec<Edge> {
        let Some(p) = self.names.iter().position(|n| n == parent) else {
            return Vec::new();
        };
        let mut edges: Vec<Edge> = self
            .level_of(p)
            .into_iter()
            .map(|((from, to), (count, example))| Edge {
                from: self.names[from].clone(),
                to: self.names[to].clone(),
                count,
                example,
            })
            .collect();
        edges.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
        edges
    }

    /// The edges between `parent`'s children, each module collapsed to the child it is in (or
    /// under), the parent's own items left out: for `surface`, one surface importing another
    /// (`docs/architecture.md`, import rules).
    pub fn between_children(&self, parent: &str) -> Vec<Edge> {
        self.level(parent)
            .into_iter()
            .filter(|e| e.from != parent && e.to != parent)
            .collect()
    }

    fn level_of(&self, parent: usize) -> BTreeMap<(usize, usize), (usize, String)> {
        let mut level: BTreeMap<(usize, usize), (usize, String)> = BTreeMap::new();
        for (&(from, to), (count, example)) in &self.edges {
            if let (Some(a), Some(b)) = (self.node(parent, from), self.node(parent, to)) {
                if a != b {
                    let e = level.entry((a, b)).or_insert_with(|| (0, example.clone()));
                    e.0 += count;
                }
            }
        }
        level
    }

    /// The cycles at every level: among the crate's top-level modules (`parent` `crate`), then
    /// among each module's children. A module's own items (its `mod.rs`) are its folder's
    /// interface, used by its children and using them, so the parent is not a node of its
    /// level (`docs/architecture.md`, import rules).
    pub fn cycles(&self) -> Vec<Cycle> {
        let mut cycles = Vec::new();
        for parent in 0..self.names.len() {
            let has_children =
                (0..self.names.len()).any(|c| self.parents[c] == Some(parent) && !self.test[c]);
            if self.test[parent] || !has_children {
                continue;
            }
            let mut level = self.level_of(parent);
            level.retain(|&(a, b), _| a != parent && b != parent);
            for scc in components(&level) {
                if scc.len() < 2 {
                    continue;
                }
                let mut nodes: Vec<String> = scc.iter().map(|&n| self.names[n].clone()).collect();
                nodes.sort();
                let edges = level
                    .iter()
                    .filter(|((a, b), _)| scc.contains(a) && scc.contains(b))
                    .map(|(&(a, b), (count, example))| Edge {
                        from: self.names[a].clone(),
                        to: self.names[b].clone(),
                        count: *count,
                        example: example.clone(),
                    })
                    .collect();
                cycles.push(Cycle {
                    parent: self.names[parent].clone(),
                    nodes,
                    edges,
                });
            }
        }
        cycles
    }

    /// The module map: each module with the modules it names (count and one example).
    pub fn module_map(&self) -> String {
        let mut order: Vec<usize> = (0..self.names.len()).filter(|&m| !self.test[m]).collect();
        order.sort_by(|&a, &b| self.names[a].cmp(&self.names[b]));
        let mut out = String::new();
        for m in order {
            let _ = writeln!(out, "{}", self.names[m]);
            let mut targets: Vec<_> = self
                .edges
                .iter()
                .filter(|((from, _), _)| *from == m)
                .collect();
            targets.sort_by(|a, b| self.names[a.0 .1].cmp(&self.names[b.0 .1]));
            for ((_, to), (count, example)) in targets {
                let _ = writeln!(
                    out,
                    "    -> {}  ({count}×, e.g. {example})",
                    self.names[*to]
                );
            }
        }
        out
    }
}

/// The strongly connected components of a graph given by its edges (Tarjan).
fn components<V>(edges: &BTreeMap<(usize, usize), V>) -> Vec<Vec<usize>> {
    struct Tarjan<'a> {
        succ: BTreeMap<usize, Vec<usize>>,
        index: BTreeMap<usize, usize>,
        low: BTreeMap<usize, usize>,
        stack: Vec<usize>,
        on_stack: std::collections::BTreeSet<usize>,
        out: &'a mut Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.succ.get(&v).cloned().unwrap_or_default() {
                if !self.index.contains_key(&w) {
                    self.visit(w);
                    let lw = self.low[&w];
                    let lv = self.low.get_mut(&v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(&w) {
                    let iw = self.index[&w];
                    let lv = self.low.get_mut(&v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[&v] == self.index[&v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                self.out.push(scc);
            }
        }
    }
    let mut succ: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(a, b) in edges.keys() {
        succ.entry(a).or_default().push(b);
        succ.entry(b).or_default();
    }
    let nodes: Vec<usize> = succ.keys().copied().collect();
    let mut out = Vec::new();
    let mut t = Tarjan {
        succ,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: Default::default(),
        out: &mut out,
    };
    for v in nodes {
        if !t.index.contains_key(&v) {
            t.visit(v);
        }
    }
    out
}
