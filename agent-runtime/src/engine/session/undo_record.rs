//! What a durable session keeps of each commit for undo (`docs/semantics.md` §12): who made
//! it, the message's variant, the ops that revert it on the whole (unredacted) state, why it
//! cannot be undone, and, on an undo's own commit, which commits it undid. Written with the
//! commit (`CommitWrite::undo`), compacted with the log. Never sent to an agent: the inverse
//! holds `@redact` values.

use serde::{Deserialize, Serialize};

use crate::algo::diff::PatchOp;

/// Who made a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Author {
    /// An agent's message (sent, or proposed and approved).
    Agent,
    /// The human (a dispatch, or an undo).
    Human,
    /// The app itself (an effect's message).
    App,
}

/// One commit's undo record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UndoRecord {
    pub by: Author,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The ops that revert the commit (`None`: not known; the commit touched anything).
    #[serde(default)]
    pub inverse: Option<Vec<PatchOp>>,
    /// Why the commit cannot be undone (its message started effects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_undo: Option<String>,
    /// On an undo's commit: the commits it undid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undoes: Vec<u64>,
}

impl UndoRecord {
    /// The paths the commit changed (`None`: not known).
    pub(crate) fn paths(&self) -> Option<Vec<&str>> {
        self.inverse
            .as_ref()
            .map(|ops| ops.iter().map(crate::algo::inverse::op_path).collect())
    }

    /// Whether the commit changed something at or inside or above one of `paths`.
    pub(crate) fn touches(&self, paths: &[&str]) -> bool {
        match self.paths() {
            None => true,
            Some(mine) => mine
                .iter()
                .any(|m| paths.iter().any(|p| crate::algo::inverse::overlaps(m, p))),
        }
    }

    /// The record as JSON text, or `None` past `limit` bytes: then one without its inverse
    /// (the commit cannot be undone), which is small.
    pub(crate) fn text(&self, limit: usize) -> Option<String> {
        self.fit(limit).0
    }

    /// The record as JSON text within `limit` bytes (without its inverse past it), and why
    /// the commit it was written with cannot be undone.
    pub(crate) fn fit(&self, limit: usize) -> (Option<String>, Option<String>) {
        let Ok(text) = serde_json::to_string(self) else {
            return (None, Some("its undo record failed to serialize".into()));
        };
        if text.len() <= limit {
            return (Some(text), self.why_not());
        }
        let small = UndoRecord {
            inverse: None,
            no_undo: Some(format!(
                "its inverse is {} bytes; the log keeps at most {limit}",
                text.len()
            )),
            ..self.clone()
        };
        (serde_json::to_string(&small).ok(), small.why_not())
    }

    /// Why the commit cannot be undone, whatever comes after it (`None`: it can).
    pub(crate) fn why_not(&self) -> Option<String> {
        match (&self.no_undo, &self.inverse) {
            (Some(reason), _) => Some(reason.clone()),
            (None, None) => Some(NO_INVERSE.into()),
            (None, Some(_)) => None,
        }
    }
}

/// Why a commit without an inverse cannot be undone.
pub(crate) const NO_INVERSE: &str = "its inverse is not known (its commit wrote the whole state)";
