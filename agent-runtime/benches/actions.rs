//! `list_actions` benchmarks (`docs/semantics.md` §4): a schema of 50 variants, 10 of them with a
//! route gate.
//!
//! Variant `i` has two fields (a string and a number); every fifth is `@alwaysAffordable`, every
//! fifth (offset 1) `@agentOnly`, every tenth (offset 2) human-only, and variants 0, 5, 10, …,
//! 45 are gated on the state. Each call passes 20 bindings and a hook returning 5 messages.
//!
//! - `list/small_state`: a state of a few keys;
//! - `list/state_1k`: a state holding 1,000 items (the gates bind the whole state).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use tea_agent_runtime::affordances::Affordances;
use tea_agent_runtime::cel_eval::PredicateCache;
use tea_agent_schema::{Bindings, DispatchMode, MsgModel, StaticAnnotations, VariantDescriptor};

const VARIANTS: usize = 50;

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn model() -> MsgModel {
    let members: Vec<Value> = (0..VARIANTS)
        .map(|i| {
            json!({
                "type": "object",
                "properties": {
                    "type": {"const": format!("variant{i}")},
                    "title": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0}
                },
                "required": ["type", "title"]
            })
        })
        .collect();
    let schema = json!({ "oneOf": members });
    let descriptors: Vec<VariantDescriptor> = (0..VARIANTS)
        .map(|i| {
            let mut a = StaticAnnotations::DEFAULT;
            a.intent = Some(leak(format!("do thing {i}")));
            a.always_affordable = i % 5 == 0;
            a.dispatch_mode = match i % 10 {
                1 | 6 => DispatchMode::AgentOnly,
                2 => DispatchMode::HumanOnly,
                _ => DispatchMode::Shared,
            };
            if i % 5 == 0 {
                a.route_gate = Some(leak(format!("state.mode == 'edit' && state.level >= {i}")));
                a.route_gate_reason = Some("switch to edit mode first");
            }
            VariantDescriptor {
                wire_name: leak(format!("variant{i}")),
                annotations: a,
                fields: &[],
            }
        })
        .collect();
    MsgModel::from_schema(&schema, &descriptors).expect("bench model")
}

fn benches(c: &mut Criterion) {
    let lister = Affordances::new(&model(), Arc::new(PredicateCache::new()));
    let names: Vec<String> = (0..20).map(|i| format!("variant{}", i * 2)).collect();
    let bindings = Bindings::only(names.iter().map(String::as_str));
    let hook: Vec<Value> = (0..5)
        .map(|i| json!({"type": format!("variant{}", i * 7 + 1), "title": "t", "count": i}))
        .collect();
    let small = json!({"mode": "edit", "level": 20, "user": {"name": "ann"}});
    let items: Vec<Value> = (0..1000)
        .map(|i| json!({"id": format!("item-{i}"), "qty": i, "done": i % 2 == 0}))
        .collect();
    let large = json!({"mode": "view", "level": 20, "items": items});

    // Sanity: 25 actions with the hook (5 gates closed at level 20), 28 without.
    let closed = |actions: &[tea_agent_schema::protocol::Action]| {
        actions
            .iter()
            .filter(|a| a.available == Some(false))
            .count()
    };
    let listed = lister.list(&bindings, Some(&hook), &small);
    assert_eq!((listed.len(), closed(&listed)), (25, 5));
    let listed = lister.list(&bindings, None, &small);
    assert_eq!((listed.len(), closed(&listed)), (28, 5));

    let mut group = c.benchmark_group("list");
    group.bench_function("small_state", |b| {
        b.iter(|| {
            lister.list(
                black_box(&bindings),
                Some(black_box(&hook)),
                black_box(&small),
            )
        })
    });
    group.bench_function("state_1k", |b| {
        b.iter(|| {
            lister.list(
                black_box(&bindings),
                Some(black_box(&hook)),
                black_box(&large),
            )
        })
    });
    group.bench_function("no_hook", |b| {
        b.iter(|| lister.list(black_box(&bindings), None, black_box(&small)))
    });
    group.finish();
}

criterion_group!(actions_benches, benches);
criterion_main!(actions_benches);
