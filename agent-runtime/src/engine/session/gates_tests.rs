//! Action gates that close (`docs/semantics.md` §5.1): an agent's message whose route gate is
//! closed, or that `list_actions` does not offer now, is refused as `unavailable` when it is
//! sent and again when its turn comes; the human is never gated; `ActionGates::Advisory`
//! keeps the reference protocol's advisory meaning.

use std::sync::{mpsc, Arc};
use std::time::Duration;

use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tea_agent_schema::protocol::{LogKind, RejectReason, SendResult, WaitFor, WouldDispatchResult};

use super::{DispatchOptions, Session};
use crate::app::{App, Bindings};
use crate::config::{ActionGates, HostConfig};
use crate::security::MemoryAuditSink;
use crate::AgentMsg;
use crate::Host;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct State {
    notes: Vec<String>,
    /// The UI shows the archive button only while this is set.
    archive_shown: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("add a note")
    Add { text: String },
    /// @intent("clear all notes")
    /// @routeGated("size(state.notes) > 0", "there are no notes to clear")
    ClearAll,
    /// @intent("archive the notes")
    Archive,
    /// @intent("show the archive button")
    ShowArchive,
    /// Blocks the session's task until the test lets it go (see `Notes::hold`).
    /// @intent("hold")
    Hold,
}

/// The notes app; `Hold` blocks `update` until the test sends on `release`.
struct Notes {
    release: Mutex<Option<mpsc::Receiver<()>>>,
}

impl App for Notes {
    type State = State;
    type Msg = Msg;
    type Effect = ();

    fn init(&self) -> (State, Vec<()>) {
        (
            State {
                notes: vec![],
                archive_shown: false,
            },
            vec![],
        )
    }

    fn update(&self, state: &mut State, msg: Msg) -> Vec<()> {
        match msg {
            Msg::Add { text } => state.notes.push(text),
            Msg::ClearAll => state.notes.clear(),
            Msg::Archive => state.notes.push("archived".into()),
            Msg::ShowArchive => state.archive_shown = true,
            Msg::Hold => {
                if let Some(release) = self.release.lock().take() {
                    // The worker hands its other tasks to another thread while it waits.
                    tokio::task::block_in_place(|| {
                        let _ = release.recv_timeout(Duration::from_secs(10));
                    });
                }
            }
        }
        vec![]
    }

    fn bindings(&self, state: &State) -> Bindings<MsgKind> {
        let mut bound = vec![MsgKind::Add, MsgKind::ClearAll, MsgKind::Hold];
        bound.push(MsgKind::ShowArchive);
        if state.archive_shown {
            bound.push(MsgKind::Archive);
        }
        bound.into()
    }
}

fn session_with(gates: ActionGates) -> (Session<Notes>, mpsc::Sender<()>) {
    let (tx, rx) = mpsc::channel();
    let config = HostConfig {
        action_gates: gates,
        ..HostConfig::default()
    };
    let app = Notes {
        release: Mutex::new(Some(rx)),
    };
    let host = Host::with_config(app, config, Arc::new(MemoryAuditSink::new())).unwrap();
    (host.create_session(None).unwrap(), tx)
}

fn idle() -> DispatchOptions {
    DispatchOptions::waiting_for(WaitFor::Idle)
}

async fn send(session: &Session<Notes>, msg: serde_json::Value) -> SendResult {
    session
        .send_message(&msg, None, idle(), Some("t"))
        .await
        .unwrap()
}

fn unavailable_detail(result: &SendResult) -> &str {
    match result {
        SendResult::Rejected {
            reason: RejectReason::Unavailable,
            detail: Some(detail),
        } => detail,
        other => panic!("expected rejected unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_closed_gate_refuses_the_agent_with_its_reason_and_expression() {
    let (session, _release) = session_with(ActionGates::Enforced);
    let seq = session.published().seq;
    let refused = send(&session, json!({"type": "clearAll"})).await;
    assert_eq!(unavailable_detail(&refused), detail_text());
    assert_eq!(session.published().seq, seq, "nothing was dispatched");
    let log = session.recent_log(10, None);
    assert_eq!(log.first().map(|e| e.kind), Some(LogKind::Blocked));
    // `would_dispatch` says the same.
    match session
        .would_dispatch(&json!({"type": "clearAll"}))
        .unwrap()
    {
        WouldDispatchResult::Rejected {
            reason: RejectReason::Unavailable,
            detail,
        } => assert_eq!(detail.as_deref(), Some(detail_text())),
        other => panic!("{other:?}"),
    }
    // Once the gate opens, the same message goes through.
    send(&session, json!({"type": "add", "text": "milk"})).await;
    let cleared = send(&session, json!({"type": "clearAll"})).await;
    assert!(
        matches!(cleared, SendResult::Dispatched { .. }),
        "{cleared:?}"
    );
    assert!(session.with_state(|s| s.notes.is_empty()));
}

fn detail_text() -> &'static str {
    "\"clear all notes\" is not available now: there are no notes to clear \
     (routeGate: size(state.notes) > 0)"
}

#[tokio::test]
async fn an_action_not_listed_now_is_refused_until_it_is() {
    let (session, _release) = session_with(ActionGates::Enforced);
    let refused = send(&session, json!({"type": "archive"})).await;
    assert_eq!(
        unavailable_detail(&refused),
        "\"archive the notes\" is not offered in the current state: list_actions does not \
         list it now"
    );
    assert!(session.with_state(|s| s.notes.is_empty()));
    send(&session, json!({"type": "showArchive"})).await;
    let archived = send(&session, json!({"type": "archive"})).await;
    assert!(
        matches!(archived, SendResult::Dispatched { .. }),
        "{archived:?}"
    );
}

#[tokio::test]
async fn the_human_is_never_gated() {
    let (session, _release) = session_with(ActionGates::Enforced);
    let result = session
        .dispatch_as_human(&json!({"type": "archive"}), idle())
        .await
        .unwrap();
    assert!(
        matches!(result, SendResult::Dispatched { .. }),
        "{result:?}"
    );
    assert_eq!(session.with_state(|s| s.notes.clone()), vec!["archived"]);
}

#[tokio::test]
async fn advisory_gates_keep_the_reference_meaning() {
    let (session, _release) = session_with(ActionGates::Advisory);
    // The list says the gate is closed.
    let actions = session.list_actions().unwrap();
    let clear = actions.iter().find(|a| a.variant == "clearAll").unwrap();
    assert_eq!(clear.available, Some(false));
    for msg in [json!({"type": "clearAll"}), json!({"type": "archive"})] {
        let result = send(&session, msg).await;
        assert!(
            matches!(result, SendResult::Dispatched { .. }),
            "{result:?}"
        );
    }
    assert_eq!(session.with_state(|s| s.notes.clone()), vec!["archived"]);
}

/// The gate is open when the message is sent, and closed by a message queued before it by the
/// time its turn comes: the task refuses it, nothing of it is applied, its sender reads
/// `unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_closed_while_the_message_waited_in_the_queue_refuses_it() {
    let (session, release) = session_with(ActionGates::Enforced);
    send(&session, json!({"type": "add", "text": "milk"})).await;
    // The list of this state is computed now: while `update` blocks below, the check at send
    // reads it instead of the typed state (whose lock `update` holds).
    session.list_actions().unwrap();
    let none = DispatchOptions::waiting_for(WaitFor::None);
    let queued = |msg: serde_json::Value| {
        let session = session.clone();
        async move { session.send_message(&msg, None, none, Some("t")).await }
    };
    // The task blocks in `Hold`; `clearAll` (gate open: one note) queues behind it and will
    // empty the list.
    queued(json!({"type": "hold"})).await.unwrap();
    queued(json!({"type": "clearAll"})).await.unwrap();
    // A second `clearAll`, sent while the published state still has the note: admitted at
    // send time, queued third.
    let second = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .send_message(&json!({"type": "clearAll"}), None, idle(), Some("t"))
                .await
        }
    });
    let queued_third = async {
        while session.core.next_ticket.lock().to_owned() < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), queued_third)
        .await
        .expect("the second clearAll was queued");
    // Nothing has committed since `add`: the task is still in `hold`.
    assert_eq!(session.published().seq, 1);
    release.send(()).unwrap();
    let refused = second.await.unwrap().unwrap();
    assert_eq!(unavailable_detail(&refused), detail_text());
    let log = session.recent_log(10, None);
    let kinds: Vec<_> = log.iter().map(|e| e.kind).collect();
    // Newest first.
    assert_eq!(kinds.first(), Some(&LogKind::Blocked), "{kinds:?}");
    // One `clearAll` committed, the refused one did not: seq counts add, hold, clearAll.
    assert_eq!(session.published().seq, 3);
    assert!(session.with_state(|s| s.notes.is_empty()));
}

/// The serialized actions a commit's answer embeds are those `list_actions` renders, whether
/// the commit changed the list (a gate opened, a binding appeared) or left it as it was (the
/// text is then the previous listing's).
#[tokio::test]
async fn the_serialized_actions_follow_every_change_of_the_list() {
    let (session, _release) = session_with(ActionGates::Enforced);
    let steps = [
        json!({"type": "add", "text": "milk"}),
        json!({"type": "add", "text": "eggs"}),
        json!({"type": "showArchive"}),
        json!({"type": "archive"}),
        json!({"type": "clearAll"}),
    ];
    let mut lists = vec![session.action_list().unwrap()];
    for step in steps {
        let SendResult::Dispatched { actions, .. } = send(&session, step.clone()).await else {
            panic!("{step} was not dispatched");
        };
        assert_eq!(actions.actions(), session.list_actions().unwrap(), "{step}");
        assert_eq!(actions, session.action_list().unwrap(), "{step}");
        lists.push(actions);
    }
    // The gate opened with the first note, the archive button appeared, the gate closed.
    let changed: Vec<bool> = lists.windows(2).map(|w| w[0] != w[1]).collect();
    assert_eq!(changed, [true, false, true, false, true]);
}
