//! The values a walk of the stored tree overwrites or removes, kept where it emits their ops:
//! the inverse of the commit's patch, for undo (`docs/semantics.md` §12), read from them, so
//! it costs what the commit changed, not the state's size.

use std::collections::BTreeMap;

use serde_json::Value;

use super::patch::op_path;
use crate::algo::diff::PatchOp;

/// The values a walk overwrote or removed, each at the RFC 6901 pointer where the walk emitted
/// its ops (the node itself, or an ancestor whose ops a diff gave). A patch's paths name the
/// places of the tree before it (the diff never shifts an index or key an op after it uses),
/// so each op's old value is found under the nearest recorded ancestor of its path.
#[derive(Debug, Default)]
pub(crate) struct Olds {
    at: BTreeMap<String, Value>,
}

impl Olds {
    /// `old` stood at `path` before the walk changed it.
    pub(crate) fn record(&mut self, path: &str, old: Value) {
        self.at.insert(path.to_owned(), old);
    }

    /// The value at `path` before the walk (`None`: there was none).
    fn before(&self, path: &str) -> Option<&Value> {
        let mut at = path;
        loop {
            if let Some(old) = self.at.get(at) {
                return old.pointer(&path[at.len()..]);
            }
            at = &at[..at.rfind('/')?];
        }
    }

    /// The inverse of `ops`, the walk's patch (in the order to apply them), or `None`
    /// when an op replaces or removes a value the walk did not record.
    pub(crate) fn inverse(&self, ops: &[PatchOp]) -> Option<Vec<PatchOp>> {
        ops.iter()
            .rev()
            .map(|op| {
                let path = op_path(op).to_owned();
                Some(match (op, self.before(&path)) {
                    (PatchOp::Add { .. }, None) => PatchOp::Remove { path },
                    (PatchOp::Add { .. }, Some(value)) | (PatchOp::Replace { .. }, Some(value)) => {
                        PatchOp::Replace {
                            path,
                            value: value.clone(),
                        }
                    }
                    (PatchOp::Remove { .. }, Some(value)) => PatchOp::Add {
                        path,
                        value: value.clone(),
                    },
                    (_, None) => return None,
                })
            })
            .collect()
    }
}
