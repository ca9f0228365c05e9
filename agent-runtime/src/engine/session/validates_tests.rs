//! A `@validates` that cannot be evaluated on a message's value (`docs/semantics.md` §2.2):
//! the message is refused, its sender is told the validation could not be evaluated, and the
//! server logs it once per predicate and session.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_schema::protocol::{RejectReason, SendResult, WaitFor};

use super::{DispatchOptions, Session};
use crate::app::{App, Bindings};
use crate::config::HostConfig;
use crate::security::MemoryAuditSink;
use crate::AgentMsg;
use crate::Host;

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
struct State {
    sets: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("set anything non-empty")
    Set {
        /// Any JSON value: the checker cannot foresee its type (dynamic).
        /// @validates("size(v) > 0")
        any: Value,
    },
}

struct Sets;

impl App for Sets {
    type State = State;
    type Msg = Msg;
    type Effect = ();

    fn init(&self) -> (State, Vec<()>) {
        (State::default(), vec![])
    }

    fn update(&self, state: &mut State, _msg: Msg) -> Vec<()> {
        state.sets += 1;
        vec![]
    }

    fn bindings(&self, _state: &State) -> Bindings<MsgKind> {
        vec![MsgKind::Set].into()
    }
}

async fn send(session: &Session<Sets>, msg: Value) -> SendResult {
    let options = DispatchOptions::waiting_for(WaitFor::Idle);
    session
        .send_message(&msg, None, options, Some("t"))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_validation_that_cannot_be_evaluated_refuses_and_says_so_once() {
    let host = Host::with_config(
        Sets,
        HostConfig::default(),
        Arc::new(MemoryAuditSink::new()),
    )
    .unwrap();
    let session = host.create_session(None).unwrap();
    // A value the predicate can judge: the usual answers.
    assert!(matches!(
        send(&session, json!({"type": "set", "any": "x"})).await,
        SendResult::Dispatched { .. }
    ));
    match send(&session, json!({"type": "set", "any": ""})).await {
        SendResult::Rejected {
            reason: RejectReason::Invalid,
            detail: Some(detail),
        } => assert!(detail.contains("violates"), "{detail}"),
        other => panic!("expected rejected invalid, got {other:?}"),
    }
    assert!(session.core.validates_logged.lock().is_empty());
    // `size` of a number is an evaluation error: refused, and the sender is told why.
    for _ in 0..2 {
        match send(&session, json!({"type": "set", "any": 5})).await {
            SendResult::Rejected {
                reason: RejectReason::Invalid,
                detail: Some(detail),
            } => assert!(detail.contains("could not be evaluated"), "{detail}"),
            other => panic!("expected rejected invalid, got {other:?}"),
        }
    }
    // Logged (and counted) once for the session, not once per message.
    assert_eq!(session.core.validates_logged.lock().len(), 1);
    assert_eq!(session.core.state.read().sets, 1);
}
