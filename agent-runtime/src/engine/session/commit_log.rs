//! A durable session's side of the commit log (`docs/stores.md` §The commit log): the tree of
//! the whole state as stored, walked at each commit to get the commit's patch, and what this
//! process knows of the stored log, to send a snapshot when one is due. Owned by the session
//! task (under the state lock at a commit, in a refresh otherwise).

use std::sync::Arc;

use crate::algo::diff::PatchOp;
use crate::algo::tree::Node;
use serde::Serialize;

use crate::algo::snapshot::StoredTree;
use crate::engine::store::{snapshot_due, LogState};

/// What one commit writes: its patch (when known) and, when due, a snapshot.
#[derive(Debug)]
pub(crate) struct Change {
    pub patch: Option<String>,
    pub snapshot: Option<String>,
    /// The ops that revert the commit on the whole state (`None`: not known, when the tree
    /// was not; `docs/semantics.md` §12).
    pub inverse: Option<Vec<PatchOp>>,
    /// The commit's undo record as JSON text, written with it (set by the task).
    pub undo: Option<String>,
}

impl Change {
    /// The bytes the commit adds to the stored log: its patch and its undo record.
    pub(crate) fn log_bytes(&self) -> u64 {
        let len = |t: &Option<String>| t.as_ref().map_or(0, |t| t.len() as u64);
        len(&self.patch) + len(&self.undo)
    }
}

/// The session's commit log as this process knows it.
#[derive(Debug, Default)]
pub(crate) struct CommitLog {
    /// The stored state's JSON at the newest commit stored; `None`: not known (the next
    /// commit rebuilds it and writes a snapshot).
    tree: Option<StoredTree>,
    /// The stored log, as far as this process knows (the store has the last word).
    log: LogState,
}

fn text(v: &Node) -> String {
    // A `Node` always serializes (its keys are strings).
    serde_json::to_string(v).unwrap_or_default()
}

impl CommitLog {
    /// The log of a session whose stored state (JSON) at commit `seq` is `stored`, with
    /// its snapshot assumed at `seq` (the store says otherwise when it matters).
    pub(crate) fn at(seq: u64, stored: Option<Node>) -> Self {
        CommitLog {
            tree: stored.map(StoredTree::from_node),
            log: LogState {
                snapshot_seq: seq,
                log_bytes: 0,
            },
        }
    }

    /// Starts over from `state`, stored whole as commit `seq`: answers its JSON text.
    pub(crate) fn reset<S: Serialize + ?Sized>(
        &mut self,
        seq: u64,
        state: &S,
    ) -> Result<String, String> {
        self.tree = None;
        let tree = StoredTree::new(state)?;
        let snapshot = text(tree.node());
        *self = CommitLog {
            tree: Some(tree),
            log: LogState {
                snapshot_seq: seq,
                log_bytes: 0,
            },
        };
        Ok(snapshot)
    }

    /// The change of commit `seq` whose state is `state` (under the state lock, right after
    /// `update`): the patch from the tree, with a snapshot when the log is at its bounds, the
    /// walk reordered keys (a patch does not carry key order), or the tree was not known.
    pub(crate) fn change<S: Serialize + ?Sized>(
        &mut self,
        seq: u64,
        state: &S,
        share: Option<Arc<Node>>,
    ) -> Result<Change, String> {
        if let Some(tree) = &mut self.tree {
            // The walk keeps the values it overwrites: the inverse costs the change.
            match tree.advance(state, share) {
                Ok(patch) => {
                    let text_of_patch = serde_json::to_string(&patch.ops)
                        .map_err(|e| format!("the patch failed to serialize: {e}"))?;
                    let inverse = patch.inverse;
                    let inverse_len = inverse
                        .as_ref()
                        .and_then(|i| serde_json::to_string(i).ok())
                        .map_or(0, |t| t.len() as u64);
                    let due = patch.reordered
                        || snapshot_due(self.log, seq, text_of_patch.len() as u64 + inverse_len);
                    return Ok(Change {
                        snapshot: due.then(|| text(tree.node())),
                        patch: Some(text_of_patch),
                        inverse,
                        undo: None,
                    });
                }
                // Half-updated: rebuilt below.
                Err(_) => self.tree = None,
            }
        }
        let tree = StoredTree::new(state)?;
        let snapshot = text(tree.node());
        self.tree = Some(tree);
        Ok(Change {
            patch: None,
            snapshot: Some(snapshot),
            inverse: None,
            undo: None,
        })
    }

    /// The store refused a commit without a snapshot (its log is at `log`): the snapshot
    /// to send again with, the tree's JSON (`None` when the tree is not known).
    pub(crate) fn snapshot_for(&mut self, log: LogState) -> Option<String> {
        self.log = log;
        self.tree.as_ref().map(|t| text(t.node()))
    }

    /// `change` was stored as commit `seq`.
    pub(crate) fn stored(&mut self, seq: u64, change: &Change) {
        match &change.snapshot {
            Some(_) => {
                self.log = LogState {
                    snapshot_seq: seq,
                    log_bytes: 0,
                }
            }
            None => {
                self.log.log_bytes = self.log.log_bytes.saturating_add(change.log_bytes());
            }
        }
    }

    /// The commit was not stored: the tree holds a state the store does not, so the next
    /// commit starts from the stored one ([`Self::reset`] or [`Self::replace`]).
    pub(crate) fn forget(&mut self) {
        self.tree = None;
    }

    /// Another process stored commits after the one the tree holds: applies their patches
    /// (JSON texts, in order) and answers the tree, or `None` (and forgets the tree) when
    /// it is not known or a patch does not fit it.
    pub(crate) fn catch_up(&mut self, patches: &[String]) -> Option<&Node> {
        let tree = self.tree.as_mut()?;
        let fits = patches
            .iter()
            .all(|p| crate::engine::store::log::apply_text(tree.node_mut(), p).is_ok());
        if !fits {
            self.tree = None;
            return None;
        }
        tree.forget_marks();
        self.tree.as_ref().map(StoredTree::node)
    }

    /// The tree of the stored state at the newest commit (`None`: not known).
    pub(crate) fn node(&self) -> Option<&Node> {
        self.tree.as_ref().map(StoredTree::node)
    }

    /// The stored state is `stored` (JSON) at commit `seq`, read whole from the store.
    pub(crate) fn replace(&mut self, seq: u64, stored: Node) {
        *self = CommitLog::at(seq, Some(stored));
    }
}

#[cfg(test)]
#[path = "commit_log_tests.rs"]
mod tests;
