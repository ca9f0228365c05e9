//! A keyed message's key passed to its commit (`keyed.rs`): on a durable session the commit
//! records it and reports back through the receipt; a second commit under the key is refused
//! and reported, and its application dropped.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tea_agent_schema::protocol::{SendResult, WaitFor};

use super::keyed::{KeyOutcome, KeyReceipt, KeyedDispatch};
use super::{DispatchOptions, Session};
use crate::app::EffectContext;
use crate::app::{App, EffectError};
use crate::config::HostConfig;
use crate::engine::store::MemoryStore;
use crate::security::MemoryAuditSink;
use crate::AgentMsg;
use crate::Host;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct State {
    n: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// Adds one.
    Inc,
    /// Back to zero.
    /// @requiresConfirm
    Reset,
}

struct Counter;

impl App for Counter {
    type State = State;
    type Msg = Msg;
    type Effect = ();

    fn name(&self) -> &str {
        "counter"
    }

    fn version(&self) -> &str {
        "1"
    }

    fn init(&self) -> (State, Vec<()>) {
        (State { n: 0 }, vec![])
    }

    fn update(&self, state: &mut State, msg: Msg) -> Vec<()> {
        match msg {
            Msg::Inc => state.n += 1,
            Msg::Reset => state.n = 0,
        }
        vec![]
    }

    // The trait asks for a `'static` future, which an `async fn` borrowing `self` is not.
    #[allow(clippy::manual_async_fn)]
    fn run_effect(
        &self,
        _effect: (),
        _ctx: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        async { Ok(()) }
    }
}

async fn durable_session() -> Session<Counter> {
    let host = Host::with_store(
        Counter,
        HostConfig::default(),
        Arc::new(MemoryAuditSink::new()),
        Arc::new(MemoryStore::new()),
    )
    .unwrap();
    let session = host.create_session(None).unwrap();
    session.stored().await;
    session
}

fn idle() -> DispatchOptions {
    DispatchOptions::waiting_for(WaitFor::Idle)
}

/// Sends `msg` as token `t` with the key `key`; answers the result and the commit's report.
async fn send_keyed(
    session: &Session<Counter>,
    msg: serde_json::Value,
    key: &str,
) -> (SendResult, KeyOutcome) {
    let (dispatch, receipt): (KeyedDispatch, KeyReceipt) =
        KeyedDispatch::new("t".into(), key.into(), msg.to_string(), session.now_ms());
    let result = session
        .send_message_within_budgets(&msg, None, idle(), Some("t"), Some(dispatch), None)
        .await
        .unwrap();
    (result, receipt.outcome())
}

#[tokio::test]
async fn the_commit_records_the_key_once_and_reports_it() {
    let session = durable_session().await;
    let inc = json!({"type": "inc"});
    let (first, outcome) = send_keyed(&session, inc.clone(), "k").await;
    assert!(matches!(first, SendResult::Dispatched { .. }), "{first:?}");
    assert_eq!(outcome, KeyOutcome::Recorded);
    assert_eq!(session.with_state(|s| s.n), 1);
    // The same key again: the store refuses a second commit under it; this application is
    // dropped and the stored state put back.
    let (_, outcome) = send_keyed(&session, inc.clone(), "k").await;
    assert_eq!(outcome, KeyOutcome::UsedElsewhere);
    assert_eq!(session.with_state(|s| s.n), 1);
    // Another key, and a message without one, apply.
    let (_, outcome) = send_keyed(&session, inc.clone(), "k2").await;
    assert_eq!(outcome, KeyOutcome::Recorded);
    session
        .send_message_within_budgets(&inc, None, idle(), Some("t"), None, None)
        .await
        .unwrap();
    assert_eq!(session.with_state(|s| s.n), 3);
}

#[tokio::test]
async fn a_proposal_or_a_refusal_records_no_key() {
    let session = durable_session().await;
    let (proposed, outcome) = send_keyed(&session, json!({"type": "reset"}), "k").await;
    assert!(
        matches!(proposed, SendResult::PendingConfirmation { .. }),
        "{proposed:?}"
    );
    assert_eq!(outcome, KeyOutcome::NotRecorded);
    let (refused, outcome) = send_keyed(&session, json!({"type": "nope"}), "k2").await;
    assert!(
        matches!(refused, SendResult::Rejected { .. }),
        "{refused:?}"
    );
    assert_eq!(outcome, KeyOutcome::NotRecorded);
    // The key of the proposal is still free for a commit.
    let (_, outcome) = send_keyed(&session, json!({"type": "inc"}), "k").await;
    assert_eq!(outcome, KeyOutcome::Recorded);
}
