//! The version policy's check (`docs/versioning.md`): the public API snapshot
//! (`tests/tests/snapshots/architecture__public_api.snap`) differs from the one of the last
//! release only with a version bump or an `[Unreleased]` entry of `CHANGELOG.md` naming every
//! item that changed.

use std::collections::BTreeSet;

/// The prefix of every item of the snapshot.
const CRATE_PREFIX: &str = "tea_agent_runtime::";

/// The versions `CHANGELOG.md` records as released, newest first (`## [x.y.z] - date`).
pub fn released_versions(changelog: &str) -> Vec<String> {
    changelog
        .lines()
        .filter_map(|line| line.strip_prefix("## ["))
        .filter_map(|rest| rest.split_once(']'))
        .map(|(version, _)| version.to_string())
        .filter(|version| version != "Unreleased")
        .collect()
}

/// The text of the `## [Unreleased]` section (empty when there is none).
pub fn unreleased_section(changelog: &str) -> String {
    let mut lines = changelog
        .lines()
        .skip_while(|l| !l.starts_with("## [Unreleased]"));
    lines.next();
    lines
        .take_while(|l| !l.starts_with("## ["))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The item a snapshot line lists, as a changelog names it: its path without the crate
/// (`config::MAX_BODY_BYTES`, `ServerOptions.allow_anonymous`, `AgentServer::router`).
fn item_name(line: &str) -> Option<String> {
    let (_kind, rest) = line.split_once(' ')?;
    let path = rest.strip_prefix(CRATE_PREFIX)?;
    let end = path
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '.'))
        .unwrap_or(path.len());
    let name = path[..end].trim_end_matches(':');
    (!name.is_empty()).then(|| name.to_string())
}

/// The items listed in one snapshot and not the other, or listed with another signature.
pub fn changed_items(released: &str, now: &str) -> BTreeSet<String> {
    let lines = |s: &str| {
        s.lines()
            .filter(|l| l.contains(CRATE_PREFIX))
            .map(str::to_string)
            .collect::<BTreeSet<_>>()
    };
    let (before, after) = (lines(released), lines(now));
    before
        .symmetric_difference(&after)
        .filter_map(|l| item_name(l))
        .collect()
}

/// The changed items the `[Unreleased]` section of `changelog` does not name.
pub fn unnamed(changelog: &str, changed: &BTreeSet<String>) -> Vec<String> {
    let section = unreleased_section(changelog);
    changed
        .iter()
        .filter(|name| !section.contains(name.as_str()))
        .cloned()
        .collect()
}

/// What the policy says of `snapshot` against `released_snapshot` (the one of the last
/// release): `Ok` when it is unchanged, when `version` (the workspace's) is not the last one
/// released (a bump under way), or when the `[Unreleased]` section names every changed item;
/// else the items it must name.
pub fn check(
    changelog: &str,
    version: &str,
    released_snapshot: &str,
    snapshot: &str,
) -> Result<(), Vec<String>> {
    let changed = changed_items(released_snapshot, snapshot);
    if changed.is_empty() {
        return Ok(());
    }
    // A bump: the version being prepared is not the last one released.
    if released_versions(changelog).first().map(String::as_str) != Some(version) {
        return Ok(());
    }
    match unnamed(changelog, &changed) {
        missing if missing.is_empty() => Ok(()),
        missing => Err(missing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHANGELOG: &str = "# Changelog\n\n## [Unreleased]\n\n### Added\n- `config::NEW_LIMIT`.\n\n## [0.1.0] - 2026-12-06\n\n- `AgentServer::router`.\n";
    const BEFORE: &str = "items: 2\n\nconst tea_agent_runtime::config::MAX_BODY_BYTES: usize\nmethod tea_agent_runtime::AgentServer::router(&self) -> Router\n";

    #[test]
    fn versions_and_sections_are_read() {
        assert_eq!(released_versions(CHANGELOG), vec!["0.1.0"]);
        assert_eq!(
            unreleased_section(CHANGELOG).trim(),
            "### Added\n- `config::NEW_LIMIT`."
        );
    }

    #[test]
    fn an_unchanged_api_passes() {
        assert_eq!(check(CHANGELOG, "0.1.0", BEFORE, BEFORE), Ok(()));
    }

    #[test]
    fn a_change_must_be_named() {
        let added = format!("{BEFORE}const tea_agent_runtime::config::NEW_LIMIT: usize\n");
        assert_eq!(check(CHANGELOG, "0.1.0", BEFORE, &added), Ok(()));
        // A changed signature names the item once; the released section does not count.
        let changed = BEFORE.replace("router(&self)", "router(self)");
        assert_eq!(
            check(CHANGELOG, "0.1.0", BEFORE, &changed),
            Err(vec!["AgentServer::router".to_string()])
        );
        let field = format!("{BEFORE}field tea_agent_runtime::ServerOptions.limit: u32\n");
        assert_eq!(
            check(CHANGELOG, "0.1.0", BEFORE, &field),
            Err(vec!["ServerOptions.limit".to_string()])
        );
    }

    #[test]
    fn a_bump_passes() {
        let changed = BEFORE.replace("router(&self)", "router(self)");
        assert_eq!(check(CHANGELOG, "0.2.0", BEFORE, &changed), Ok(()));
        // Releasing it: the section renamed, the version the released one; its snapshot is the
        // next baseline.
        let released = CHANGELOG.replace(
            "## [Unreleased]",
            "## [Unreleased]\n\n## [0.2.0] - 2027-01-01",
        );
        assert_eq!(check(&released, "0.2.0", &changed, &changed), Ok(()));
    }
}
