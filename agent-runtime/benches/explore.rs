//! `testing::explore` on the todo example (feature `explore`): steps per second of a generated
//! agent through the gate, every property checked at every step (goal: 5,000 steps/s in
//! release on the project's 2-core machine). One iteration is a whole exploration of 8 cases
//! of up to 64 steps (its servers, runtimes and sessions included), on one worker and on two
//! (`Explorer::workers`); the throughput is its steps, counted by a first run (the same seed
//! makes the same runs, whatever the workers).
//!
//! `cargo bench -p tea-agent-runtime --features explore --bench explore`

use std::hint::black_box;

use agent_examples::todo::TodoApp;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tea_agent_runtime::testing::explore;

fn run(workers: usize) -> u64 {
    let report = explore(TodoApp::default())
        .cases(8)
        .steps(64)
        .seed(1)
        .workers(workers)
        .run()
        .expect("the exploration runs");
    report.assert_passed();
    report.steps_run
}

fn bench(c: &mut Criterion) {
    let steps = run(1);
    let mut group = c.benchmark_group("explore");
    group.throughput(Throughput::Elements(steps));
    group.sample_size(10);
    for workers in [1, 2] {
        group.bench_function(format!("todo/{workers}-workers"), |b| {
            b.iter(|| black_box(run(workers)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
