//! The inverse of a commit's patch (`docs/semantics.md` §12): the ops that bring the state
//! after a patch back to the state before it. What undo applies.
//!
//! A commit's inverse comes with its patch from the stored tree's walk (the values it
//! overwrote, `algo::snapshot::olds`), so it costs what the commit changed; [`invert`] reads
//! them from a whole tree (an undo's own commit).

use serde_json::Value;

use crate::algo::diff::PatchOp;
use crate::algo::snapshot::apply_patch;
use crate::algo::tree::{unpack, Node};

/// A patch that does not fit the tree it was inverted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Misfit;

/// The path an op changes.
pub(crate) fn op_path(op: &PatchOp) -> &str {
    match op {
        PatchOp::Add { path, .. } | PatchOp::Remove { path } | PatchOp::Replace { path, .. } => {
            path
        }
    }
}

/// The value at the RFC 6901 `pointer` of `tree` (packed elements parsed where the pointer
/// goes into one).
pub(crate) fn value_at(tree: &Node, pointer: &str) -> Option<Value> {
    if pointer.is_empty() {
        return Some(tree.to_value());
    }
    let rest = pointer.strip_prefix('/')?;
    let mut node = tree;
    let mut segments = rest.split('/');
    while let Some(segment) = segments.next() {
        node = match node {
            Node::Object(map) => map.get(&segment.replace("~1", "/").replace("~0", "~"))?,
            Node::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            Node::Packed(raw) => {
                let inner: Vec<&str> = std::iter::once(segment).chain(segments).collect();
                return unpack(raw)
                    .pointer(&format!("/{}", inner.join("/")))
                    .cloned();
            }
            _ => return None,
        };
    }
    Some(node.to_value())
}

/// Applies `ops` to `tree` one by one, reading before each what it overwrites, and answers
/// the ops that undo them (in the order to apply them). `tree` is left at the state after
/// `ops` (half-patched on a [`Misfit`]).
pub(crate) fn invert(tree: &mut Node, ops: &[PatchOp]) -> Result<Vec<PatchOp>, Misfit> {
    let mut inverse = Vec::with_capacity(ops.len());
    for op in ops {
        let path = op_path(op).to_owned();
        let old = value_at(tree, &path);
        inverse.push(match (op, old) {
            (PatchOp::Add { .. }, None) => PatchOp::Remove { path },
            // An `add` of an existing key replaces it.
            (PatchOp::Add { .. }, Some(value)) => PatchOp::Replace { path, value },
            (PatchOp::Remove { .. }, Some(value)) => PatchOp::Add { path, value },
            (PatchOp::Replace { .. }, Some(value)) => PatchOp::Replace { path, value },
            (_, None) => return Err(Misfit),
        });
        apply_patch(tree, std::slice::from_ref(op)).map_err(|_| Misfit)?;
    }
    inverse.reverse();
    Ok(inverse)
}

/// Whether two paths touch the same data: equal, or one inside the other (whole segments).
pub(crate) fn overlaps(a: &str, b: &str) -> bool {
    let inside = |short: &str, long: &str| {
        long.starts_with(short)
            && (long.len() == short.len() || long[short.len()..].starts_with('/'))
    };
    inside(a, b) || inside(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::diff::diff;
    use serde_json::json;

    fn round_trip(before: Value, after: Value) {
        let ops = diff(&before, &after);
        let mut tree = Node::from_value(before.clone());
        let inverse = invert(&mut tree, &ops).unwrap();
        assert_eq!(tree.to_value(), after);
        apply_patch(&mut tree, &inverse).unwrap();
        assert_eq!(tree.to_value(), before, "inverse {inverse:?}");
    }

    #[test]
    fn inverse_brings_the_state_back() {
        round_trip(json!({"a": 1}), json!({"a": 2}));
        round_trip(
            json!({"a":1,"b":{"x":1,"y":2},"c":[1,2,3]}),
            json!({"c":[9],"b":{"y":3,"z":1},"d":4}),
        );
        round_trip(
            json!({"todos":[{"id":1,"done":false},{"id":2,"done":true}]}),
            json!({"todos":[{"id":1,"done":true},{"id":2,"done":true},{"id":3,"done":false}]}),
        );
        round_trip(
            json!({"todos":[{"id":1},{"id":2},{"id":3}]}),
            json!({"todos":[{"id":3}]}),
        );
        round_trip(json!(1), json!({"a": [1]}));
    }

    #[test]
    fn paths_overlap_by_whole_segments() {
        assert!(overlaps("/todos/1", "/todos/1/done"));
        assert!(overlaps("/todos/1/done", "/todos/1"));
        assert!(overlaps("", "/a"));
        assert!(!overlaps("/todos/1", "/todos/10"));
        assert!(!overlaps("/a", "/b"));
    }

    #[test]
    fn reads_inside_packed_elements() {
        let tree = Node::from_value(json!({"todos":[{"id":1,"t":{"x":"y"}}]}));
        assert_eq!(value_at(&tree, "/todos/0/t/x"), Some(json!("y")));
        assert_eq!(value_at(&tree, "/todos/1"), None);
        assert_eq!(value_at(&tree, "/nope"), None);
    }
}
