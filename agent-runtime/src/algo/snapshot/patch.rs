//! Applying a patch of [`crate::algo::diff::diff`] to a tree in place (bringing the spare tree up to
//! date, replaying the commit log). Only the forms the diff emits are needed: `add` appends to
//! an array or inserts a key, `remove` drops an index or a key, `replace` sets a value.
//!
//! An op reaching inside a packed element ([`crate::algo::tree`]) parses that element,
//! applies the op to it and packs it again: the cost of the element, not of its list.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::algo::diff::PatchOp;
use crate::algo::tree::{find_segments, pack, unpack, Node, NodeMap};

/// A patch that does not fit the tree it is applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Misfit;

/// Applies `ops` to `tree` in order. On a [`Misfit`] the tree is left half-patched.
pub(crate) fn apply_patch(tree: &mut Node, ops: &[PatchOp]) -> Result<(), Misfit> {
    apply_sharing(tree, ops, None)
}

/// [`apply_patch`], for a tree that the patch brings equal to `target`: every element the
/// patch packs anew shares `target`'s text when it is the same, so the two trees hold one
/// copy of each element.
pub(crate) fn apply_sharing(
    tree: &mut Node,
    ops: &[PatchOp],
    target: Option<&Node>,
) -> Result<(), Misfit> {
    for op in ops {
        apply_op(tree, op, target)?;
    }
    Ok(())
}

/// The path an op changes.
pub(super) fn op_path(op: &PatchOp) -> &str {
    match op {
        PatchOp::Add { path, .. } | PatchOp::Remove { path } | PatchOp::Replace { path, .. } => {
            path
        }
    }
}

fn apply_op(tree: &mut Node, op: &PatchOp, target: Option<&Node>) -> Result<(), Misfit> {
    let path = op_path(op);
    if path.is_empty() {
        return match op {
            PatchOp::Replace { value, .. } => {
                *tree = Node::from_value(value.clone());
                Ok(())
            }
            _ => Err(Misfit),
        };
    }
    let segments: Vec<&str> = path.strip_prefix('/').ok_or(Misfit)?.split('/').collect();
    let mut node = tree;
    for (depth, segment) in segments.iter().enumerate() {
        let last = depth + 1 == segments.len();
        if let Node::Packed(raw) = node {
            // The op reaches inside a packed element: apply the rest of it to its value.
            let mut value = unpack(raw);
            apply_inner(&mut value, op, &segments[depth..])?;
            *node = Node::Packed(shared(pack(&value), target, &segments[..depth]));
            return Ok(());
        }
        if last {
            return settle_last(node, op, segment, target, &segments);
        }
        node = match node {
            Node::Object(map) => map.get_mut(unescape(segment).as_str()).ok_or(Misfit)?,
            Node::Array(items) => items.get_mut(index(segment)?).ok_or(Misfit)?,
            _ => return Err(Misfit),
        };
    }
    Err(Misfit)
}

/// Applies `op` at the last segment of its path, under `parent`.
fn settle_last(
    parent: &mut Node,
    op: &PatchOp,
    segment: &str,
    target: Option<&Node>,
    segments: &[&str],
) -> Result<(), Misfit> {
    let parent = match parent {
        Node::Object(map) => Parent::Fields(&mut **map),
        Node::Array(items) => Parent::Items(items),
        _ => return Err(Misfit),
    };
    apply_last(parent, op, segment, |value, in_array| {
        if !in_array {
            return Node::from_value(value.clone());
        }
        match Node::element(value) {
            Node::Packed(raw) => Node::Packed(shared(raw, target, segments)),
            scalar => scalar,
        }
    })
}

/// `raw`, or the same text as `target` holds it at `segments` (one copy for both trees).
fn shared(raw: Arc<RawValue>, target: Option<&Node>, segments: &[&str]) -> Arc<RawValue> {
    match target.and_then(|t| find_segments(t, segments.iter().copied())) {
        Some(Node::Packed(theirs)) if theirs.get() == raw.get() => theirs.clone(),
        _ => raw,
    }
}

/// Applies `op` to `value`, an element whose path within it is `rest` (the segments after
/// the element's own).
fn apply_inner(value: &mut Value, op: &PatchOp, rest: &[&str]) -> Result<(), Misfit> {
    let (last, parents) = rest.split_last().ok_or(Misfit)?;
    let parent = parents.iter().try_fold(value, |v, segment| match v {
        Value::Object(map) => map.get_mut(unescape(segment).as_str()).ok_or(Misfit),
        Value::Array(items) => items.get_mut(index(segment)?).ok_or(Misfit),
        _ => Err(Misfit),
    })?;
    let parent = match parent {
        Value::Object(map) => Parent::Fields(map),
        Value::Array(items) => Parent::Items(items),
        _ => return Err(Misfit),
    };
    apply_last(parent, op, last, |value, _| value.clone())
}

/// The container an op's last segment names a place in: an object's fields (of a tree or of
/// a value) or an array's items.
enum Parent<'a, T> {
    Fields(&'a mut dyn Fields<T>),
    Items(&'a mut Vec<T>),
}

/// An object's fields, as ops change them.
trait Fields<T> {
    fn slot(&mut self, key: &str) -> Option<&mut T>;
    fn put(&mut self, key: String, value: T);
    fn take(&mut self, key: &str) -> Option<T>;
}

impl Fields<Value> for serde_json::Map<String, Value> {
    fn slot(&mut self, key: &str) -> Option<&mut Value> {
        self.get_mut(key)
    }
    fn put(&mut self, key: String, value: Value) {
        self.insert(key, value);
    }
    fn take(&mut self, key: &str) -> Option<Value> {
        self.shift_remove(key)
    }
}

impl Fields<Node> for NodeMap {
    fn slot(&mut self, key: &str) -> Option<&mut Node> {
        self.get_mut(key)
    }
    fn put(&mut self, key: String, value: Node) {
        self.insert(key, value);
    }
    fn take(&mut self, key: &str) -> Option<Node> {
        self.shift_remove(key)
    }
}

/// Applies `op` at `segment` (its path's last) in `parent`; `make` turns the op's value into
/// what the container holds (`true`: as an array's item).
fn apply_last<T>(
    parent: Parent<'_, T>,
    op: &PatchOp,
    segment: &str,
    make: impl FnOnce(&Value, bool) -> T,
) -> Result<(), Misfit> {
    match parent {
        Parent::Fields(fields) => {
            let key = unescape(segment);
            match op {
                PatchOp::Replace { value, .. } => {
                    *fields.slot(&key).ok_or(Misfit)? = make(value, false);
                }
                PatchOp::Add { value, .. } => fields.put(key, make(value, false)),
                PatchOp::Remove { .. } => {
                    fields.take(&key).ok_or(Misfit)?;
                }
            }
        }
        Parent::Items(items) => {
            let i = index(segment)?;
            match op {
                PatchOp::Replace { value, .. } => {
                    *items.get_mut(i).ok_or(Misfit)? = make(value, true);
                }
                PatchOp::Add { value, .. } => {
                    if i > items.len() {
                        return Err(Misfit);
                    }
                    items.insert(i, make(value, true));
                }
                PatchOp::Remove { .. } => {
                    if i >= items.len() {
                        return Err(Misfit);
                    }
                    items.remove(i);
                }
            }
        }
    }
    Ok(())
}

fn index(segment: &str) -> Result<usize, Misfit> {
    segment.parse().map_err(|_| Misfit)
}

/// Unescapes one RFC 6901 segment.
fn unescape(segment: &str) -> String {
    if segment.contains('~') {
        segment.replace("~1", "/").replace("~0", "~")
    } else {
        segment.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::diff::diff;
    use serde_json::json;

    #[test]
    fn patches_apply_inside_and_around_packed_elements() {
        let before = json!({"todos": [{"id": 1, "done": false}, {"id": 2}], "n": 1, "a/b": {}});
        let after = json!({"todos": [{"id": 1, "done": true}, 5, {"id": 3, "t": ["x"]}],
                           "n": 2, "a/b": {"k": [1]}});
        let ops = diff(&before, &after);
        let mut tree = Node::from_value(before);
        apply_patch(&mut tree, &ops).unwrap();
        assert_eq!(tree, Node::from_value(after.clone()));
        assert_eq!(tree.to_value(), after);
    }

    #[test]
    fn a_patch_that_does_not_fit_is_refused() {
        let mut tree = Node::from_value(json!({"todos": [{"id": 1}]}));
        let ops = [PatchOp::Remove {
            path: "/todos/4".into(),
        }];
        assert_eq!(apply_patch(&mut tree, &ops), Err(Misfit));
        let ops = [PatchOp::Replace {
            path: "/todos/0/missing/deeper".into(),
            value: json!(1),
        }];
        assert_eq!(apply_patch(&mut tree, &ops), Err(Misfit));
    }

    #[test]
    fn elements_brought_level_with_a_target_share_its_text() {
        let before = json!({"todos": [{"id": 1, "done": false}]});
        let after = json!({"todos": [{"id": 1, "done": true}, {"id": 2}]});
        let target = Node::from_value(after.clone());
        let mut tree = Node::from_value(before.clone());
        apply_sharing(&mut tree, &diff(&before, &after), Some(&target)).unwrap();
        let (Some(Node::Array(mine)), Some(Node::Array(theirs))) =
            (tree.field("todos"), target.field("todos"))
        else {
            panic!("arrays")
        };
        for (a, b) in mine.iter().zip(theirs) {
            assert!(Arc::ptr_eq(a.as_packed().unwrap(), b.as_packed().unwrap()));
        }
    }
}
