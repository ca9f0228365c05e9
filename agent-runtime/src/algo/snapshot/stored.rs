//! The tree of a session's whole state as the store keeps it (no redaction: the stored state
//! is the typed state, not what agents see), walked at each commit with the incremental
//! serializer to get the patch the commit log appends (`docs/stores.md` §The commit log).
//! One tree, owned by the session task: the walk updates it in place, and a tracked
//! collection costs what changed in it, as for the published snapshots.

use std::sync::Arc;

use serde::Serialize;

use super::marks::Marks;
use super::olds::Olds;
use super::{failed, walk};
use crate::algo::diff::PatchOp;
use crate::algo::tree::Node;

/// A session's whole state as JSON, one commit at a time.
#[derive(Debug)]
pub(crate) struct StoredTree {
    tree: Node,
    marks: Marks,
}

/// The patch of one commit on the stored state.
pub(crate) struct StoredPatch {
    /// The ops from the previous tree.
    pub ops: Vec<PatchOp>,
    /// The walk reordered object keys: the ops alone do not give the new tree's key order.
    pub reordered: bool,
    /// The ops that bring the new tree back to the previous one, read from the values the
    /// walk overwrote (`None`: an op's old value was not recorded; the commit has no undo).
    pub inverse: Option<Vec<PatchOp>>,
}

impl StoredTree {
    /// The tree of `state`, built whole.
    pub(crate) fn new<S: Serialize + ?Sized>(state: &S) -> Result<Self, String> {
        Ok(Self::from_node(Node::from_value(
            walk::build(state, None).map_err(failed)?,
        )))
    }

    /// A tree that is already the stored state's JSON.
    pub(crate) fn from_node(tree: Node) -> Self {
        StoredTree {
            tree,
            marks: Marks::default(),
        }
    }

    /// Walks `state` against the tree: afterwards the tree is its JSON, and the answer the
    /// ops from the previous one. On an error the tree is half-updated: drop it.
    /// A list element the walk packs anew shares `share`'s text at the same place when it is
    /// the same (pass the published tree of the same commit: one copy for both).
    pub(crate) fn advance<S: Serialize + ?Sized>(
        &mut self,
        state: &S,
        share: Option<Arc<Node>>,
    ) -> Result<StoredPatch, String> {
        let mut ctx = walk::Ctx {
            share,
            marks: std::mem::take(&mut self.marks),
            olds: Some(Olds::default()),
            ..walk::Ctx::default()
        };
        walk::walk(state, &mut self.tree, None, &mut ctx).map_err(failed)?;
        ctx.marks.settle(&ctx.ops, std::mem::take(&mut ctx.fresh));
        self.marks = ctx.marks;
        let inverse = ctx.olds.and_then(|olds| olds.inverse(&ctx.ops));
        Ok(StoredPatch {
            ops: ctx.ops,
            reordered: ctx.reordered,
            inverse,
        })
    }

    /// The tree, to change outside a walk ([`Self::forget_marks`] after).
    pub(crate) fn node_mut(&mut self) -> &mut Node {
        &mut self.tree
    }

    /// The tree.
    pub(crate) fn node(&self) -> &Node {
        &self.tree
    }

    /// Forgets what the walks knew of the tracked collections: the tree changed outside a
    /// walk, so the next walk is a whole one.
    pub(crate) fn forget_marks(&mut self) {
        self.marks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::snapshot::apply_patch;
    use crate::TrackedVec;
    use serde_json::json;

    #[derive(Serialize, Clone)]
    struct S {
        items: TrackedVec<u32>,
        /// Redacted for agents, but the stored tree keeps it.
        secret: String,
    }

    #[test]
    fn the_ops_rebuild_the_whole_state() {
        let mut s = S {
            items: (0..100).collect(),
            secret: "a".into(),
        };
        let mut tree = StoredTree::new(&s).unwrap();
        let mut replica = tree.node().clone();
        for round in 0..5u32 {
            if let Some(v) = s.items.get_mut(7 * round as usize) {
                *v += 1000;
            }
            s.items.push(round);
            s.secret = format!("secret {round}");
            let before = replica.clone();
            let patch = tree.advance(&s, None).unwrap();
            assert!(!patch.reordered);
            apply_patch(&mut replica, &patch.ops).unwrap();
            assert_eq!(replica.to_value(), serde_json::to_value(&s).unwrap());
            assert_eq!(tree.node(), &replica);
            let mut undone = replica.clone();
            apply_patch(&mut undone, &patch.inverse.unwrap()).unwrap();
            assert_eq!(undone.to_value(), before.to_value());
        }
        assert_eq!(replica.to_value()["secret"], json!("secret 4"));
    }
}
