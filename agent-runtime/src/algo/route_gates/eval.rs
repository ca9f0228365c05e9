//! Evaluating a gate's program: on the state pruned to what the gate reads, or on one list
//! element for a list fold.

use std::collections::HashMap;

use cel::common::types::{CelList, CelMap, CelMapKey};
use cel::common::value::Val;
use cel::Context;
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
