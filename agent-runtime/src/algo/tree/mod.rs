//! The compact JSON tree a session keeps of its state (`docs/stores.md` §Memory).
//!
//! A [`serde_json::Value`] costs about eight times its JSON text (every value 80 bytes with
//! `preserve_order`, every object an index map, every key a string of its own), and a
//! session keeps several trees of its state (the published snapshot, the spare one, the
//! stored one). A [`Node`] is the same tree except for one thing: **a container directly
//! inside an array is kept as its compact JSON text** ([`Node::Packed`], an `Arc<RawValue>`),
//! so a list of records costs its text plus one pointer per element. The objects and arrays
//! above the lists (the state's own fields) stay nodes, so a walk, a patch or a read reaches
//! any list element in one step and only ever parses the element it needs.
//!
//! Every constructor here ([`Node::from_value`], [`Node::element`], deserializing) packs every
//! object or array element of a [`Node::Array`], and nothing else. The snapshot walk unpacks an
//! element that holds a tracked collection, so the collection is walked sparsely; equality
//! compares a packed node with an unpacked one by value.

mod diff;

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

pub(crate) use diff::diff_nodes;

/// An object's fields, in order.
pub(crate) type NodeMap = IndexMap<String, Node>;

/// A JSON value, with every container inside an array kept as its text (see the module).
#[derive(Debug, Clone, Default)]
pub(crate) enum Node {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Node>),
    Object(Box<NodeMap>),
    /// An array's element that is an object or an array, as compact JSON text.
    Packed(Arc<RawValue>),
}

/// The compact text of `value` (a `Value` always serializes: its keys are strings).
pub(crate) fn pack(value: &Value) -> Arc<RawValue> {
    match serde_json::value::to_raw_value(value) {
        Ok(raw) => Arc::from(raw),
        Err(_) => Arc::from(RawValue::NULL.to_owned()),
    }
}

/// The value of a packed text (written by serde_json, so it parses; `null` otherwise).
pub(crate) fn unpack(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

impl Node {
    /// The node of `value` standing at the root or as an object's field.
    pub(crate) fn from_value(value: Value) -> Node {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(b),
            Value::Number(n) => Node::Number(n),
            Value::String(s) => Node::String(s),
            Value::Array(items) => Node::Array(items.iter().map(Node::element).collect()),
            Value::Object(map) => Node::Object(Box::new(
                map.into_iter()
                    .map(|(k, v)| (k, Node::from_value(v)))
                    .collect(),
            )),
        }
    }

    /// The node of `value` standing as an array's element: packed when it is a container.
    pub(crate) fn element(value: &Value) -> Node {
        match value {
            Value::Array(_) | Value::Object(_) => Node::Packed(pack(value)),
            scalar => Node::from_value(scalar.clone()),
        }
    }

    /// The JSON value of this node (packed elements parsed).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.clone()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), v.to_value())).collect())
            }
            Node::Packed(raw) => unpack(raw),
        }
    }

    /// Whether this node equals `value` (a scalar compare in place; containers are compared
    /// node by node, packed ones through their text).
    pub(crate) fn same_as(&self, value: &Value) -> bool {
        match (self, value) {
            (Node::Null, Value::Null) => true,
            (Node::Bool(a), Value::Bool(b)) => a == b,
            (Node::Number(a), Value::Number(b)) => a == b,
            (Node::String(a), Value::String(b)) => a == b,
            (Node::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(n, v)| n.same_as(v))
            }
            (Node::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, na), (kb, vb))| ka == kb && na.same_as(vb))
            }
            (Node::Packed(raw), v @ (Value::Array(_) | Value::Object(_))) => unpack(raw) == *v,
            _ => false,
        }
    }

    /// The packed text, when this node is one.
    #[cfg(test)]
    pub(crate) fn as_packed(&self) -> Option<&Arc<RawValue>> {
        match self {
            Node::Packed(raw) => Some(raw),
            _ => None,
        }
    }

    /// The field `key` of an object node.
    pub(crate) fn field(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Object(map) => map.get(key),
            _ => None,
        }
    }
}

/// The node at `pointer` (RFC 6901, escaped) in `tree`, without going into packed elements.
pub(crate) fn find<'t>(tree: &'t Node, pointer: &str) -> Option<&'t Node> {
    if pointer.is_empty() {
        return Some(tree);
    }
    find_segments(tree, pointer.strip_prefix('/')?.split('/'))
}

/// The node the escaped `segments` lead to in `tree`, without going into packed elements.
pub(crate) fn find_segments<'t, 's>(
    tree: &'t Node,
    segments: impl IntoIterator<Item = &'s str>,
) -> Option<&'t Node> {
    segments
        .into_iter()
        .try_fold(tree, |node, segment| match node {
            Node::Object(map) => {
                if segment.contains('~') {
                    map.get(&segment.replace("~1", "/").replace("~0", "~"))
                } else {
                    map.get(segment)
                }
            }
            Node::Array(items) => items.get(segment.parse::<usize>().ok()?),
            _ => None,
        })
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Null, Node::Null) => true,
            (Node::Bool(a), Node::Bool(b)) => a == b,
            (Node::Number(a), Node::Number(b)) => a == b,
            (Node::String(a), Node::String(b)) => a == b,
            (Node::Array(a), Node::Array(b)) => a == b,
            (Node::Object(a), Node::Object(b)) => a == b,
            (Node::Packed(a), Node::Packed(b)) => {
                Arc::ptr_eq(a, b) || a.get() == b.get() || unpack(a) == unpack(b)
            }
            (Node::Packed(raw), node @ (Node::Array(_) | Node::Object(_)))
            | (node @ (Node::Array(_) | Node::Object(_)), Node::Packed(raw)) => {
                node.same_as(&unpack(raw))
            }
            _ => false,
        }
    }
}

impl From<Value> for Node {
    fn from(value: Value) -> Self {
        Node::from_value(value)
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Number(n) => n.serialize(s),
            Node::String(v) => s.serialize_str(v),
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map.iter() {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Node::Packed(raw) => raw.serialize(s),
        }
    }
}

/// Reads a node from JSON text: an array's elements are read as raw text first, so a list
/// of records is never built as a `Value` tree. A packed element keeps its text as read: read
/// only compact text (what [`Serialize`] writes), or two equal trees may differ in packed
/// whitespace (harmless to a walk, which compares values when texts differ).
impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Number::from_f64(v).map_or(Node::Null, Node::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            let text = raw.get().trim_start();
            items.push(if text.starts_with(['{', '[']) {
                Node::Packed(Arc::from(raw))
            } else {
                let scalar: Value = serde_json::from_str(text).map_err(de::Error::custom)?;
                Node::from_value(scalar)
            });
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut fields = NodeMap::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            fields.insert(k, v);
        }
        Ok(Node::Object(Box::new(fields)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "todos": [{"id": 1, "tags": ["a"]}, {"id": 2, "tags": []}],
            "numbers": [1, 2.5, "x", null, [3]],
            "nested": {"deep": {"list": [{"k": true}]}},
            "empty": {},
        })
    }

    #[test]
    fn containers_in_arrays_are_packed_and_nothing_else() {
        let node = Node::from_value(sample());
        let Some(Node::Array(todos)) = node.field("todos") else {
            panic!("todos is an array node")
        };
        assert_eq!(
            todos[0].as_packed().map(|r| r.get()),
            Some(r#"{"id":1,"tags":["a"]}"#)
        );
        let Some(Node::Array(numbers)) = node.field("numbers") else {
            panic!("numbers is an array node")
        };
        assert!(matches!(numbers[0], Node::Number(_)));
        assert!(matches!(numbers[4], Node::Packed(_)));
        assert!(matches!(node.field("nested"), Some(Node::Object(_))));
    }

    #[test]
    fn values_survive_every_form() {
        let value = sample();
        let node = Node::from_value(value.clone());
        assert_eq!(node.to_value(), value);
        assert!(node.same_as(&value));
        let text = serde_json::to_string(&node).unwrap();
        assert_eq!(text, serde_json::to_string(&value).unwrap());
        let read: Node = serde_json::from_str(&text).unwrap();
        assert_eq!(read, node);
        assert_eq!(serde_json::to_value(&node).unwrap(), value);
    }

    #[test]
    fn a_changed_element_is_not_the_same() {
        let node = Node::from_value(sample());
        let mut other = sample();
        other["todos"][1]["id"] = json!(3);
        assert!(!node.same_as(&other));
        assert_ne!(node, Node::from_value(other));
    }
}
