//! Crates a build compiles twice, read from `cargo tree -e normal,build -f '{p}|{f}' --prefix
//! none`: a proc macro's dependencies are resolved apart from the app's, so a crate both sides
//! use is compiled once per distinct feature set (`tea-agent-derive`'s manifest enables, on its
//! side, the features the runtime's side enables).

use std::collections::{BTreeMap, BTreeSet};

/// The packages (`name vX.Y.Z`) the tree lists with more than one feature set, each with its
/// feature sets, except those named in `allowed`.
pub fn compiled_twice(tree: &str, allowed: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in tree.lines() {
        // `(*)`: a package the tree listed above with its dependencies.
        let line = line.trim_end().trim_end_matches(" (*)");
        let Some((package, enabled)) = line.split_once('|') else {
            continue;
        };
        // `name vX.Y.Z`, without a path (`(/…/agent-derive)`) or `(proc-macro)`.
        let id: Vec<&str> = package.split_whitespace().take(2).collect();
        if id.len() < 2 || allowed.contains(&id[0]) {
            continue;
        }
        features
            .entry(id.join(" "))
            .or_default()
            .insert(enabled.to_string());
    }
    features.retain(|_, sets| sets.len() > 1);
    features
}

#[cfg(test)]
mod tests {
    use super::compiled_twice;

    const TREE: &str = "\
agent-examples v0.1.0 (/w/examples)|default,full
tea-agent-derive v0.1.0 (proc-macro) (/w/agent-derive)|
serde_json v1.0.154|alloc,std
serde_json v1.0.154|alloc,float_roundtrip,std
serde_json v1.0.154|alloc,std (*)
winnow v1.0.5|
winnow v1.0.5|alloc,std
cel v0.15.0|json,regex
cel v0.15.0|json,regex (*)
";

    #[test]
    fn a_crate_listed_with_two_feature_sets_is_compiled_twice() {
        let twice = compiled_twice(TREE, &[]);
        assert_eq!(
            twice.keys().collect::<Vec<_>>(),
            ["serde_json v1.0.154", "winnow v1.0.5"]
        );
        assert_eq!(twice["serde_json v1.0.154"].len(), 2);
    }

    #[test]
    fn allowed_crates_and_repeated_listings_are_not() {
        let twice = compiled_twice(TREE, &["winnow"]);
        assert_eq!(twice.keys().collect::<Vec<_>>(), ["serde_json v1.0.154"]);
        assert!(compiled_twice("cel v0.15.0|json\ncel v0.15.0|json (*)\n", &[]).is_empty());
    }
}
