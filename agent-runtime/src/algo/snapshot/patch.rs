//! Applying a patch of [`crate::algo::diff::diff`] to a tree in place (bringing the spare tree up to
//! date). Only the forms the diff emits are needed: `add` appends to an array or inserts a
//! key, `remove` drops an index or a key, `replace` sets a value.

use serde_json::Value;

use crate::algo::diff::PatchOp;

/// A patch that does not fit the tree it is applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Misfit;

/// A copy of `value` for a tree, made by serde_json's value serializer rather than
/// `Value::clone`: measured on a 10k-todo tree, a cloned tree takes 2.5× as long to
/// serialize to text as one the serializer built (the time goes to `format_escaped_str`),
/// and the trees are serialized at every first read of a snapshot.
pub(crate) fn copy_of(value: &Value) -> Value {
    // A `Value` always serializes (its keys are strings); the clone is never taken.
    serde_json::to_value(value).unwrap_or_else(|_| value.clone())
}

/// Applies `ops` to `tree` in order. On a [`Misfit`] the tree is left half-patched.
pub(crate) fn apply_patch(tree: &mut Value, ops: &[PatchOp]) -> Result<(), Misfit> {
    for op in ops {
        match op {
            PatchOp::Replace { path, value } => *resolve(tree, path)? = copy_of(value),
            PatchOp::Add { path, value } => {
                let (parent, last) = parent(tree, path)?;
                match parent {
                    Value::Object(map) => {
                        map.insert(last, copy_of(value));
                    }
                    Value::Array(items) => {
                        let i: usize = last.parse().map_err(|_| Misfit)?;
                        if i > items.len() {
                            return Err(Misfit);
                        }
                        items.insert(i, copy_of(value));
                    }
                    _ => return Err(Misfit),
                }
            }
            PatchOp::Remove { path } => {
                let (parent, last) = parent(tree, path)?;
                match parent {
                    Value::Object(map) => {
                        map.shift_remove(&last).ok_or(Misfit)?;
                    }
                    Value::Array(items) => {
                        let i: usize = last.parse().map_err(|_| Misfit)?;
                        if i >= items.len() {
                            return Err(Misfit);
                        }
                        items.remove(i);
                    }
                    _ => return Err(Misfit),
                }
            }
        }
    }
    Ok(())
}

/// Unescapes one RFC 6901 segment.
fn unescape(segment: &str) -> String {
    if segment.contains('~') {
        segment.replace("~1", "/").replace("~0", "~")
    } else {
        segment.to_owned()
    }
}

fn step<'v>(v: &'v mut Value, segment: &str) -> Result<&'v mut Value, Misfit> {
    match v {
        Value::Object(map) => map.get_mut(&unescape(segment)).ok_or(Misfit),
        Value::Array(items) => {
            let i: usize = segment.parse().map_err(|_| Misfit)?;
            items.get_mut(i).ok_or(Misfit)
        }
        _ => Err(Misfit),
    }
}

fn resolve<'v>(tree: &'v mut Value, path: &str) -> Result<&'v mut Value, Misfit> {
    if path.is_empty() {
        return Ok(tree);
    }
    let rest = path.strip_prefix('/').ok_or(Misfit)?;
    rest.split('/').try_fold(tree, step)
}

/// The container holding the last segment of `path`, and that segment unescaped.
fn parent<'v>(tree: &'v mut Value, path: &str) -> Result<(&'v mut Value, String), Misfit> {
    let cut = path.rfind('/').ok_or(Misfit)?;
    let container = resolve(tree, &path[..cut])?;
    Ok((container, unescape(&path[cut + 1..])))
}
