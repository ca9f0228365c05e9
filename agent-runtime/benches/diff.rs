//! State diff benchmarks: ours against `json_patch::diff` on the same inputs.
//!
//! - `list_10k`: a 10,000-item list state with one item changed;
//! - `doc_1mb`: a ~1 MB nested document with a few scattered changes.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use tea_agent_runtime::diff::diff;

fn list_state(n: usize) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("item-{i}"),
                "title": format!("Item number {i}"),
                "done": i % 3 == 0,
                "qty": i % 17,
                "price": (i as f64) * 0.25,
                "tags": ["alpha", "beta"],
            })
        })
        .collect();
    json!({ "filter": "all", "items": items, "selected": null })
}

fn document(users: usize) -> Value {
    let users: serde_json::Map<String, Value> = (0..users)
        .map(|i| {
            let user = json!({
                "name": format!("User {i}"),
                "email": format!("user{i}@example.com"),
                "profile": {
                    "bio": "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
                    "age": 20 + i % 50,
                    "location": {"city": "Springfield", "zip": format!("{:05}", i)},
                },
                "settings": {"theme": "dark", "notifications": {"email": true, "push": false}},
                "history": (0..6).map(|k| json!({"at": 1_700_000_000 + k, "event": "login"})).collect::<Vec<_>>(),
            });
            (format!("u{i}"), user)
        })
        .collect();
    json!({ "version": 1, "users": users, "meta": {"generated": "now", "count": 0} })
}

fn bench_pair(c: &mut Criterion, name: &str, prev: &Value, next: &Value) {
    let ours = diff(prev, next);
    let theirs = json_patch::diff(prev, next);
    println!(
        "{name}: {} bytes, ours {} ops, json_patch {} ops",
        serde_json::to_string(prev).map(|s| s.len()).unwrap_or(0),
        ours.len(),
        theirs.0.len()
    );
    let mut group = c.benchmark_group(name);
    group.bench_function("ours", |b| {
        b.iter(|| diff(black_box(prev), black_box(next)))
    });
    group.bench_function("json_patch", |b| {
        b.iter(|| json_patch::diff(black_box(prev), black_box(next)))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let prev = list_state(10_000);
    let mut next = prev.clone();
    next["items"][5_000]["done"] = json!(true);
    bench_pair(c, "list_10k_one_change", &prev, &next);

    let prev = document(2_100);
    let mut next = prev.clone();
    next["version"] = json!(2);
    next["users"]["u17"]["profile"]["age"] = json!(99);
    next["users"]["u900"]["settings"]["theme"] = json!("light");
    if let Some(history) = next["users"]["u1200"]["history"].as_array_mut() {
        history.pop();
    }
    if let Some(users) = next["users"].as_object_mut() {
        users.insert("u-new".into(), json!({"name": "New"}));
    }
    bench_pair(c, "doc_1mb_few_changes", &prev, &next);
}

criterion_group!(diff_benches, benches);
criterion_main!(diff_benches);
