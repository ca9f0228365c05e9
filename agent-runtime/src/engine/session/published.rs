//! The published snapshot of a session (`docs/stores.md` §Incremental snapshots): the
//! redacted state after a commit, its patch, and what readers derive from it once.

use parking_lot::Mutex;
use std::sync::{Arc, OnceLock, Weak};

use serde_json::value::RawValue;
use serde_json::Value;

use crate::algo::affordances::Listing;
use crate::algo::diff::PatchOp;
use crate::algo::route_gates::GateValues;
use crate::algo::tree::Node;

/// The biggest serialized state a snapshot keeps once made (see [`Published::json`]).
pub(super) const KEPT_JSON_BYTES: usize = 256 * 1024;

/// A snapshot's serialized state.
#[derive(Debug, Default)]
pub(super) enum JsonCache {
    #[default]
    Empty,
    /// Kept for the snapshot's life.
    Kept(Arc<RawValue>),
    /// Kept while a reader holds it.
    Lent(Weak<RawValue>),
}

/// The published, redacted state of a session: one snapshot per commit.
#[derive(Debug, Clone)]
pub struct Published {
    /// Number of commits so far.
    pub seq: u64,
    /// The redacted JSON state, as a compact tree (`docs/stores.md` §Memory).
    pub(crate) state: Arc<Node>,
    /// The ops from the previous snapshot's state to this one.
    pub(super) patch: Arc<[PatchOp]>,
    /// The state serialized, made by the first reader of this snapshot (see [`Self::json`]).
    pub(super) json: Arc<Mutex<JsonCache>>,
    /// `list_actions` on this snapshot (compact, and serialized), made by its first reader.
    pub(super) actions: Arc<OnceLock<Arc<Listing>>>,
    /// The route gate results on this state (see [`crate::algo::route_gates`]).
    pub(super) gates: GateValues,
}

impl Published {
    pub(super) fn new(
        seq: u64,
        state: Arc<Node>,
        patch: Arc<[PatchOp]>,
        gates: GateValues,
    ) -> Self {
        Published {
            seq,
            state,
            patch,
            json: Arc::default(),
            actions: Arc::new(OnceLock::new()),
            gates,
        }
    }

    /// The same snapshot with another patch (a commit that changed nothing shares the
    /// state and its serialized text).
    pub(super) fn with_patch(mut self, patch: Arc<[PatchOp]>) -> Self {
        self.patch = patch;
        // The app's hooks read the typed state, which may differ in redacted fields.
        self.actions = Arc::new(OnceLock::new());
        self
    }

    /// The ops that took the previous snapshot (`seq - 1`) to this one.
    pub fn patch(&self) -> &[PatchOp] {
        &self.patch
    }

    /// The state as JSON text, serialized by the first reader of this snapshot. A text of
    /// up to 256 KiB (`KEPT_JSON_BYTES`) is kept for the snapshot's life; a bigger one only while a
    /// reader holds it (readers at the same time share it), so a big state is not held twice
    /// between reads (`docs/stores.md` §Memory).
    pub fn json(&self) -> Arc<RawValue> {
        let mut cache = self.json.lock();
        match &*cache {
            JsonCache::Kept(text) => return text.clone(),
            JsonCache::Lent(weak) => {
                if let Some(text) = weak.upgrade() {
                    return text;
                }
            }
            JsonCache::Empty => {}
        }
        // A `Node` always serializes: its keys are strings.
        let text = serde_json::to_string(&*self.state).unwrap_or_else(|_| "null".into());
        let kept = text.len() <= KEPT_JSON_BYTES;
        // SAFETY: serde_json wrote the text from a `Node`: it is one well-formed JSON value
        // (`from_string` would only parse it all again to check that).
        let raw: Arc<RawValue> = Arc::from(unsafe { RawValue::from_string_unchecked(text) });
        *cache = if kept {
            JsonCache::Kept(raw.clone())
        } else {
            JsonCache::Lent(Arc::downgrade(&raw))
        };
        raw
    }

    /// The redacted JSON state (built from the snapshot's tree at each call: prefer
    /// [`Self::json`] for its text).
    pub fn state(&self) -> Value {
        self.state.to_value()
    }

    /// The ops from `earlier` (a snapshot of the same session) to this one: this snapshot's
    /// own patch when exactly one commit separates them, else the diff of the two states.
    pub fn diff_since(&self, earlier: &Published) -> Vec<PatchOp> {
        if self.seq == earlier.seq || Arc::ptr_eq(&self.state, &earlier.state) {
            Vec::new()
        } else if self.seq == earlier.seq + 1 {
            self.patch.to_vec()
        } else {
            crate::algo::tree::diff_nodes(&earlier.state, &self.state)
        }
    }
}
