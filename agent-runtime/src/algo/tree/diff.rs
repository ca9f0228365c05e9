//! The diff of two trees: exactly [`crate::algo::diff::diff`] of their values (semantics §1),
//! without building those values: the same walk ([`Tree`]), where packed elements of the same
//! text are skipped and two that differ are parsed and diffed alone.

use serde_json::Value;

use crate::algo::diff::{diff_into, diff_trees, Fields, PatchOp, Shape, Tree};

use super::{unpack, Node, NodeMap};

/// The ops that take `prev`'s value to `next`'s.
pub(crate) fn diff_nodes(prev: &Node, next: &Node) -> Vec<PatchOp> {
    diff_trees(prev, next)
}

impl Tree for Node {
    type Fields = NodeMap;
    fn shape(&self) -> Shape<'_, Self> {
        match self {
            Node::Array(items) => Shape::Array(items),
            Node::Object(map) => Shape::Object(&**map),
            _ => Shape::Other,
        }
    }
    fn scalar_equal(prev: &Node, next: &Node) -> bool {
        match (prev, next) {
            (Node::Null, Node::Null) => true,
            (Node::Bool(a), Node::Bool(b)) => a == b,
            (Node::Number(a), Node::Number(b)) => a == b,
            (Node::String(a), Node::String(b)) => a == b,
            (Node::Packed(a), Node::Packed(b)) => a.get() == b.get(),
            _ => false,
        }
    }
    fn to_value(&self) -> Value {
        Node::to_value(self)
    }
    fn leaves(prev: &Node, next: &Node, path: &mut String, ops: &mut Vec<PatchOp>) {
        match (prev, next) {
            (Node::Packed(p), Node::Packed(n)) => {
                if p.get() != n.get() {
                    diff_into(&unpack(p), &unpack(n), path, ops);
                }
            }
            // An element unpacked on one side only (it holds a tracked collection).
            (Node::Packed(_), Node::Array(_) | Node::Object(_))
            | (Node::Array(_) | Node::Object(_), Node::Packed(_)) => {
                diff_into(&prev.to_value(), &next.to_value(), path, ops);
            }
            _ => {
                if prev != next {
                    ops.push(PatchOp::Replace {
                        path: path.clone(),
                        value: next.to_value(),
                    });
                }
            }
        }
    }
}

impl Fields<Node> for NodeMap {
    fn len(&self) -> usize {
        NodeMap::len(self)
    }
    fn get(&self, key: &str) -> Option<&Node> {
        NodeMap::get(self, key)
    }
    fn entries<'a>(&'a self) -> impl Iterator<Item = (&'a String, &'a Node)>
    where
        Node: 'a,
    {
        self.iter()
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "diff_props.rs"]
mod props;
