//! Architecture checks on a crate's sources, read with `syn` (nothing is compiled): the graph
//! of the imports between its modules, which must have no cycles, and its public API, kept as
//! a snapshot.
//!
//! [`Crate::from_dir`] (or [`Crate::from_sources`] for fixtures) reads the module tree from
//! `lib.rs`; [`Crate::graph`] gives the module graph and its [`Graph::cycles`];
//! [`Crate::public_api`] lists what the crate exports.

mod api;
mod graph;
mod resolve;
mod syntax;

pub use api::PublicApi;
pub use graph::{Cycle, Edge, Graph};

use std::collections::BTreeMap;
use std::path::Path;

use syn::Item;

/// One module of the crate: a file or an inline `mod x { … }` block.
#[derive(Debug)]
pub struct Module {
    /// Path from the crate root (empty for the root).
    pub path: Vec<String>,
    /// The file that holds it, relative to the source directory.
    pub file: String,
    /// Test code: `#[cfg(test)]`, `mod tests`, a file `tests.rs` or `*_tests.rs`, or inside one.
    pub test: bool,
    /// The parent module (`None` for the root).
    pub parent: Option<usize>,
    /// Child modules by name.
    pub children: BTreeMap<String, usize>,
    /// Its items; a child module's items are in that child's [`Module`].
    pub items: Vec<Item>,
}

impl Module {
    /// `crate` for the root, else the path joined with `::`.
    pub fn name(&self) -> String {
        if self.path.is_empty() {
            "crate".to_string()
        } else {
            self.path.join("::")
        }
    }
}

/// A crate's module tree, parsed.
#[derive(Debug)]
pub struct Crate {
    /// The modules; the root is index 0.
    pub modules: Vec<Module>,
    /// Problems met while reading (a declared module without a file…).
    pub warnings: Vec<String>,
    scopes: Vec<resolve::Scope>,
}

/// Where a module declaration sits, to find the module's file and its children's.
struct Decl {
    path: Vec<String>,
    file: String,
    /// The directory of its child modules' files.
    dir: String,
    /// The directory a `#[path]` on a child's declaration is relative to.
    path_base: String,
    parent: Option<usize>,
    test: bool,
}

impl Crate {
    /// Reads the crate whose `lib.rs` is in `dir` (every `.rs` file under it).
    pub fn from_dir(dir: &Path) -> Result<Crate, String> {
        let mut files = BTreeMap::new();
        read_dir(dir, "", &mut files)?;
        Crate::from_sources(files)
    }

    /// Reads a crate from its files' texts, keyed by path relative to the source directory
    /// (`lib.rs`, `a.rs`, `a/mod.rs`, `a/b.rs`…).
    pub fn from_sources<I, K, V>(files: I) -> Result<Crate, String>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let files: BTreeMap<String, String> = files
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let mut krate = Crate {
            modules: Vec::new(),
            warnings: Vec::new(),
            scopes: Vec::new(),
        };
        let root = Decl {
            path: Vec::new(),
            file: "lib.rs".into(),
            dir: String::new(),
            path_base: String::new(),
            parent: None,
            test: false,
        };
        let items = parse(&files, "lib.rs")?;
        krate.add(&files, root, items)?;
        krate.scopes = resolve::scopes(&krate);
        Ok(krate)
    }

    fn add(
        &mut self,
        files: &BTreeMap<String, String>,
        decl: Decl,
        items: Vec<Item>,
    ) -> Result<usize, String> {
        let idx = self.modules.len();
        self.modules.push(Module {
            path: decl.path.clone(),
            file: decl.file.clone(),
            test: decl.test,
            parent: decl.parent,
            children: BTreeMap::new(),
            items: Vec::new(),
        });
        let mut kept = Vec::with_capacity(items.len());
        for mut item in items {
            if let Item::Mod(m) = &mut item {
                let name = m.ident.to_string();
                let mut child = Decl {
                    path: [decl.path.clone(), vec![name.clone()]].concat(),
                    file: decl.file.clone(),
                    dir: join(&decl.dir, &name),
                    path_base: join(&decl.dir, &name),
                    parent: Some(idx),
                    test: decl.test || name == "tests" || !syntax::cfg_enabled(&m.attrs, None),
                };
                let items = if let Some((_, inner)) = m.content.take() {
                    inner
                } else {
                    let candidates = match syntax::path_attr(&m.attrs) {
                        Some(p) => vec![join(&decl.path_base, &p)],
                        None => vec![
                            join(&decl.dir, &format!("{name}.rs")),
                            join(&decl.dir, &format!("{name}/mod.rs")),
                        ],
                    };
                    match candidates.into_iter().find(|c| files.contains_key(c)) {
                        Some(file) => {
                            let base = parent_dir(&file);
                            let mod_rs =
                                file.ends_with("mod.rs") || syntax::path_attr(&m.attrs).is_some();
                            child.dir = if mod_rs {
                                base.clone()
                            } else {
                                file.trim_end_matches(".rs").to_string()
                            };
                            child.path_base = base;
                            child.test |= is_test_file(&file);
                            child.file = file;
                            parse(files, &child.file)?
                        }
                        None => {
                            self.warnings
                                .push(format!("{}: no file for `mod {name};`", decl.file));
                            Vec::new()
                        }
                    }
                };
                let c = self.add(files, child, items)?;
                self.modules[idx].children.insert(name, c);
            }
            kept.push(item);
        }
        self.modules[idx].items = kept;
        Ok(idx)
    }

    /// The module with this path (`a::b`, or `crate` for the root).
    pub fn module(&self, name: &str) -> Option<usize> {
        self.modules.iter().position(|m| m.name() == name)
    }

    /// `file:line`.
    pub(crate) fn location(&self, module: usize, line: usize) -> String {
        format!("{}:{line}", self.modules[module].file)
    }
}

fn parse(files: &BTreeMap<String, String>, file: &str) -> Result<Vec<Item>, String> {
    let text = files.get(file).ok_or_else(|| format!("no file {file}"))?;
    syn::parse_file(text)
        .map(|f| f.items)
        .map_err(|e| format!("{file}: {e}"))
}

fn read_dir(dir: &Path, rel: &str, out: &mut BTreeMap<String, String>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            read_dir(&path, &join(rel, &name), out)?;
        } else if name.ends_with(".rs") {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            out.insert(join(rel, &name), text);
        }
    }
    Ok(())
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn parent_dir(file: &str) -> String {
    file.rsplit_once('/')
        .map(|(d, _)| d.to_string())
        .unwrap_or_default()
}

fn is_test_file(file: &str) -> bool {
    let base = file.rsplit('/').next().unwrap_or(file);
    base == "tests.rs" || base.ends_with("_tests.rs")
}

/// The whole report on `krate` (its paths starting with `name`): the cycles at each level,
/// the graph of the top-level modules, the module map and the public API with its counts.
pub fn report(krate: &Crate, name: &str) -> String {
    use std::fmt::Write as _;
    let graph = krate.graph();
    let cycles = graph.cycles();
    let mut out = String::new();
    for w in &krate.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let (top, nested): (Vec<&Cycle>, Vec<&Cycle>) =
        cycles.iter().partition(|c| c.parent == "crate");
    let _ = writeln!(out, "== Cycles among top-level modules: {}", top.len());
    top.iter().for_each(|c| out.push_str(&c.to_string()));
    let _ = writeln!(out, "\n== Cycles among sibling modules: {}", nested.len());
    nested.iter().for_each(|c| out.push_str(&c.to_string()));
    let _ = writeln!(out, "\n== Top-level module graph");
    for e in graph.level("crate") {
        let _ = writeln!(
            out,
            "{} -> {}  ({}×, e.g. {})",
            e.from, e.to, e.count, e.example
        );
    }
    let _ = writeln!(out, "\n== Module map");
    out.push_str(&graph.module_map());
    let api = krate.public_api(name);
    let _ = writeln!(out, "\n== Public API: {}", api.counts());
    for line in api.lines() {
        let _ = writeln!(out, "{line}");
    }
    out
}
