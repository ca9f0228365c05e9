//! Declarative redaction: the `@redact` fields of an app's state, read from the state's
//! schemars schema (the doc comment of a field is its property's `description`).
//!
//! [`RedactPlan::from_schema`] turns the schema into a small automaton over JSON paths: from
//! a node, a key leads to a field that is redacted, to another node, or to nothing (no
//! redaction below); array items and map values go through a wildcard. `$ref`s, `allOf`,
//! `anyOf` and `oneOf` members are merged (an enum's variants share one node), recursive
//! types are fine (the automaton has cycles), and nodes with no `@redact` below them are
//! dropped, so a state without `@redact` has an empty plan and costs nothing.
//!
//! The plan is type-based: a `@redact` field of a struct is redacted wherever that struct
//! sits in the state. Positional tuple items share one wildcard, so a field of one tuple
//! member redacts the field of the same name in the others.
//!
//! [`strip_schema`] removes the same fields from the schema shown to agents.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::tags::{parse_state_field_doc, TagError};

/// Where a key leads from a plan node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'p> {
    /// Nothing below is redacted.
    Plain,
    /// The field is redacted: agents never see it.
    Redact,
    /// Something below is redacted.
    Into(PlanNode<'p>),
}

/// A `@redact` field whose doc text does not parse (a near miss such as `@redacted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactError {
    /// JSON Pointer of the property in the state schema.
    pub pointer: String,
    /// The tag error.
    pub error: TagError,
}

impl std::fmt::Display for RedactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "state field `{}`: {}", self.pointer, self.error)
    }
}

impl std::error::Error for RedactError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Redact,
    Node(usize),
}

#[derive(Debug, Default)]
struct Node {
    /// Named fields, sorted by key.
    fields: Vec<(String, Slot)>,
    /// Array items and map values.
    any: Option<usize>,
}

/// The `@redact` fields of a state type (see the module docs).
#[derive(Debug, Default)]
pub struct RedactPlan {
    nodes: Vec<Node>,
    root: Option<usize>,
}

/// A node of a [`RedactPlan`]: a position in the state with something redacted below it.
#[derive(Debug, Clone, Copy)]
pub struct PlanNode<'p> {
    plan: &'p RedactPlan,
    id: usize,
}

impl PartialEq for PlanNode<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.plan, other.plan) && self.id == other.id
    }
}

impl Eq for PlanNode<'_> {}

impl RedactPlan {
    /// The plan of the state whose schemars root schema is `schema`.
    pub fn from_schema(schema: &Value) -> Result<RedactPlan, Vec<RedactError>> {
        let mut raw = RawGraph {
            root: schema,
            nodes: Vec::new(),
            refs: HashMap::new(),
            errors: Vec::new(),
        };
        let root = raw.visit(schema, "");
        if !raw.errors.is_empty() {
            return Err(raw.errors);
        }
        Ok(raw.compile(root))
    }

    /// True when no field is redacted.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// The node of the whole state, `None` when nothing is redacted.
    pub fn root(&self) -> Option<PlanNode<'_>> {
        self.root.map(|id| PlanNode { plan: self, id })
    }

    /// Removes the redacted fields from a serialized state.
    pub fn strip(&self, value: &mut Value) {
        if let Some(root) = self.root() {
            root.strip(value);
        }
    }
}

impl<'p> PlanNode<'p> {
    fn node(&self) -> &'p Node {
        &self.plan.nodes[self.id]
    }

    /// Where the object key `key` leads.
    #[inline]
    pub fn field(&self, key: &str) -> Step<'p> {
        let node = self.node();
        match node.fields.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => match node.fields[i].1 {
                Slot::Redact => Step::Redact,
                Slot::Node(id) => Step::Into(PlanNode {
                    plan: self.plan,
                    id,
                }),
            },
            Err(_) => self.wildcard(),
        }
    }

    /// Where an array item leads.
    #[inline]
    pub fn item(&self) -> Step<'p> {
        self.wildcard()
    }

    fn wildcard(&self) -> Step<'p> {
        match self.node().any {
            Some(id) => Step::Into(PlanNode {
                plan: self.plan,
                id,
            }),
            None => Step::Plain,
        }
    }

    /// Removes the redacted fields below this node from `value`.
    pub fn strip(&self, value: &mut Value) {
        let node = self.node();
        match value {
            Value::Object(map) => {
                for (key, slot) in &node.fields {
                    match slot {
                        Slot::Redact => {
                            map.shift_remove(key);
                        }
                        Slot::Node(id) => {
                            if let Some(v) = map.get_mut(key) {
                                self.at(*id).strip(v);
                            }
                        }
                    }
                }
                if let Some(any) = node.any {
                    for (key, v) in map.iter_mut() {
                        if node
                            .fields
                            .binary_search_by(|(k, _)| k.as_str().cmp(key))
                            .is_err()
                        {
                            self.at(any).strip(v);
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(any) = node.any {
                    for v in items {
                        self.at(any).strip(v);
                    }
                }
            }
            _ => {}
        }
    }

    fn at(&self, id: usize) -> PlanNode<'p> {
        PlanNode {
            plan: self.plan,
            id,
        }
    }
}

/// Removes the `@redact` properties (and their `required` entries) from every object schema
/// of `schema`, `$defs` included: the state schema agents see in describe.
pub fn strip_schema(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let mut removed = Vec::new();
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                props.retain(|name, prop| {
                    let redact = description(prop)
                        .is_some_and(|d| parse_state_field_doc(d).unwrap_or(d.contains("@redact")));
                    if redact {
                        removed.push(name.clone());
                    }
                    !redact
                });
            }
            if !removed.is_empty() {
                if let Some(Value::Array(required)) = map.get_mut("required") {
                    required.retain(|r| r.as_str().is_none_or(|r| !removed.iter().any(|n| n == r)));
                }
            }
            for v in map.values_mut() {
                strip_schema(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_schema),
        _ => {}
    }
}

fn description(schema: &Value) -> Option<&str> {
    schema.get("description")?.as_str()
}

/// The schema as a graph before merging: `also` edges join nodes that describe the same
/// position (a `$ref` target, the members of a union).
struct RawGraph<'s> {
    root: &'s Value,
    nodes: Vec<RawNode>,
    refs: HashMap<&'s str, usize>,
    errors: Vec<RedactError>,
}

#[derive(Default)]
struct RawNode {
    fields: Vec<(String, Slot)>,
    any: Vec<usize>,
    also: Vec<usize>,
}

impl<'s> RawGraph<'s> {
    fn visit(&mut self, schema: &'s Value, pointer: &str) -> usize {
        let id = self.nodes.len();
        self.nodes.push(RawNode::default());
        let Some(map) = schema.as_object() else {
            return id;
        };
        let mut node = RawNode::default();
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            if let Some(target) = self.reference(reference) {
                node.also.push(target);
            }
        }
        for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
            if let Some(Value::Array(members)) = map.get(key) {
                for (i, m) in members.iter().enumerate() {
                    let member = self.visit(m, &format!("{pointer}/{key}/{i}"));
                    if key == "prefixItems" {
                        node.any.push(member);
                    } else {
                        node.also.push(member);
                    }
                }
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(sub @ Value::Object(_)) = map.get(key) {
                node.any.push(self.visit(sub, &format!("{pointer}/{key}")));
            }
        }
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            for (k, sub) in patterns {
                let at = format!("{pointer}/patternProperties/{}", escape(k));
                node.any.push(self.visit(sub, &at));
            }
        }
        if let Some(Value::Object(props)) = map.get("properties") {
            for (name, sub) in props {
                let at = format!("{pointer}/properties/{}", escape(name));
                let redact = match description(sub).map(parse_state_field_doc) {
                    Some(Ok(r)) => r,
                    Some(Err(errors)) => {
                        self.errors
                            .extend(errors.into_iter().map(|error| RedactError {
                                pointer: at.clone(),
                                error,
                            }));
                        false
                    }
                    None => false,
                };
                let slot = if redact {
                    Slot::Redact
                } else {
                    Slot::Node(self.visit(sub, &at))
                };
                node.fields.push((name.clone(), slot));
            }
        }
        self.nodes[id] = node;
        id
    }

    fn reference(&mut self, reference: &'s str) -> Option<usize> {
        if let Some(&id) = self.refs.get(reference) {
            return Some(id);
        }
        let pointer = reference.strip_prefix('#')?;
        let target = self.root.pointer(pointer)?;
        // Registered before the visit, so a recursive type refers back to its own node.
        let id = self.nodes.len();
        self.refs.insert(reference, id);
        let visited = self.visit(target, pointer);
        debug_assert_eq!(visited, id);
        Some(id)
    }

    /// The raw nodes reachable from `start` through `also` edges.
    fn closure(&self, start: impl IntoIterator<Item = usize>) -> BTreeSet<usize> {
        let mut set = BTreeSet::new();
        let mut stack: Vec<usize> = start.into_iter().collect();
        while let Some(n) = stack.pop() {
            if set.insert(n) {
                stack.extend(self.nodes[n].also.iter().copied());
            }
        }
        set
    }

    /// Merges the raw graph into plan nodes (one per set of raw nodes describing a position,
    /// like a subset construction) and drops the nodes with nothing redacted below.
    fn compile(&self, root: usize) -> RedactPlan {
        let mut sets: Vec<BTreeSet<usize>> = Vec::new();
        let mut index: HashMap<BTreeSet<usize>, usize> = HashMap::new();
        let mut merged: Vec<Merged> = Vec::new();
        let start = self.closure([root]);
        index.insert(start.clone(), 0);
        sets.push(start);
        let mut next = 0;
        while next < sets.len() {
            let set = sets[next].clone();
            next += 1;
            let mut intern = |s: BTreeSet<usize>| -> Option<usize> {
                if s.is_empty() {
                    return None;
                }
                Some(*index.entry(s.clone()).or_insert_with(|| {
                    sets.push(s);
                    sets.len() - 1
                }))
            };
            let any_raw: Vec<usize> = set
                .iter()
                .flat_map(|&n| self.nodes[n].any.iter().copied())
                .collect();
            let mut keys: BTreeSet<&str> = BTreeSet::new();
            for &n in &set {
                keys.extend(self.nodes[n].fields.iter().map(|(k, _)| k.as_str()));
            }
            let mut fields = Vec::new();
            for key in keys {
                let mut redact = false;
                let mut targets = Vec::new();
                for &n in &set {
                    let raw = &self.nodes[n];
                    match raw.fields.iter().find(|(k, _)| k == key) {
                        Some((_, Slot::Redact)) => redact = true,
                        Some((_, Slot::Node(t))) => targets.push(*t),
                        // A key a map member would hold goes through its wildcard.
                        None => targets.extend(raw.any.iter().copied()),
                    }
                }
                let slot = if redact {
                    MSlot::Redact
                } else {
                    match intern(self.closure(targets)) {
                        Some(id) => MSlot::Node(id),
                        None => continue,
                    }
                };
                fields.push((key.to_owned(), slot));
            }
            let any = intern(self.closure(any_raw));
            merged.push((fields, any));
        }
        // Which merged nodes have a redacted field below them (a fixpoint over the cycles).
        let mut live = vec![false; merged.len()];
        loop {
            let mut changed = false;
            for (id, (fields, any)) in merged.iter().enumerate() {
                if live[id] {
                    continue;
                }
                let reaches = fields.iter().any(|(_, s)| match s {
                    MSlot::Redact => true,
                    MSlot::Node(t) => live[*t],
                }) || any.is_some_and(|a| live[a]);
                if reaches {
                    live[id] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if !live[0] {
            return RedactPlan::default();
        }
        let mut renumber = vec![usize::MAX; merged.len()];
        let mut count = 0;
        for (id, l) in live.iter().enumerate() {
            if *l {
                renumber[id] = count;
                count += 1;
            }
        }
        let nodes = merged
            .into_iter()
            .enumerate()
            .filter(|(id, _)| live[*id])
            .map(|(_, (fields, any))| Node {
                fields: fields
                    .into_iter()
                    .filter_map(|(k, s)| match s {
                        MSlot::Redact => Some((k, Slot::Redact)),
                        MSlot::Node(t) if live[t] => Some((k, Slot::Node(renumber[t]))),
                        MSlot::Node(_) => None,
                    })
                    .collect(),
                any: any.filter(|a| live[*a]).map(|a| renumber[a]),
            })
            .collect();
        RedactPlan {
            nodes,
            root: Some(0),
        }
    }
}

/// A merged node before pruning: its fields and its wildcard.
type Merged = (Vec<(String, MSlot)>, Option<usize>);

#[derive(Clone, Copy)]
enum MSlot {
    Redact,
    Node(usize),
}

/// RFC 6901 escape of one pointer segment.
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_maps_arrays_and_recursion() {
        let schema = json!({
            "type": "object",
            "properties": {
                "apiKey": {"type": "string", "description": "The key.\n@redact"},
                "todos": {"type": "array", "items": {"$ref": "#/$defs/Todo"}},
                "byName": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Todo"}},
                "count": {"type": "integer"}
            },
            "$defs": {
                "Todo": {"type": "object", "properties": {
                    "text": {"type": "string"},
                    "secret": {"type": "string", "description": "@redact"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Todo"}}
                }}
            }
        });
        let plan = RedactPlan::from_schema(&schema).unwrap();
        let root = plan.root().unwrap();
        assert_eq!(root.field("apiKey"), Step::Redact);
        assert_eq!(root.field("count"), Step::Plain);
        let Step::Into(todos) = root.field("todos") else {
            panic!("todos leads somewhere")
        };
        let Step::Into(todo) = todos.item() else {
            panic!("items lead somewhere")
        };
        assert_eq!(todo.field("secret"), Step::Redact);
        assert_eq!(todo.field("text"), Step::Plain);
        let mut state = json!({
            "apiKey": "k", "count": 1,
            "todos": [{"text": "a", "secret": "s", "children": [{"text": "b", "secret": "t", "children": []}]}],
            "byName": {"x": {"text": "c", "secret": "u", "children": []}}
        });
        plan.strip(&mut state);
        assert_eq!(
            state,
            json!({
                "count": 1,
                "todos": [{"text": "a", "children": [{"text": "b", "children": []}]}],
                "byName": {"x": {"text": "c", "children": []}}
            })
        );
    }

    #[test]
    fn no_redact_is_an_empty_plan() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}});
        assert!(RedactPlan::from_schema(&schema).unwrap().is_empty());
    }

    #[test]
    fn near_miss_is_an_error_and_schema_is_stripped() {
        let schema = json!({"type": "object", "properties": {"a": {"description": "@redacted"}}});
        let errors = RedactPlan::from_schema(&schema).unwrap_err();
        assert_eq!(errors[0].pointer, "/properties/a");
        assert_eq!(errors[0].error.kind.code(), "E4");
        let mut schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string", "description": "@redact"}, "b": {"type": "integer"}},
            "required": ["a", "b"]
        });
        strip_schema(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]})
        );
    }
}
