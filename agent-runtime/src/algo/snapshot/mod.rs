//! Incremental snapshots: what agents see of a session's state after each commit, produced in
//! time proportional to the change plus one walk of the typed state that compares scalars
//! in place (issue 12).
//!
//! # Design
//!
//! The session task keeps two JSON trees and swaps them ("left-right"): the published one,
//! which readers share through an `Arc` and which never changes, and a spare one, the state
//! one commit earlier plus the patch that brings it up to date. At a commit, when no reader
//! holds the spare any more (`Arc::get_mut`), the task applies that patch to it, walks the new
//! typed state against it with the incremental serializer of [`walk`] (which updates it in
//! place and emits exactly the ops of [`crate::algo::diff::diff`]), and publishes it; the old
//! published tree becomes the spare. No subtree is cloned or torn down unless it changed.
//! When a reader still holds the spare (a slow drain, a human console), or the last walk
//! reordered object keys, the spare is rebuilt by cloning the published tree: correct,
//! just O(state) for that commit.
//!
//! Route gates: each commit's patch also advances the session's [`GateBook`] (see
//! [`crate::algo::route_gates`]), so the snapshot is published with its gate results.
//!
//! Tracked vectors: the walker keeps [`marks::Marks`] of the
//! [`TrackedVec`](crate::TrackedVec)s it walked, so the next walk visits only their chunks
//! changed since; a commit then costs what it changed.
//!
//! Redaction: the `@redact` plan is applied by the walker, so redacted fields are never
//! serialized at all (the fast path).
//!
//! # The slow path
//!
//! An app that overrides [`App::redact`] may mask anything anywhere, so its state is
//! serialized whole at every commit (the plan applied, then the hook) and diffed against
//! the previous tree: the cost of the full re-serialization, as before issue 12.

mod marks;
pub(crate) mod olds;
mod patch;
mod stored;
pub(crate) mod walk;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tea_agent_schema::redact::RedactPlan;

use crate::algo::diff::{diff, PatchOp};
use crate::algo::route_gates::{GateBook, GateSet, GateValues};
use crate::algo::tree::Node;
use crate::app::App;
use marks::Marks;

pub(crate) use patch::apply_patch;
use patch::apply_sharing;
pub(crate) use stored::StoredTree;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tracked_tests;

/// A state that failed to serialize: the error text (`state failed to serialize: …`).
fn failed(e: impl std::fmt::Display) -> String {
    format!("state failed to serialize: {e}")
}

/// Serializes a state from scratch: the plan applied, then the app's hook (the full path).
pub(crate) fn serialize_full<A: App>(
    app: &A,
    plan: &RedactPlan,
    state: &A::State,
) -> Result<Value, String> {
    full(plan, state, &|v| app.redact(v))
}

/// Serializes any value without the fields `plan` redacts (an effect shown to agents).
pub(crate) fn serialize_redacted<T: Serialize + ?Sized>(
    plan: &RedactPlan,
    value: &T,
) -> Result<Value, String> {
    full(plan, value, &|_| {})
}

fn full<S: Serialize + ?Sized>(
    plan: &RedactPlan,
    state: &S,
    hook: &dyn Fn(&mut Value),
) -> Result<Value, String> {
    let mut v = walk::build(state, plan.root()).map_err(failed)?;
    hook(&mut v);
    Ok(v)
}

/// The task's side of the snapshots of one session.
#[derive(Debug)]
pub(crate) struct Snapshots {
    plan: Arc<RedactPlan>,
    /// The app overrides [`App::redact`]: every commit takes the full path.
    slow: bool,
    /// The state one commit before the published one, with the patch from it to that one.
    spare: Option<(Arc<Node>, Arc<[PatchOp]>)>,
    /// The route gates, advanced along each commit's patch.
    gates: GateBook,
    /// The tracked vectors the published tree holds, for the next walk.
    marks: Marks,
}

/// A new snapshot: the tree and the ops from the previous one.
pub(crate) struct Next {
    pub state: Arc<Node>,
    pub patch: Arc<[PatchOp]>,
}

impl Snapshots {
    /// Snapshots of an app's sessions: `slow` when the app overrides [`App::redact`];
    /// `gates` are the app's route gates.
    pub(crate) fn new(plan: Arc<RedactPlan>, slow: bool, gates: Arc<GateSet>) -> Self {
        Snapshots {
            plan,
            slow,
            spare: None,
            gates: GateBook::new(gates),
            marks: Marks::default(),
        }
    }

    /// No route gate result known for a snapshot made outside [`Self::next`].
    pub(crate) fn unknown_gates(&self) -> GateValues {
        self.gates.unknown()
    }

    /// The first snapshot of a session.
    pub(crate) fn initial<A: App>(&self, app: &A, state: &A::State) -> Result<Node, String> {
        serialize_full(app, &self.plan, state).map(Node::from_value)
    }

    /// The snapshot of `state` after a commit, with its route gate results; `current` is
    /// the published state and `gates` its results. On an error nothing is kept of the walk.
    pub(crate) fn next<A: App>(
        &mut self,
        app: &A,
        state: &A::State,
        current: &Arc<Node>,
        gates: &GateValues,
    ) -> Result<(Next, GateValues), String> {
        let next = self.next_of(state, current, &|v| app.redact(v))?;
        let gates = if Arc::ptr_eq(&next.state, current) {
            gates.clone()
        } else {
            self.gates.advance(gates, &next.state, &next.patch)
        };
        Ok((next, gates))
    }

    /// [`Self::next`] for any serializable state, `hook` standing for [`App::redact`].
    fn next_of<S: Serialize + ?Sized>(
        &mut self,
        state: &S,
        current: &Arc<Node>,
        hook: &dyn Fn(&mut Value),
    ) -> Result<Next, String> {
        if self.slow {
            let v = full(&self.plan, state, hook)?;
            let patch: Arc<[PatchOp]> = diff(&current.to_value(), &v).into();
            return Ok(Next {
                state: Arc::new(Node::from_value(v)),
                patch,
            });
        }
        let mut tree = self.spare_tree(current);
        let Some(target) = Arc::get_mut(&mut tree) else {
            unreachable!("the spare tree is not shared")
        };
        let mut ctx = walk::Ctx {
            marks: std::mem::take(&mut self.marks),
            ..walk::Ctx::default()
        };
        // On an error the marks stay forgotten: the next walk is a whole one.
        walk::walk(state, target, self.plan.root(), &mut ctx).map_err(failed)?;
        ctx.marks.settle(&ctx.ops, std::mem::take(&mut ctx.fresh));
        self.marks = std::mem::take(&mut ctx.marks);
        let patch: Arc<[PatchOp]> = ctx.ops.into();
        if patch.is_empty() && !ctx.reordered {
            // Nothing changed: the published tree stays, the walked one stays the spare.
            self.spare = Some((tree, patch.clone()));
            return Ok(Next {
                state: current.clone(),
                patch,
            });
        }
        self.spare = (!ctx.reordered).then(|| (current.clone(), patch.clone()));
        Ok(Next { state: tree, patch })
    }

    /// Forgets the spare tree: the published state changed outside [`Self::next`] (a commit
    /// applied again on the stored state, a reload from the store), so the next commit starts
    /// from a copy of the published tree.
    pub(crate) fn forget_spare(&mut self) {
        self.spare = None;
        self.marks.clear();
        self.gates.invalidate();
    }

    /// A tree equal to `current` that no one else holds: the spare brought up to date (its
    /// new elements sharing `current`'s texts), or a copy of `current` (which shares all of
    /// them: the cost of its nodes outside the lists' elements).
    fn spare_tree(&mut self, current: &Arc<Node>) -> Arc<Node> {
        if let Some((mut tree, patch)) = self.spare.take() {
            if let Some(t) = Arc::get_mut(&mut tree) {
                if apply_sharing(t, &patch, Some(current)).is_ok() {
                    return tree;
                }
            }
        }
        Arc::new((**current).clone())
    }
}
