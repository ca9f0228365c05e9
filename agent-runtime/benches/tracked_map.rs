//! A keyed state at the session level (`cargo bench -p tea-agent-runtime --bench tracked_map`):
//! `send_message` setting one entry's quantity, with `waitFor: "idle"` and the answer
//! serialized, in a map of 10, 1k, 10k and 50k entries kept in a `TrackedMap` (walked only in
//! the changed chunk) and, as the baseline, in a plain `BTreeMap` (walked whole).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tea_agent_runtime::app::EffectContext;
use tea_agent_runtime::app::{App, EffectError};
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::Session;
use tea_agent_runtime::{AgentMsg, Host, TrackedMap};
use tea_agent_schema::protocol::WaitFor;

/// One item.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    /// How many.
    qty: u32,
    /// What it is.
    name: String,
}

/// The maps the bench compares.
trait Items: Clone + Serialize + for<'de> Deserialize<'de> + JsonSchema + Send + Sync {
    fn with(n: usize) -> Self;
    fn set(&mut self, sku: String, qty: u32);
}

impl Items for TrackedMap<String, Item> {
    fn with(n: usize) -> Self {
        (0..n).map(|i| (format!("s{i}"), item(i))).collect()
    }
    fn set(&mut self, sku: String, qty: u32) {
        match self.get_mut(&sku) {
            Some(i) => i.qty = qty,
            None => {
                self.insert(sku, item(0));
            }
        }
    }
}

impl Items for BTreeMap<String, Item> {
    fn with(n: usize) -> Self {
        (0..n).map(|i| (format!("s{i}"), item(i))).collect()
    }
    fn set(&mut self, sku: String, qty: u32) {
        self.entry(sku).or_insert_with(|| item(0)).qty = qty;
    }
}

fn item(i: usize) -> Item {
    Item {
        qty: 0,
        name: format!("item number {i}"),
    }
}

/// Stock by SKU.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Stock<M> {
    /// Items by SKU.
    items: M,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("set an item's quantity")
    Set {
        /// The SKU.
        sku: String,
        /// How many.
        qty: u32,
    },
}

struct StockApp<M> {
    size: usize,
    _map: std::marker::PhantomData<fn() -> M>,
}

impl<M: Items + 'static> App for StockApp<M> {
    type State = Stock<M>;
    type Msg = Msg;
    type Effect = ();
    fn name(&self) -> &str {
        "stock"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    fn init(&self) -> (Stock<M>, Vec<()>) {
        (
            Stock {
                items: M::with(self.size),
            },
            Vec::new(),
        )
    }
    fn update(&self, state: &mut Stock<M>, msg: Msg) -> Vec<()> {
        let Msg::Set { sku, qty } = msg;
        state.items.set(sku, qty);
        Vec::new()
    }
    fn run_effect(
        &self,
        _: (),
        _: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        std::future::ready(Ok(()))
    }
}

async fn set<A: App>(session: &Session<A>, qty: u32) -> usize {
    let msg = json!({"type": "set", "sku": "s1", "qty": qty});
    let mut opts = DispatchOptions::default();
    opts.wait_for = WaitFor::Idle;
    let answer = session
        .send_message(&msg, None, opts, None)
        .await
        .expect("dispatch");
    serde_json::to_string(&answer).expect("answer").len()
}

fn bench_map<M: Items + 'static>(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    label: &str,
    sizes: &[usize],
) {
    let mut group = c.benchmark_group("set");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for &n in sizes {
        let host = Host::new(StockApp::<M> {
            size: n,
            _map: std::marker::PhantomData,
        })
        .expect("host");
        let session = host.create_session(None).expect("session");
        let mut qty = 0;
        group.bench_with_input(BenchmarkId::new(label, n), &n, |b, _| {
            b.iter(|| {
                qty = (qty + 1) % 7;
                rt.block_on(set(&session, qty))
            })
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    bench_map::<TrackedMap<String, Item>>(c, &rt, "tracked_map", &[10, 1_000, 10_000, 50_000]);
    bench_map::<BTreeMap<String, Item>>(c, &rt, "btree_map", &[10, 10_000, 50_000]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
