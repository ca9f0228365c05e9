//! Payload validation benchmarks (`docs/semantics.md` §2).
//!
//! The typical message is a variant with six fields: a string, a constrained integer, a unit
//! enum, a nested struct, a number with `@validates` and an optional string.
//!
//! - `typical/lenient`, `typical/strict`: a valid message;
//! - `typical/invalid`: the same message with four errors (enum, constraint, nested type,
//!   predicate);
//! - `items_1k`: a list of 1,000 nested objects.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_derive::AgentMsg;
use tea_agent_runtime::cel_eval::PredicateCache;
use tea_agent_runtime::config::DispatchPolicy;
use tea_agent_runtime::validate::Validator;
use tea_agent_schema::MsgModel;

#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Draft,
    Active,
    Archived,
}

#[derive(JsonSchema, Serialize, Deserialize)]
struct Address {
    street: String,
    city: String,
    zip: String,
}

#[derive(JsonSchema, Serialize, Deserialize)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    Inc,
    Dec,
    UpdateItem {
        id: String,
        #[schemars(range(min = 1, max = 1000))]
        qty: u32,
        status: Status,
        address: Address,
        /// @validates("v >= 0 && v <= 100")
        weight: f64,
        note: Option<String>,
    },
    SetLines {
        lines: Vec<Line>,
    },
}

fn validator() -> Validator {
    let model = MsgModel::build::<Msg>().expect("bench model");
    Validator::new(&model, Arc::new(PredicateCache::new())).expect("bench validator")
}

fn typical() -> Value {
    json!({
        "type": "updateItem",
        "id": "item-42",
        "qty": 12,
        "status": "active",
        "address": {"street": "1 Main St", "city": "Springfield", "zip": "12345"},
        "weight": 42.5,
        "note": null
    })
}

fn invalid() -> Value {
    json!({
        "type": "updateItem",
        "id": "item-42",
        "qty": 0,
        "status": "deleted",
        "address": {"street": "1 Main St", "city": 7, "zip": "12345"},
        "weight": 150,
    })
}

fn benches(c: &mut Criterion) {
    let v = validator();
    let msg = typical();
    assert!(v.validate(&msg, DispatchPolicy::Strict).is_ok());
    let bad = invalid();
    assert_eq!(v.validate(&bad, DispatchPolicy::Lenient).errors.len(), 4);
    let lines: Vec<Value> = (0..1000)
        .map(|i| json!({"sku": format!("sku-{i}"), "qty": i}))
        .collect();
    let big = json!({"type": "setLines", "lines": lines});
    assert!(v.validate(&big, DispatchPolicy::Strict).is_ok());

    let mut group = c.benchmark_group("typical");
    group.bench_function("lenient", |b| {
        b.iter(|| v.validate(black_box(&msg), DispatchPolicy::Lenient))
    });
    group.bench_function("strict", |b| {
        b.iter(|| v.validate(black_box(&msg), DispatchPolicy::Strict))
    });
    group.bench_function("invalid", |b| {
        b.iter(|| v.validate(black_box(&bad), DispatchPolicy::Lenient))
    });
    group.finish();
    c.bench_function("items_1k", |b| {
        b.iter(|| v.validate(black_box(&big), DispatchPolicy::Strict))
    });
}

criterion_group!(validate_benches, benches);
criterion_main!(validate_benches);
