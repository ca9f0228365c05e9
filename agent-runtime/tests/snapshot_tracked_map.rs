//! Through the public API, on a live session of an app whose state keeps a `TrackedMap` (with
//! a `@redact`ed field in its values): after random messages, every published snapshot is the
//! full serialization of the typed state without the redacted field, and its patch is exactly
//! the diff from the snapshot before.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_runtime::app::EffectContext;
use tea_agent_runtime::app::{App, EffectError};
use tea_agent_runtime::diff::diff;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::{AgentMsg, Host, TrackedMap};
use tea_agent_schema::protocol::WaitFor;

/// Stock by SKU.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Stock {
    /// Items by SKU, in the order they were added.
    items: TrackedMap<String, Item>,
}

/// One item.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    /// How many.
    qty: u32,
    /// The supplier's price.
    /// @redact
    cost: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("set an item's quantity, adding it when missing")
    Set {
        /// The SKU.
        sku: String,
        /// How many.
        qty: u32,
    },
    /// @intent("remove an item")
    Remove {
        /// The SKU.
        sku: String,
    },
    /// @intent("add one to every item")
    BumpAll,
}

struct StockApp;

impl App for StockApp {
    type State = Stock;
    type Msg = Msg;
    type Effect = ();
    fn name(&self) -> &str {
        "stock"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    fn init(&self) -> (Stock, Vec<()>) {
        let items = (0..100)
            .map(|i| {
                let item = Item {
                    qty: i,
                    cost: "SECRET".into(),
                };
                (format!("s{i}"), item)
            })
            .collect();
        (Stock { items }, Vec::new())
    }
    fn update(&self, state: &mut Stock, msg: Msg) -> Vec<()> {
        match msg {
            Msg::Set { sku, qty } => match state.items.get_mut(&sku) {
                Some(item) => item.qty = qty,
                None => {
                    let item = Item {
                        qty,
                        cost: "SECRET".into(),
                    };
                    state.items.insert(sku, item);
                }
            },
            Msg::Remove { sku } => {
                state.items.remove(&sku);
            }
            Msg::BumpAll => state.items.values_mut().for_each(|i| i.qty += 1),
        }
        Vec::new()
    }
    fn run_effect(
        &self,
        _: (),
        _: EffectContext<Msg>,
    ) -> impl std::future::Future<Output = Result<(), EffectError>> + Send + 'static {
        std::future::ready(Ok(()))
    }
}

fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        6 => (0u32..130, 0u32..9).prop_map(|(i, qty)| Msg::Set { sku: format!("s{i}"), qty }),
        3 => (0u32..130).prop_map(|i| Msg::Remove { sku: format!("s{i}") }),
        1 => Just(Msg::BumpAll),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_commit_publishes_the_full_state_and_its_diff(
        msgs in prop::collection::vec(msg(), 1..24),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = rt.enter();
        let host = Host::new(StockApp).unwrap();
        let session = host.create_session(None).unwrap();
        let mut opts = DispatchOptions::default();
        opts.wait_for = WaitFor::Idle;
        for msg in msgs {
            let before = session.published();
            rt.block_on(session.dispatch_msg(msg, opts)).unwrap();
            let after = session.published();
            let mut full = session.with_state(|s| serde_json::to_value(s)).unwrap();
            for item in full["items"].as_object_mut().unwrap().values_mut() {
                item.as_object_mut().unwrap().remove("cost");
            }
            let (was, now) = (before.state(), after.state());
            prop_assert_eq!(&now, &full);
            prop_assert_eq!(after.diff_since(&before), diff(&was, &now));
            prop_assert!(!after.json().get().contains("SECRET"));
        }
    }
}
