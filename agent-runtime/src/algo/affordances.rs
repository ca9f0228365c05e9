//! `list_actions` (`docs/semantics.md` §4): which messages an agent is offered in the current state.
//!
//! [`Affordances`] is built once from the message model; it keeps, per variant, an action
//! template with everything that does not depend on the state (intent, dispatch mode,
//! warning, examples, emits, field hints) and the synthesized `payloadHint`
//! (`docs/annotations.md` §7.6). [`Affordances::list`] then runs the four passes:
//!
//! 1. **bindings**: by default ([`Bindings::all`]) every variant not human-only, in schema
//!    order (the `@agentOnly` ones only when there is no explicit hook: with one, passes 2 and
//!    4 decide), `source: "always-affordable"` for `@alwaysAffordable` ones, else `"schema"`,
//!    the synthesized hint; explicit ([`Bindings::only`]), in order, first occurrence of each:
//!    names that are variants and not human-only, `source: "binding"`, `payloadHint: null`;
//! 2. the **affordances hook** (when it returned a list): each message not human-only, in order,
//!    duplicates kept; `source: "always-affordable"`, `payloadHint` = the message without
//!    `type` (null when nothing is left);
//! 3. **`@alwaysAffordable`** variants not seen yet and not human-only, in schema order;
//!    `source: "always-affordable"`, the synthesized hint;
//! 4. **`@agentOnly`** variants not seen yet (and, when the hook is explicit, among the
//!    variants it returned), in schema order; `source: "schema"`, the synthesized hint.
//!
//! Every emitted action with a non-empty `routeGate` has it evaluated against the (redacted)
//! state, fail-closed; a closed gate adds `available: false` and `unavailableReason` (the
//! annotation's reason or `not available in the current state`). Actions are never dropped for
//! a closed gate.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use tea_agent_schema::protocol::{Action, ActionList, ActionSource};
use tea_agent_schema::synth::{field_hints, payload_hint};
use tea_agent_schema::{Bindings, DispatchMode, MsgModel};

use crate::algo::cel_eval::PredicateCache;
use crate::algo::route_gates::{GateSet, GateValues, Verdict};

/// The `unavailableReason` of a closed route gate without a reason of its own.
pub(crate) const DEFAULT_UNAVAILABLE_REASON: &str = "not available in the current state";

/// The `unavailableReason` of an action whose route gate could not be evaluated (instead of
/// the app's own reason, which would not be true).
pub(crate) const GATE_FAILED_REASON: &str =
    "its route gate could not be evaluated on the current state (an error in the app, \
     reported to its operator), so it stays closed";

/// What `list_actions` needs to know about one variant.
#[derive(Debug)]
struct Entry {
    /// The action with `source: binding`, `payloadHint: null` and no gate keys.
    template: Action,
    /// `synthesize(variant)`.
    synthesized: Value,
    mode: DispatchMode,
    always_affordable: bool,
    /// The route gate (its number in the [`GateSet`]) and its reason.
    gate: Option<(usize, Option<String>)>,
}

/// The affordance lister of one app (`docs/semantics.md` §4).
pub struct Affordances {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    gates: Arc<GateSet>,
}

impl fmt::Debug for Affordances {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Affordances")
            .field("variants", &self.entries.len())
            .finish_non_exhaustive()
    }
}

/// One entry of a `list_actions` answer, kept without what its variant's template holds
/// (a session keeps the list of its current snapshot in this form; [`Affordances::render`]
/// makes the actions).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    entry: u32,
    source: ActionSource,
    hint: Hint,
    /// The route gate's verdict (`Open` when there is none).
    gate: Verdict,
}

/// A session's `list_actions` on one snapshot: the compact list and its JSON text, made by
/// the snapshot's first reader.
#[derive(Debug)]
pub(crate) struct Listing {
    /// The compact list.
    pub(crate) listed: Box<[Listed]>,
    /// The actions, serialized.
    pub(crate) text: ActionList,
}

/// The `payloadHint` of a listed action.
#[derive(Debug, Clone, PartialEq)]
enum Hint {
    Null,
    /// The variant's synthesized hint.
    Synthesized,
    /// A message of the affordances hook without its `type` (boxed: rare, and large).
    Given(Box<Value>),
}

/// Whether a list made by [`Affordances::pick`] offers a variant now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Listed, its route gate open (or it has none).
    Open,
    /// Listed, its route gate closed.
    GateClosed,
    /// Listed, its route gate could not be evaluated (fail-closed).
    GateFailed,
    /// Not listed in this state.
    NotListed,
}

/// One action chosen by the passes, before the gate is applied.
struct Pick {
    entry: usize,
    source: ActionSource,
    hint: Hint,
}

impl Affordances {
    /// Precomputes every variant's template, synthesized `payloadHint` and field hints, and
    /// compiles the route gates into `predicates`.
    pub fn new(model: &MsgModel, predicates: Arc<PredicateCache>) -> Self {
        let mut entries = Vec::with_capacity(model.variants.len());
        let mut index = HashMap::with_capacity(model.variants.len());
        let mut sources: Vec<&str> = Vec::new();
        for variant in &model.variants {
            let a = &variant.annotations;
            let hints = field_hints(variant)
                .into_iter()
                .map(|h| {
                    let mut hint = Map::new();
                    hint.insert("path".into(), Value::String(h.path));
                    hint.insert("hint".into(), Value::String(h.hint));
                    Value::Object(hint)
                })
                .collect();
            let template = Action {
                variant: variant.wire_name.clone(),
                intent: a.intent.clone(),
                requires_confirm: a.requires_confirm,
                dispatch_mode: match a.dispatch_mode {
                    DispatchMode::AgentOnly => DispatchMode::AgentOnly,
                    _ => DispatchMode::Shared,
                },
                source: ActionSource::Binding,
                selector_hint: None,
                payload_hint: None,
                available: None,
                unavailable_reason: None,
                warning: a.warning.clone(),
                examples: a.examples.clone(),
                emits: a.emits.clone(),
                field_hints: hints,
            };
            let gate = a
                .route_gate
                .as_deref()
                .filter(|g| !g.is_empty())
                .map(|src| {
                    let id = sources.iter().position(|s| *s == src).unwrap_or_else(|| {
                        sources.push(src);
                        sources.len() - 1
                    });
                    (id, a.route_gate_reason.clone())
                });
            index
                .entry(variant.wire_name.clone())
                .or_insert(entries.len());
            entries.push(Entry {
                template,
                synthesized: payload_hint(variant),
                mode: a.dispatch_mode,
                always_affordable: a.always_affordable,
                gate,
            });
        }
        let gates = Arc::new(GateSet::new(sources, &predicates));
        Affordances {
            entries,
            index,
            gates,
        }
    }

    /// The distinct route gates, numbered as [`Self::list_with`] asks for them.
    pub(crate) fn gates(&self) -> &Arc<GateSet> {
        &self.gates
    }

    /// `list_actions`: `bindings` from the app's `bindings` hook (as wire names), `hook` the
    /// JSON of the messages the `affordances` hook returned (`None` when it returned `None`),
    /// `state` the redacted JSON state the route gates see.
    pub fn list(
        &self,
        bindings: &Bindings<&str>,
        hook: Option<&[Value]>,
        state: &Value,
    ) -> Vec<Action> {
        let values = GateValues::unknown(&self.gates);
        let state = crate::algo::tree::Node::from_value(state.clone());
        self.list_with(bindings, hook, &mut |id| {
            values.verdict(&self.gates, id, &state)
        })
    }

    /// [`Self::list`] with the route gates answered by `gate` (a gate's number in
    /// [`Self::gates`] → whether it passes).
    pub(crate) fn list_with(
        &self,
        bindings: &Bindings<&str>,
        hook: Option<&[Value]>,
        gate: &mut dyn FnMut(usize) -> Verdict,
    ) -> Vec<Action> {
        self.render(&self.pick(bindings, hook, gate))
    }

    /// The actions of a list made by [`Self::pick`].
    pub(crate) fn render(&self, listed: &[Listed]) -> Vec<Action> {
        listed
            .iter()
            .map(|l| {
                let entry = &self.entries[l.entry as usize];
                let mut action = entry.template.clone();
                action.source = l.source;
                action.payload_hint = match &l.hint {
                    Hint::Null => None,
                    Hint::Synthesized => Some(entry.synthesized.clone()),
                    Hint::Given(v) => Some((**v).clone()),
                };
                if l.gate == Verdict::Failed {
                    action.available = Some(false);
                    action.unavailable_reason = Some(GATE_FAILED_REASON.to_owned());
                } else if !l.gate.is_open() {
                    let reason = entry.gate.as_ref().and_then(|(_, r)| r.clone());
                    action.available = Some(false);
                    action.unavailable_reason =
                        Some(reason.unwrap_or_else(|| DEFAULT_UNAVAILABLE_REASON.to_owned()));
                }
                action
            })
            .collect()
    }

    /// The listing of `listed`: its text shared with `previous` when both lists are the same
    /// (most commits leave the actions as they were), else rendered and serialized once.
    pub(crate) fn listing(&self, listed: Vec<Listed>, previous: Option<&Listing>) -> Listing {
        let text = match previous {
            Some(previous) if *previous.listed == *listed => previous.text.clone(),
            _ => ActionList::new(&self.render(&listed)),
        };
        Listing {
            listed: listed.into_boxed_slice(),
            text,
        }
    }

    /// Whether `listed` offers the variant `wire_name`.
    pub(crate) fn offer(&self, listed: &[Listed], wire_name: &str) -> Offer {
        let Some(&i) = self.index.get(wire_name) else {
            return Offer::NotListed;
        };
        match listed.iter().find(|l| l.entry as usize == i) {
            Some(l) => match l.gate {
                Verdict::Open => Offer::Open,
                Verdict::Closed => Offer::GateClosed,
                Verdict::Failed => Offer::GateFailed,
            },
            None => Offer::NotListed,
        }
    }

    /// The four passes and the route gates (see [`Self::list_with`]), in the compact form.
    pub(crate) fn pick(
        &self,
        bindings: &Bindings<&str>,
        hook: Option<&[Value]>,
        gate: &mut dyn FnMut(usize) -> Verdict,
    ) -> Vec<Listed> {
        let n = self.entries.len();
        let mut seen = vec![false; n];
        let mut picks: Vec<Pick> = Vec::new();

        // 1. Bindings: every variant an agent may send, or the app's list.
        match bindings.kinds() {
            None => {
                for (i, entry) in self.entries.iter().enumerate() {
                    let agent_only = entry.mode == DispatchMode::AgentOnly;
                    if entry.mode == DispatchMode::HumanOnly || (agent_only && hook.is_some()) {
                        continue;
                    }
                    seen[i] = true;
                    picks.push(Pick {
                        entry: i,
                        source: if entry.always_affordable {
                            ActionSource::AlwaysAffordable
                        } else {
                            ActionSource::Schema
                        },
                        hint: Hint::Synthesized,
                    });
                }
            }
            Some(names) => {
                for name in names {
                    let Some(&i) = self.index.get(*name) else {
                        continue;
                    };
                    if seen[i] || self.entries[i].mode == DispatchMode::HumanOnly {
                        continue;
                    }
                    seen[i] = true;
                    picks.push(Pick {
                        entry: i,
                        source: ActionSource::Binding,
                        hint: Hint::Null,
                    });
                }
            }
        }

        // 2. The affordances hook.
        let mut returned = vec![false; n];
        for msg in hook.unwrap_or_default() {
            let Some(map) = msg.as_object() else {
                continue;
            };
            let Some(&i) = map
                .get("type")
                .and_then(Value::as_str)
                .and_then(|t| self.index.get(t))
            else {
                continue;
            };
            if self.entries[i].mode == DispatchMode::HumanOnly {
                continue;
            }
            let payload: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| k.as_str() != "type")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            seen[i] = true;
            returned[i] = true;
            picks.push(Pick {
                entry: i,
                source: ActionSource::AlwaysAffordable,
                hint: if payload.is_empty() {
                    Hint::Null
                } else {
                    Hint::Given(Box::new(Value::Object(payload)))
                },
            });
        }

        // 3. `@alwaysAffordable`.
        for (i, entry) in self.entries.iter().enumerate() {
            if seen[i] || !entry.always_affordable || entry.mode == DispatchMode::HumanOnly {
                continue;
            }
            seen[i] = true;
            picks.push(Pick {
                entry: i,
                source: ActionSource::AlwaysAffordable,
                hint: Hint::Synthesized,
            });
        }

        // 4. `@agentOnly`.
        for (i, entry) in self.entries.iter().enumerate() {
            if seen[i] || entry.mode != DispatchMode::AgentOnly {
                continue;
            }
            if hook.is_some() && !returned[i] {
                continue;
            }
            picks.push(Pick {
                entry: i,
                source: ActionSource::Schema,
                hint: Hint::Synthesized,
            });
        }

        picks
            .into_iter()
            .map(|pick| Listed {
                entry: pick.entry as u32,
                source: pick.source,
                hint: pick.hint,
                gate: self.entries[pick.entry]
                    .gate
                    .as_ref()
                    .map_or(Verdict::Open, |(id, _)| gate(*id)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{json, Value};
    use tea_agent_schema::{Bindings, MsgModel};

    use super::Affordances;
    use crate::algo::cel_eval::PredicateCache;
    use crate::AgentMsg;

    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum Msg {
        /// @intent("Add a note")
        Add { text: String },
        /// @humanOnly
        Import,
        /// @agentOnly
        Summarize,
        /// @alwaysAffordable
        Undo,
        #[serde(rename = "Notes/Clear")]
        Clear,
        #[serde(skip)]
        #[allow(dead_code)]
        Tick,
    }

    fn lister() -> Affordances {
        let model = MsgModel::build::<Msg>().expect("model");
        Affordances::new(&model, std::sync::Arc::new(PredicateCache::new()))
    }

    /// `(variant, source, payloadHint)` of each action.
    fn listed(bindings: &Bindings<&str>, hook: Option<&[Value]>) -> Vec<(String, Value, Value)> {
        lister()
            .list(bindings, hook, &json!({}))
            .into_iter()
            .map(|a| {
                let source = serde_json::to_value(a.source).unwrap();
                (a.variant, source, a.payload_hint.unwrap_or(Value::Null))
            })
            .collect()
    }

    fn row(variant: &str, source: &str, hint: Value) -> (String, Value, Value) {
        (variant.to_owned(), json!(source), hint)
    }

    #[test]
    fn the_default_lists_every_variant_an_agent_may_send_in_declaration_order() {
        assert_eq!(
            listed(&Bindings::all(), None),
            [
                row("add", "schema", json!({"type": "add", "text": ""})),
                row("summarize", "schema", json!({"type": "summarize"})),
                row("undo", "always-affordable", json!({"type": "undo"})),
                row("Notes/Clear", "schema", json!({"type": "Notes/Clear"})),
            ]
        );
    }

    #[test]
    fn with_an_explicit_hook_the_default_leaves_agent_only_variants_to_the_hook() {
        assert_eq!(
            listed(&Bindings::all(), Some(&[])),
            [
                row("add", "schema", json!({"type": "add", "text": ""})),
                row("undo", "always-affordable", json!({"type": "undo"})),
                row("Notes/Clear", "schema", json!({"type": "Notes/Clear"})),
            ]
        );
        let hook = [
            json!({"type": "summarize"}),
            json!({"type": "add", "text": "x"}),
        ];
        let names: Vec<String> = listed(&Bindings::all(), Some(&hook))
            .into_iter()
            .map(|(variant, source, _)| format!("{variant}:{}", source.as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                "add:schema",
                "undo:always-affordable",
                "Notes/Clear:schema",
                "summarize:always-affordable",
                "add:always-affordable",
            ]
        );
    }

    #[test]
    fn explicit_bindings_narrow_the_list_and_keep_the_reference_form() {
        let bound = Bindings::only(["Notes/Clear", "import", "add", "Notes/Clear"]);
        assert_eq!(
            listed(&bound, None),
            [
                row("Notes/Clear", "binding", Value::Null),
                row("add", "binding", Value::Null),
                row("undo", "always-affordable", json!({"type": "undo"})),
                row("summarize", "schema", json!({"type": "summarize"})),
            ]
        );
        assert_eq!(
            listed(&Bindings::none(), None),
            [
                row("undo", "always-affordable", json!({"type": "undo"})),
                row("summarize", "schema", json!({"type": "summarize"})),
            ]
        );
    }

    #[test]
    fn typed_bindings_map_to_wire_names() {
        use tea_agent_schema::VariantKind as _;
        let typed = Bindings::only([MsgKind::Clear, MsgKind::Import, MsgKind::Tick]);
        let names = typed.map(|k| k.wire_name());
        assert_eq!(names.kinds(), Some(&["Notes/Clear", "import", "tick"][..]));
        // A bound human-only or skipped variant stays hidden.
        let variants: Vec<String> = listed(&names, None).into_iter().map(|r| r.0).collect();
        assert_eq!(variants, ["Notes/Clear", "undo", "summarize"]);
    }
}
