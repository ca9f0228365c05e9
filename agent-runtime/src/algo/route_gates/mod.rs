//! Route gates kept per session across commits, so `list_actions` after a commit costs what
//! the commit changed (issue 12).
//!
//! # Design
//!
//! Every route gate of an app is analysed once ([`GateSet`]): which field chains under
//! `state` it reads ([`shape::Reads`]), and whether it is a list fold
//! `[!] state.<path>.exists|all|exists_one(x, P)` whose predicate `P` does not read `state`
//! ([`shape::Shape`]). The session task advances a [`GateBook`] along each commit's patch
//! (the ops the snapshot walk already produced):
//!
//! - a **list fold** keeps the outcome of `P` per element and their counts
//!   ([`table::Table`]); a commit re-evaluates `P` only on the elements its ops touched, and
//!   the gate's result follows from the counts (exactly the interpreter's fold, errors
//!   included). `P` is evaluated by running the gate's own program on a state holding just
//!   that element, so no second program or re-implementation of CEL is involved. `P` is
//!   given only what it reads of the element (the chains of the macro's variable, read from
//!   the element's packed text without parsing the rest), and its outcome on a value it
//!   already met (`{"done":true}` of another todo, an element shifted by a removal ahead of
//!   it or restored by an undo, a table rebuilt) is taken from the session's
//!   [`table::Seen`] instead;
//! - **any other gate** keeps its previous result when no op of the patch touches a chain it
//!   reads; otherwise it is evaluated again, on first read, against a state pruned to the
//!   chains it reads (nothing else of the state is converted for the interpreter).
//!
//! Each published snapshot carries its results ([`GateValues`]); a result not known yet is
//! computed by the first reader and kept for the snapshot (and the next one, when untouched).
//! Snapshots made outside the task's commit (a reload from the store, a commit redone on the
//! stored state) start with no known result, and the book rebuilds its tables at the next
//! commit.
//!
//! A persistent `cel::Value` mirror of the state was not kept: the interpreter reads the
//! JSON tree directly through borrowing values (`cel_eval::json_to_val`), so converting
//! only what a gate reads costs no more than maintaining a mirror, and a list fold never
//! converts more than the elements that changed.

mod eval;
pub(crate) mod shape;
pub(crate) mod table;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::algo::cel_eval::{CompiledPredicate, PredicateCache};
use crate::algo::diff::PatchOp;
use crate::algo::tree::Node;
use shape::{Reads, Shape};
use table::{Moved, Seen, Table};

/// A gate's result on one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The expression is the boolean `false` (or another value than `true`).
    Closed,
    /// The expression is the boolean `true`.
    Open,
    /// The expression could not be evaluated (an evaluation error, a program that does not
    /// compile, a panic in the interpreter): closed, and the agent is told so.
    Failed,
}

impl Verdict {
    /// True when the gate is open.
    pub(crate) fn is_open(self) -> bool {
        self == Verdict::Open
    }

    /// The verdict of an interpreter's answer (`None`: it could not decide).
    pub(crate) fn of(decided: Option<bool>) -> Verdict {
        match decided {
            Some(true) => Verdict::Open,
            Some(false) => Verdict::Closed,
            None => Verdict::Failed,
        }
    }
}

/// One route gate of an app, analysed.
#[derive(Debug)]
struct Gate {
    /// The expression (for the log line of a gate that could not be evaluated).
    source: Box<str>,
    /// The compiled program (`None`: it does not compile, so it always fails).
    compiled: Option<Arc<CompiledPredicate>>,
    reads: Reads,
    /// The list fold it is, when it is one (never for a deep expression).
    shape: Option<Shape>,
}

/// The distinct route gates of an app, numbered in the order given.
#[derive(Debug, Default)]
pub(crate) struct GateSet {
    gates: Vec<Gate>,
}

impl GateSet {
    /// Analyses `sources` (distinct gate expressions), compiling them into `predicates`.
    pub(crate) fn new<'s>(
        sources: impl IntoIterator<Item = &'s str>,
        predicates: &PredicateCache,
    ) -> Self {
        let gates = sources
            .into_iter()
            .map(|src| {
                let compiled = predicates.program(src).ok();
                let (reads, shape) = match &compiled {
                    Some(c) => {
                        let expr = c.program().expression();
                        let shape = (!c.is_deep()).then(|| shape::shape(expr)).flatten();
                        (shape::reads(expr), shape)
                    }
                    None => (Reads::Chains(Vec::new()), None),
                };
                Gate {
                    source: src.into(),
                    compiled,
                    reads,
                    shape,
                }
            })
            .collect();
        GateSet { gates }
    }

    /// Number of gates.
    pub(crate) fn len(&self) -> usize {
        self.gates.len()
    }

    /// Evaluates gate `id` against the whole `state` (fail-closed).
    pub(crate) fn evaluate(&self, id: usize, state: &Node) -> Verdict {
        let gate = &self.gates[id];
        match &gate.compiled {
            Some(c) => eval::full(c, &gate.reads, state),
            None => Verdict::Failed,
        }
    }

    /// Flags "logged" of a new session: none of its gates has failed yet.
    fn fresh_flags(&self) -> Arc<[AtomicBool]> {
        self.gates.iter().map(|_| AtomicBool::new(false)).collect()
    }
}

/// The results of an app's gates on one snapshot: known ones, the rest computed by their
/// first reader. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub(crate) struct GateValues {
    values: Arc<[OnceLock<Verdict>]>,
    /// Per gate: a failure was already logged in this session (shared by its snapshots).
    logged: Arc<[AtomicBool]>,
}

impl GateValues {
    /// No result known yet for `set`'s gates, outside a session's line of snapshots.
    pub(crate) fn unknown(set: &GateSet) -> Self {
        GateValues::fresh(set, set.fresh_flags())
    }

    /// No result known yet, with the session's flags.
    fn fresh(set: &GateSet, logged: Arc<[AtomicBool]>) -> Self {
        GateValues {
            values: (0..set.len()).map(|_| OnceLock::new()).collect(),
            logged,
        }
    }

    /// Whether gate `id` passes on `state` (the snapshot's state), evaluating it on first
    /// use.
    #[cfg(test)]
    pub(crate) fn passes(&self, set: &GateSet, id: usize, state: &Node) -> bool {
        self.verdict(set, id, state).is_open()
    }

    /// Gate `id`'s verdict on `state` (the snapshot's state), evaluating it on first use. A
    /// gate that could not be evaluated is logged at WARN and counted
    /// (`agent_gate_evaluation_failures_total`) once per gate and session.
    pub(crate) fn verdict(&self, set: &GateSet, id: usize, state: &Node) -> Verdict {
        let verdict = *self.values[id].get_or_init(|| set.evaluate(id, state));
        if verdict == Verdict::Failed {
            self.failed(set, id);
        }
        verdict
    }

    /// The result of gate `id`, when known.
    fn known(&self, id: usize) -> Option<Verdict> {
        self.values.get(id).and_then(|v| v.get().copied())
    }

    /// Logs gate `id`'s failure once per session.
    #[cold]
    fn failed(&self, set: &GateSet, id: usize) {
        if !self.logged[id].swap(true, Ordering::Relaxed) {
            crate::telemetry::gate_evaluation_failed();
            tracing::warn!(
                gate = &*set.gates[id].source,
                "a route gate could not be evaluated on the session's state (does the state \
                 match its schema?): it stays closed, and agents are told it could not be \
                 evaluated"
            );
        }
    }
}

/// How a list fold stands in the book.
#[derive(Debug)]
enum Track {
    /// The value at its path is a list: the table of its elements.
    List(Table),
    /// The value at its path is not a list (or is missing): evaluated like any other gate.
    NotList,
}

/// The session's side of its gates: the tables of its list folds, in step with the
/// published snapshot. Only the session task touches it.
#[derive(Debug)]
pub(crate) struct GateBook {
    set: Arc<GateSet>,
    tracks: Vec<Option<Track>>,
    /// Per gate: the outcomes of its list fold's predicate by element (kept across rebuilds).
    seen: Vec<Seen>,
    /// The tables do not follow the published state: rebuild them at the next commit.
    stale: bool,
    /// The session's "failure logged" flags (see [`GateValues::verdict`]).
    logged: Arc<[AtomicBool]>,
}

impl GateBook {
    /// The book of one session of an app with these gates; the tables are built at the
    /// first commit.
    pub(crate) fn new(set: Arc<GateSet>) -> Self {
        let tracks = set.gates.iter().map(|_| None).collect();
        let seen = set.gates.iter().map(|_| Seen::default()).collect();
        let logged = set.fresh_flags();
        GateBook {
            set,
            tracks,
            seen,
            stale: true,
            logged,
        }
    }

    /// The gates of the app.
    #[cfg(test)]
    pub(crate) fn set_for_tests(&self) -> &GateSet {
        &self.set
    }

    /// No result known yet, for a snapshot of this book's session.
    pub(crate) fn unknown(&self) -> GateValues {
        GateValues::fresh(&self.set, self.logged.clone())
    }

    /// The published state changed outside [`Self::advance`]: rebuild at the next commit.
    pub(crate) fn invalidate(&mut self) {
        self.stale = true;
    }

    /// The gate results of a commit's snapshot: `tree` is its state, `patch` the ops from
    /// the previous snapshot, whose results are `prev`.
    pub(crate) fn advance(
        &mut self,
        prev: &GateValues,
        tree: &Node,
        patch: &[PatchOp],
    ) -> GateValues {
        let next = self.unknown();
        let stale = std::mem::replace(&mut self.stale, false);
        for (id, gate) in self.set.gates.iter().enumerate() {
            if let (Some(shape), Some(compiled)) = (&gate.shape, &gate.compiled) {
                let track = &mut self.tracks[id];
                let moved = match (stale, &mut *track) {
                    (false, Some(Track::List(t))) => t.apply(&shape.path, patch),
                    _ => Moved::Rebuild,
                };
                let seen = &mut self.seen[id];
                if let Some(passes) = fold_result(track, seen, moved, shape, compiled, tree) {
                    let _ = next.values[id].set(passes);
                    continue;
                }
            }
            if !touched(&gate.reads, patch) {
                if let Some(v) = prev.known(id) {
                    let _ = next.values[id].set(v);
                }
            }
        }
        next
    }
}

/// How many list elements a fold parses at once to evaluate them.
const EVAL_BATCH: usize = 1024;

/// Brings a list fold's track up to `tree` and returns its result (`None`: not a list).
/// Elements met before take their outcome from `seen`.
fn fold_result(
    track: &mut Option<Track>,
    seen: &mut Seen,
    moved: Moved,
    shape: &Shape,
    compiled: &CompiledPredicate,
    tree: &Node,
) -> Option<Verdict> {
    let items = match table::at(tree, &shape.path) {
        Some(Node::Array(items)) => Some(items),
        _ => None,
    };
    let fits =
        matches!((&*track, items), (Some(Track::List(t)), Some(items)) if t.len() == items.len());
    if moved == Moved::Rebuild || !fits {
        *track = Some(match items {
            Some(items) => Track::List(Table::dirty(items.len())),
            None => Track::NotList,
        });
    }
    let (Some(Track::List(t)), Some(items)) = (track.as_mut(), items) else {
        return None;
    };
    // The elements are parsed a bounded batch at a time (a list's elements are packed).
    for batch in t.dirty_indices().chunks(EVAL_BATCH) {
        // What the predicate reads of each element (a packed one read from its text, its
        // other fields skipped), known by its text when met before.
        let mut unseen = Vec::with_capacity(batch.len());
        for &i in batch {
            let read = match &items[i] {
                Node::Packed(raw) => eval::picked(raw.get(), &shape.item),
                node => node.to_value(),
            };
            let key = seen.key(&read.to_string());
            match seen.get(key) {
                Some(outcome) => t.settle(i, outcome),
                None => unseen.push((i, key, read)),
            }
        }
        let mut element = eval::Element::new(compiled, shape);
        let outcomes: Vec<_> = unseen.iter().map(|(_, _, v)| element.outcome(v)).collect();
        for (&(i, key, _), outcome) in unseen.iter().zip(outcomes) {
            seen.put(key, outcome, items.len());
            t.settle(i, outcome);
        }
    }
    t.verdict(shape.fold, shape.negated)
}

/// True when an op of `patch` is at, under or above a chain `reads` lists.
fn touched(reads: &Reads, patch: &[PatchOp]) -> bool {
    match reads {
        Reads::Whole => !patch.is_empty(),
        Reads::Chains(chains) => patch.iter().any(|op| {
            let path = match op {
                PatchOp::Add { path, .. }
                | PatchOp::Remove { path }
                | PatchOp::Replace { path, .. } => path,
            };
            chains.iter().any(|c| table::under(path, c).is_some())
        }),
    }
}
