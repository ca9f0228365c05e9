//! The diff of two trees: exactly [`crate::algo::diff::diff`] of their values (semantics §1),
//! without building those values. Packed elements of the same text are skipped; two that
//! differ are parsed and diffed alone.

use crate::algo::diff::{diff_into, push_index, push_key, PatchOp};

use super::{unpack, Node, NodeMap};

/// The ops that take `prev`'s value to `next`'s.
pub(crate) fn diff_nodes(prev: &Node, next: &Node) -> Vec<PatchOp> {
    let mut differ = Differ {
        path: String::with_capacity(64),
        ops: Vec::new(),
    };
    differ.walk(prev, next);
    differ.ops
}

struct Differ {
    path: String,
    ops: Vec<PatchOp>,
}

impl Differ {
    fn walk(&mut self, prev: &Node, next: &Node) {
        match (prev, next) {
            (Node::Array(p), Node::Array(n)) => self.arrays(p, n),
            (Node::Object(p), Node::Object(n)) => self.objects(p, n),
            (Node::Packed(p), Node::Packed(n)) => {
                if p.get() != n.get() {
                    diff_into(&unpack(p), &unpack(n), &mut self.path, &mut self.ops);
                }
            }
            // An element unpacked on one side only (it holds a tracked collection).
            (Node::Packed(_), Node::Array(_) | Node::Object(_))
            | (Node::Array(_) | Node::Object(_), Node::Packed(_)) => {
                diff_into(
                    &prev.to_value(),
                    &next.to_value(),
                    &mut self.path,
                    &mut self.ops,
                );
            }
            _ => {
                if prev != next {
                    self.ops.push(PatchOp::Replace {
                        path: self.path.clone(),
                        value: next.to_value(),
                    });
                }
            }
        }
    }

    fn arrays(&mut self, prev: &[Node], next: &[Node]) {
        let base = self.path.len();
        let common = prev.len().min(next.len());
        for (i, (p, n)) in prev.iter().zip(next).enumerate() {
            push_index(&mut self.path, i);
            self.walk(p, n);
            self.path.truncate(base);
        }
        for i in (next.len()..prev.len()).rev() {
            push_index(&mut self.path, i);
            self.remove();
            self.path.truncate(base);
        }
        for (i, n) in next.iter().enumerate().skip(common) {
            push_index(&mut self.path, i);
            self.add(n);
            self.path.truncate(base);
        }
    }

    fn objects(&mut self, prev: &NodeMap, next: &NodeMap) {
        let base = self.path.len();
        for key in prev.keys() {
            if !next.contains_key(key) {
                push_key(&mut self.path, key);
                self.remove();
                self.path.truncate(base);
            }
        }
        for (key, n) in next {
            push_key(&mut self.path, key);
            match prev.get(key) {
                Some(p) => self.walk(p, n),
                None => self.add(n),
            }
            self.path.truncate(base);
        }
    }

    fn add(&mut self, node: &Node) {
        self.ops.push(PatchOp::Add {
            path: self.path.clone(),
            value: node.to_value(),
        });
    }

    fn remove(&mut self) {
        self.ops.push(PatchOp::Remove {
            path: self.path.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::diff::diff;
    use serde_json::{json, Value};

    fn both(prev: Value, next: Value) {
        let want = diff(&prev, &next);
        let got = diff_nodes(&Node::from_value(prev), &Node::from_value(next));
        assert_eq!(got, want);
    }

    #[test]
    fn the_same_ops_as_the_value_diff() {
        both(json!({"a": 1}), json!({"a": 1}));
        both(
            json!({"todos": [{"id": 1, "done": false}, {"id": 2}, 7], "x": {"y": [1, [2]]}}),
            json!({"todos": [{"id": 1, "done": true}, 3], "x": {"y": [1, [3], {"z": 1}]}}),
        );
        both(
            json!({"a": 1, "b": 2, "c": 3}),
            json!({"c": 3, "d": 4, "a": 0}),
        );
        both(json!([1, {"a": 1}]), json!({"a": 1}));
        both(json!({"a": [{"b": 1}]}), json!({"a": [[{"b": 1}]]}));
        both(json!(null), json!([{"k": "v"}]));
    }
}
