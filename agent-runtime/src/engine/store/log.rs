//! The commit log's rules every store shares (`docs/stores.md` §The commit log): rebuilding a
//! state from its snapshot and the patches after it, and telling whether the patches a store
//! read reach from one commit to another without a gap.

use super::StoreError;
use crate::algo::diff::PatchOp;
use crate::algo::snapshot::apply_patch;
use crate::algo::tree::Node;

/// Whether `patches` (by sequence number, ascending) are exactly the commits
/// `after + 1 ..= to`.
pub(crate) fn reaches(patches: &[(u64, String)], after: u64, to: u64) -> bool {
    patches.len() as u64 == to.saturating_sub(after)
        && patches
            .iter()
            .zip(after + 1..)
            .all(|((seq, _), want)| *seq == want)
}

/// Applies the JSON texts of `patches` to the JSON text `state`, in order.
pub(crate) fn replay<'p>(
    state: &str,
    patches: impl IntoIterator<Item = &'p str>,
) -> Result<String, StoreError> {
    let mut tree: Node = serde_json::from_str(state)
        .map_err(|e| StoreError::Database(format!("the stored snapshot is not JSON: {e}")))?;
    for patch in patches {
        apply_text(&mut tree, patch)?;
    }
    serde_json::to_string(&tree)
        .map_err(|e| StoreError::Database(format!("the rebuilt state does not serialize: {e}")))
}

/// Applies the JSON text of one patch to `tree`.
pub(crate) fn apply_text(tree: &mut Node, patch: &str) -> Result<(), StoreError> {
    let ops: Vec<PatchOp> = serde_json::from_str(patch)
        .map_err(|e| StoreError::Database(format!("a logged patch does not parse: {e}")))?;
    apply_patch(tree, &ops)
        .map_err(|_| StoreError::Database("a logged patch does not fit the state".into()))
}

/// The test hook that holds a snapshot commit's transaction open before it commits, so a test
/// can kill the process in the middle of a compaction: milliseconds from the environment
/// variable `AGENT_TEST_HOLD_COMPACTION_MS`, read once (unset: no hold).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn compaction_hold() -> Option<std::time::Duration> {
    static HOLD: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    *HOLD.get_or_init(|| {
        std::env::var("AGENT_TEST_HOLD_COMPACTION_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(std::time::Duration::from_millis)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaches_needs_every_commit_in_order() {
        let p = |s: &[u64]| s.iter().map(|&n| (n, String::new())).collect::<Vec<_>>();
        assert!(reaches(&p(&[]), 4, 4));
        assert!(reaches(&p(&[5, 6, 7]), 4, 7));
        assert!(!reaches(&p(&[5, 7]), 4, 7));
        assert!(!reaches(&p(&[6, 7]), 4, 7));
        assert!(!reaches(&p(&[5, 6]), 4, 7));
    }

    #[test]
    fn replay_applies_patches_in_order() {
        let state = r#"{"count":1,"items":[]}"#;
        let out = replay(
            state,
            [
                r#"[{"op":"replace","path":"/count","value":2}]"#,
                r#"[{"op":"add","path":"/items/0","value":"a"}]"#,
            ],
        )
        .unwrap();
        assert_eq!(out, r#"{"count":2,"items":["a"]}"#);
        assert!(replay(state, [r#"[{"op":"remove","path":"/nope"}]"#]).is_err());
    }
}
