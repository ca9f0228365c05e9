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
use crate::algo::tree::{pack, unpack, Node};

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

fn op_path(op: &PatchOp) -> &str {
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
    match parent {
        Node::Object(map) => {
            let key = unescape(segment);
            match op {
                PatchOp::Replace { value, .. } => {
                    *map.get_mut(key.as_str()).ok_or(Misfit)? = Node::from_value(value.clone());
                }
                PatchOp::Add { value, .. } => {
                    map.insert(key, Node::from_value(value.clone()));
                }
                PatchOp::Remove { .. } => {
                    map.shift_remove(key.as_str()).ok_or(Misfit)?;
                }
            }
        }
        Node::Array(items) => {
            let i = index(segment)?;
            let element = |value: &Value| match Node::element(value) {
                Node::Packed(raw) => Node::Packed(shared(raw, target, segments)),
                scalar => scalar,
            };
            match op {
                PatchOp::Replace { value, .. } => {
                    *items.get_mut(i).ok_or(Misfit)? = element(value);
                }
                PatchOp::Add { value, .. } => {
                    if i > items.len() {
                        return Err(Misfit);
                    }
                    items.insert(i, element(value));
                }
                PatchOp::Remove { .. } => {
                    if i >= items.len() {
                        return Err(Misfit);
                    }
                    items.remove(i);
                }
            }
        }
        _ => return Err(Misfit),
    }
    Ok(())
}

/// `raw`, or the same text as `target` holds it at `segments` (one copy for both trees).
fn shared(raw: Arc<RawValue>, target: Option<&Node>, segments: &[&str]) -> Arc<RawValue> {
    let found = target.and_then(|t| {
        segments.iter().try_fold(t, |node, segment| match node {
            Node::Object(map) => map.get(unescape(segment).as_str()),
            Node::Array(items) => items.get(index(segment).ok()?),
            _ => None,
        })
    });
    match found {
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
    match parent {
        Value::Object(map) => {
            let key = unescape(last);
            match op {
                PatchOp::Replace { value, .. } => {
                    *map.get_mut(key.as_str()).ok_or(Misfit)? = value.clone();
                }
                PatchOp::Add { value, .. } => {
                    map.insert(key, value.clone());
                }
                PatchOp::Remove { .. } => {
                    map.shift_remove(key.as_str()).ok_or(Misfit)?;
                }
            }
        }
        Value::Array(items) => {
            let i = index(last)?;
            match op {
                PatchOp::Replace { value, .. } => {
                    *items.get_mut(i).ok_or(Misfit)? = value.clone();
                }
                PatchOp::Add { value, .. } => {
                    if i > items.len() {
                        return Err(Misfit);
                    }
                    items.insert(i, value.clone());
                }
                PatchOp::Remove { .. } => {
                    if i >= items.len() {
                        return Err(Misfit);
                    }
                    items.remove(i);
                }
            }
        }
        _ => return Err(Misfit),
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
