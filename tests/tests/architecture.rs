//! Architecture checks on tea-agent-runtime's sources, read with `syn` (see
//! `agent_tests::architecture`): no import cycles between its modules, no surface importing
//! another, and its public API as a snapshot under a ceiling. The fixture test proves the
//! checker can fail.

use std::path::Path;

use agent_tests::architecture::{Crate, Cycle};
use agent_tests::{api_version, build_graph};

/// The most public items (`PublicApi::items`) tea-agent-runtime may export.
const MAX_PUBLIC_ITEMS: usize = 200;

/// tea-agent-runtime's sources.
fn runtime() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-runtime/src");
    let krate = Crate::from_dir(&src).expect("tea-agent-runtime's sources");
    assert!(krate.warnings.is_empty(), "{:#?}", krate.warnings);
    krate
}

fn describe(cycles: &[Cycle]) -> String {
    cycles.iter().map(ToString::to_string).collect()
}

/// No cycles among tea-agent-runtime's top-level modules, nor among the files of any folder.
/// Prints the module map (each module and the modules it imports, with an example `file:line`).
#[test]
fn module_graph_has_no_cycles() {
    let graph = runtime().graph();
    println!("== Module map\n{}", graph.module_map());
    let cycles = graph.cycles();
    assert!(
        cycles.is_empty(),
        "{} module cycle(s):\n{}",
        cycles.len(),
        describe(&cycles)
    );
}

/// No surface imports another (`surface/<x>` naming anything under `surface/<y>`): `server`
/// mounts them side by side, and what two of them need lives in a lower layer
/// (`docs/architecture.md`, import rules).
#[test]
fn surfaces_do_not_import_each_other() {
    let crossings = runtime().graph().between_children("surface");
    assert!(
        crossings.is_empty(),
        "{} surface(s) import another surface:\n{}",
        crossings.len(),
        crossings
            .iter()
            .map(|e| format!(
                "    {} -> {}  ({}×, e.g. {})\n",
                e.from, e.to, e.count, e.example
            ))
            .collect::<String>()
    );
}

/// tea-agent-runtime's public API, every path, field and method of it, as a snapshot; and no more
/// than [`MAX_PUBLIC_ITEMS`] items.
#[test]
fn public_api_is_small() {
    let api = runtime().public_api("tea_agent_runtime");
    println!("{}", api.counts());
    let listing = format!("{}\n\n{}", api.counts(), api.lines().join("\n"));
    insta::assert_snapshot!("public_api", listing);
    assert!(
        api.items.len() <= MAX_PUBLIC_ITEMS,
        "tea-agent-runtime exports {} public items, more than {MAX_PUBLIC_ITEMS} ({})",
        api.items.len(),
        api.counts()
    );
}

/// The public API as released last (`tests/tests/api/released.txt`, refreshed by each release)
/// differs from today's only with a version bump or an `[Unreleased]` entry of `CHANGELOG.md`
/// naming every changed item (`docs/versioning.md`).
#[test]
fn public_api_changes_follow_the_version_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let changelog = read("CHANGELOG.md");
    let released = read("tests/tests/api/released.txt");
    let (header, released_api) = released
        .split_once('\n')
        .expect("a version line, then the API");
    let released_version = header
        .strip_prefix("version: ")
        .expect("`version: x.y.z` first");
    assert_eq!(
        api_version::released_versions(&changelog)
            .first()
            .map(String::as_str),
        Some(released_version),
        "tests/tests/api/released.txt is the API of the last release CHANGELOG.md records"
    );
    let api = runtime().public_api("tea_agent_runtime");
    let listing = api.lines().join("\n");
    let version = env!("CARGO_PKG_VERSION");
    if let Err(missing) = api_version::check(&changelog, version, released_api, &listing) {
        panic!(
            "the public API changed since {released_version} and {version} is still the \
             released version: bump it, or name each changed item under `## [Unreleased]` in \
             CHANGELOG.md:\n  {}",
            missing.join("\n  ")
        );
    }
}

/// A small crate, file by file.
fn fixture(files: &[(&str, &str)]) -> Crate {
    let krate = Crate::from_sources(files.iter().copied()).expect("fixture parses");
    assert!(krate.warnings.is_empty(), "{:#?}", krate.warnings);
    krate
}

/// The checker itself, on small crates: it finds cycles (so the tests above can fail), passes
/// an acyclic graph, and resolves re-exports and visibility as the compiler does.
#[test]
fn checker_on_fixtures() {
    // Two top-level modules naming each other: one cycle, with an example for each edge.
    let cyclic = fixture(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
        (
            "b.rs",
            "pub struct B;\nfn f() -> Option<crate::a::A> {\n    None\n}\n",
        ),
    ]);
    let cycles = cyclic.graph().cycles();
    assert_eq!(cycles.len(), 1, "{}", describe(&cycles));
    assert_eq!(cycles[0].parent, "crate");
    assert_eq!(cycles[0].nodes, ["a", "b"]);
    let edges: Vec<_> = cycles[0]
        .edges
        .iter()
        .map(|e| format!("{} -> {} {}", e.from, e.to, e.example))
        .collect();
    assert_eq!(edges, ["a -> b a.rs:1", "b -> a b.rs:2"]);

    // Acyclic: `b` uses `a`, through a `super::` path and a path in a macro; a test module's
    // import back is not an edge; neither is a child's use of an item its parent re-exports
    // from a sibling (`s::y` -> `s::x`, not `s::y` -> `s`).
    let acyclic = fixture(&[
        (
            "lib.rs",
            "mod a;\nmod b;\nmod s;\nmod n;\n#[path = \"elsewhere/pp.rs\"]\nmod p;\n",
        ),
        ("n.rs", "mod q;\nfn f() {\n    q::g(crate::p::P);\n}\n"),
        ("n/q.rs", "pub fn g(_: crate::p::P) {}\n"),
        ("elsewhere/pp.rs", "pub struct P;\n"),
        (
            "a.rs",
            "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::*;\n}\n",
        ),
        (
            "b.rs",
            "fn f() {\n    let _ = format!(\"{}\", super::a::A);\n}\n",
        ),
        ("s/mod.rs", "mod x;\nmod y;\npub use x::X;\n"),
        ("s/x.rs", "pub struct X;\n"),
        ("s/y.rs", "use super::X;\n"),
        ("s/tests.rs", "use super::*;\n"),
    ]);
    let graph = acyclic.graph();
    assert_eq!(graph.cycles(), []);
    let edges: Vec<_> = graph
        .edges()
        .iter()
        .map(|e| format!("{} -> {} {}", e.from, e.to, e.example))
        .collect();
    assert_eq!(
        edges,
        [
            "b -> a b.rs:2",
            "s -> s::x s/mod.rs:3",
            "s::y -> s::x s/y.rs:1",
            "n -> n::q n.rs:3",
            "n -> p n.rs:3",
            "n::q -> p n/q.rs:1",
        ]
    );

    // The same between sibling files of a folder, through an inline module.
    let siblings = fixture(&[
        ("lib.rs", "pub mod s;\n"),
        (
            "s/mod.rs",
            "mod x;\nmod y {\n    pub fn g() {\n        super::x::f();\n    }\n}\n",
        ),
        ("s/x.rs", "pub fn f() {\n    super::y::g();\n}\n"),
    ]);
    let cycles = siblings.graph().cycles();
    assert_eq!(cycles.len(), 1, "{}", describe(&cycles));
    assert_eq!(cycles[0].parent, "s");
    assert_eq!(cycles[0].nodes, ["s::x", "s::y"]);

    // One child of a folder naming another, with no cycle: what the surface rule finds. The
    // children's uses of their parent's items (`surface/mod.rs`) are not crossings.
    let crossing = fixture(&[
        ("lib.rs", "mod surface;\n"),
        (
            "surface/mod.rs",
            "mod a;\nmod b;\npub struct Shared;\nfn f() {\n    a::g();\n}\n",
        ),
        (
            "surface/a.rs",
            "use super::Shared;\npub fn g() {\n    let _ = crate::surface::b::PATH;\n}\n",
        ),
        (
            "surface/b.rs",
            "pub const PATH: &str = \"/\";\nfn h(_: super::Shared) {}\n",
        ),
    ]);
    let graph = crossing.graph();
    assert_eq!(graph.cycles(), []);
    let edges: Vec<_> = graph
        .between_children("surface")
        .iter()
        .map(|e| format!("{} -> {} {}", e.from, e.to, e.example))
        .collect();
    assert_eq!(edges, ["surface::a -> surface::b surface/a.rs:3"]);

    // The public API: `pub use` resolved (renames, groups, globs, other crates'), `pub(crate)`,
    // `#[doc(hidden)]` and test code left out; fields and methods at the shortest path.
    let api = fixture(&[
        (
            "lib.rs",
            "mod inner;\npub mod api;\npub use inner::{helper as help, Thing};\npub use serde;\n\
             pub(crate) use inner::Hidden;\n#[macro_export]\nmacro_rules! m { () => {} }\n",
        ),
        (
            "inner.rs",
            "pub struct Thing {\n    pub x: u8,\n    y: u8,\n}\nimpl Thing {\n    pub fn new() -> Self { todo!() }\n    \
             fn private(&self) {}\n    pub(crate) fn internal(&self) {}\n}\npub fn helper() {}\n\
             pub(crate) fn crate_only() {}\npub struct Hidden;\n\
             pub async fn load<'a, T: Clone>(name: &'a str, _: Option<Vec<T>>) -> Result<&'a str, String> { todo!() }\n\
             pub const LIMIT: std::time::Duration = std::time::Duration::from_secs(1);\n",
        ),
        (
            "api.rs",
            "pub use crate::inner::*;\npub(crate) struct Internal;\n#[doc(hidden)]\npub struct Secret;\n\
             #[cfg(test)]\npub struct OnlyInTests;\n#[cfg(not(feature = \"x\"))]\npub fn without_x() {}\n\
             #[cfg(feature = \"x\")]\npub enum WithX { A }\n",
        ),
    ])
    .public_api("k");
    assert_eq!(
        api.lines(),
        [
            "const k::api::LIMIT: std::time::Duration",
            "enum k::api::WithX",
            "fn k::api::helper()",
            "fn k::api::load async<'a, T: Clone>(name: &'a str, _: Option<Vec<T>>) -> Result<&'a str, String>",
            "fn k::help()",
            "macro k::m",
            "mod k::api",
            "reexport k::serde = serde",
            "struct k::Thing",
            "struct k::api::Hidden",
            "struct k::api::Thing",
            "field k::Thing.x: u8",
            "method k::Thing::new() -> Self",
        ]
    );
    assert_eq!(api.items.len(), 11);
}

/// The files the README and the guide show (`<!-- file: PATH -->` before a fenced block) are
/// shown as they are: CI compiles and tests those files, so the text people copy is the text
/// that builds.
#[test]
fn the_docs_show_the_example_files_as_they_are() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut shown = 0;
    for doc in ["README.md", "docs/guide.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect(doc);
        for (path, block) in included_files(&text) {
            let file = std::fs::read_to_string(root.join(&path))
                .unwrap_or_else(|e| panic!("{doc} shows {path}, which cannot be read: {e}"));
            assert!(
                block == file,
                "{doc} shows {path} differently from the file: copy the file into the block"
            );
            shown += 1;
        }
    }
    assert!(shown >= 4, "the README shows the notes example's files");
}

/// Each `<!-- file: PATH -->` and the fenced block right after it (its lines, each ending in a
/// newline).
fn included_files(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(path) = line
            .strip_prefix("<!-- file: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(fence.starts_with("```"), "no fenced block after {line}");
        let mut block = String::new();
        for inner in lines.by_ref() {
            if inner == "```" {
                break;
            }
            block.push_str(inner);
            block.push('\n');
        }
        found.push((path.to_owned(), block));
    }
    found
}

/// A first `cargo build --example todo` compiles each crate once: the derive's side (a proc
/// macro's dependencies are resolved apart) enables the features the runtime's side enables, so
/// cel, the schema model and the ~30 crates under them are shared (`docs/architecture.md`
/// §Build). A dependency that turns on another feature on one side shows here by name.
#[test]
fn first_build_compiles_each_crate_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(&root)
        .args(["tree", "--offline", "--locked", "-p", "agent-examples"])
        .args(["-e", "normal,build", "-f", "{p}|{f}", "--prefix", "none"])
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    assert!(
        tree.contains("tea-agent-derive v"),
        "the tree lists the derive"
    );
    // The examples' config parser (`toml`) and the derive's crate-name look-up
    // (`proc-macro-crate`) read TOML with different features of these three small crates.
    let twice = build_graph::compiled_twice(&tree, &["toml_datetime", "toml_parser", "winnow"]);
    assert!(
        twice.is_empty(),
        "compiled twice, once per feature set (enable the runtime side's features in \
         agent-derive/Cargo.toml): {twice:#?}"
    );
}
