//! Evaluating a gate's program: on the state pruned to what the gate reads, or on one list
//! element for a list fold.

use std::collections::HashMap;

use cel::common::types::{CelList, CelMap, CelMapKey};
use cel::common::value::Val;
use cel::Context;
use serde_json::value::RawValue;
use serde_json::Value;

use super::shape::{Reads, Shape};
use super::table::Outcome;
use super::Verdict;
use crate::algo::cel_eval::{context_with, decide, json_to_val, CompiledPredicate, STATE_VAR};
use crate::algo::tree::Node;

/// Evaluates `compiled` on `state` (fail-closed): only the chains in `reads` are converted
/// for the interpreter, the rest of the state cannot be observed by the gate.
pub(super) fn full(compiled: &CompiledPredicate, reads: &Reads, state: &Node) -> Verdict {
    let value = match reads {
        Reads::Whole => state.to_value(),
        Reads::Chains(chains) => {
            let chains: Vec<&[String]> = chains.iter().map(Vec::as_slice).collect();
            pruned(state, &chains)
        }
    };
    Verdict::of(compiled.decide_with(STATE_VAR, || json_to_val(&value)))
}

/// `node` with, at each level, only the object fields a chain goes through; a value at the
/// end of a chain, or one that is not an object (reading a field of it fails the same way
/// either way), is taken whole.
fn pruned(node: &Node, chains: &[&[String]]) -> Value {
    let Node::Object(map) = node else {
        return node.to_value();
    };
    if chains.iter().any(|c| c.is_empty()) {
        return node.to_value();
    }
    let mut fields = serde_json::Map::new();
    for (i, chain) in chains.iter().enumerate() {
        let first = &chain[0];
        if chains[..i].iter().any(|c| &c[0] == first) {
            continue;
        }
        let Some((key, v)) = map.get_key_value(first.as_str()) else {
            continue;
        };
        let rest: Vec<&[String]> = chains
            .iter()
            .filter(|c| &c[0] == first)
            .map(|c| &c[1..])
            .collect();
        fields.insert(key.clone(), pruned(v, &rest));
    }
    Value::Object(fields)
}

/// What the predicate reads of a list element (`reads`: the chains of the macro's variable)
/// from the element's compact `text`: the fields a chain goes through, at each level, the
/// value at the end of a chain whole (as [`pruned`] does for a state). Fields that are not
/// read are skipped in the text, not parsed. Not an object (or not JSON): the value whole.
pub(super) fn picked(text: &str, reads: &Reads) -> Value {
    match reads {
        Reads::Whole => serde_json::from_str(text).unwrap_or(Value::Null),
        Reads::Chains(chains) => {
            let chains: Vec<&[String]> = chains.iter().map(Vec::as_slice).collect();
            pick(text, &chains)
        }
    }
}

fn pick(text: &str, chains: &[&[String]]) -> Value {
    let whole = || serde_json::from_str(text).unwrap_or(Value::Null);
    if chains.iter().any(|c| c.is_empty()) {
        return whole();
    }
    let mut firsts: Vec<&str> = Vec::new();
    for c in chains {
        if !firsts.contains(&c[0].as_str()) {
            firsts.push(&c[0]);
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let Ok(found) = serde::de::DeserializeSeed::deserialize(Fields(&firsts), &mut de) else {
        return whole();
    };
    let mut fields = serde_json::Map::new();
    for (k, raw) in found {
        let rest: Vec<&[String]> = chains
            .iter()
            .filter(|c| c[0] == firsts[k])
            .map(|c| &c[1..])
            .collect();
        fields.insert(firsts[k].to_string(), pick(raw.get(), &rest));
    }
    Value::Object(fields)
}

/// The members of a JSON object named in `.0` (their index there, their text), the others
/// skipped; an error for anything but an object.
struct Fields<'w>(&'w [&'w str]);

impl<'de> serde::de::DeserializeSeed<'de> for Fields<'_> {
    type Value = Vec<(usize, &'de RawValue)>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Fields<'_> {
    type Value = Vec<(usize, &'de RawValue)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut found = Vec::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            match key {
                Some(k) if !found.iter().any(|(f, _)| *f == k) => {
                    found.push((k, map.next_value::<&'de RawValue>()?));
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// An object's key: its index among the wanted ones, if it is one (compared unescaped).
struct Key<'w>(&'w [&'w str]);

impl<'de> serde::de::DeserializeSeed<'de> for Key<'_> {
    type Value = Option<usize>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for Key<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|w| *w == key))
    }
}

/// Evaluates a list fold's predicate on single elements: the gate's program runs on a state
/// whose list holds just that element, so its result is the predicate's outcome.
pub(super) struct Element<'v> {
    compiled: &'v CompiledPredicate,
    shape: &'v Shape,
    context: Option<Context<'v, 'v>>,
}

impl<'v> Element<'v> {
    pub(super) fn new(compiled: &'v CompiledPredicate, shape: &'v Shape) -> Self {
        Element {
            compiled,
            shape,
            context: None,
        }
    }

    /// The predicate's outcome on `item`.
    pub(super) fn outcome(&mut self, item: &'v Value) -> Outcome {
        let mut state: Box<dyn Val + 'v> = Box::new(CelList::from(vec![json_to_val(item)]));
        for field in self.shape.path.iter().rev() {
            state = Box::new(CelMap::from(HashMap::from([(
                CelMapKey::from(field.as_str()),
                state,
            )])));
        }
        let result = match &mut self.context {
            Some(context) => {
                context.add_variable_as_val(STATE_VAR, state);
                decide(self.compiled.program(), context)
            }
            None => {
                let context = self.context.insert(context_with(STATE_VAR, state));
                decide(self.compiled.program(), context)
            }
        };
        match result {
            // The macro on one element gives the predicate's value (negated by a `!`).
            Some(b) if b != self.shape.negated => Outcome::True,
            Some(_) => Outcome::False,
            None => Outcome::Other,
        }
    }
}
