//! Undo of an agent's commit by the human (`docs/semantics.md` §12), on the memory, SQLite
//! and PostgreSQL stores: a toggle undone, a conflict, undo back to N, a message that starts
//! effects refused, a human's commit refused, an undo after a restart.

use agent_examples::todo::TodoApp;
use agent_tests::host_on;
use agent_tests::temp::TempDir;
use serde_json::{json, Value};
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::session::{DispatchOptions, UndoError};
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::{Host, Session};

fn done(session: &Session<TodoApp>, i: usize) -> Value {
    session.state()["todos"][i]["done"].clone()
}

fn id(session: &Session<TodoApp>, i: usize) -> String {
    session.state()["todos"][i]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn agent(session: &Session<TodoApp>, msg: Value) -> u64 {
    session
        .send_message(&msg, None, DispatchOptions::default(), Some("tid-1"))
        .await
        .expect("sent");
    session.published().seq
}

/// Everything but the restart, on one store.
async fn undo_rules(host: &Host<TodoApp>) {
    let s = host.create_session(Some("alice".into())).expect("session");
    s.stored().await;
    let (a, b) = (id(&s, 0), id(&s, 1));

    // An agent's toggle, undone.
    let toggle = agent(&s, json!({"type": "toggle", "id": a})).await;
    assert_eq!(done(&s, 0), json!(true));
    let undone = s.undo(toggle, false).await.expect("undo");
    assert_eq!(undone.seq, toggle + 1);
    assert_eq!(undone.undid, vec![toggle]);
    assert_eq!(done(&s, 0), json!(false));
    let entry = &s.recent_log(1, Some("undone"))[0];
    assert_eq!(entry.variant.as_deref(), Some("toggle"));
    assert_eq!(entry.tid.as_deref(), Some("tid-1"));

    // Again: already undone; the undo itself is the human's.
    assert!(matches!(
        s.undo(toggle, false).await,
        Err(UndoError::AlreadyUndone { .. })
    ));
    assert!(matches!(
        s.undo(undone.seq, false).await,
        Err(UndoError::NotAgents { .. })
    ));
    assert!(matches!(
        s.undo(999, false).await,
        Err(UndoError::Unknown(999))
    ));

    // A human's commit is not undone.
    s.dispatch_as_human(
        &json!({"type": "toggle", "id": b}),
        DispatchOptions::default(),
    )
    .await
    .expect("human");
    let human = s.published().seq;
    assert!(matches!(
        s.undo(human, false).await,
        Err(UndoError::NotAgents { .. })
    ));

    // A conflict: the human toggled back the todo the agent toggled (the same path); a
    // rename of it (another path) is not in the way; back to N undoes them all.
    let toggle = agent(&s, json!({"type": "toggle", "id": a})).await;
    let other = agent(&s, json!({"type": "toggle", "id": b})).await;
    s.dispatch_as_human(
        &json!({"type": "rename", "id": a, "title": "renamed"}),
        DispatchOptions::default(),
    )
    .await
    .expect("rename");
    s.dispatch_as_human(
        &json!({"type": "toggle", "id": a}),
        DispatchOptions::default(),
    )
    .await
    .expect("toggle back");
    let back_toggle = s.published().seq;
    match s.undo(toggle, false).await {
        Err(UndoError::Conflict { seq, later }) => {
            assert_eq!(seq, toggle);
            assert_eq!(later, vec![back_toggle], "only the same path is in the way");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        s.state()["todos"][0]["title"],
        json!("renamed"),
        "nothing changed"
    );
    // The other toggle touched another todo: it undoes alone.
    s.undo(other, false).await.expect("undo the other");
    let back = s.undo(toggle, true).await.expect("back to N");
    assert_eq!(back.undid.last(), Some(&toggle));
    assert_eq!(done(&s, 0), json!(false));
    assert_ne!(s.state()["todos"][0]["title"], json!("renamed"));

    // A message that starts effects (`@emits`) is not undoable.
    let before = s.published().seq;
    agent(&s, json!({"type": "bulkAdd", "todos": [{"title": "x"}]})).await;
    match s.undo(before + 1, false).await {
        Err(UndoError::NotUndoable { reason, .. }) => {
            assert!(reason.contains("effects"), "{reason}")
        }
        other => panic!("expected not undoable, got {other:?}"),
    }
}

#[tokio::test]
async fn undo_on_the_memory_store() {
    let stores = Stores::open("memory").await.expect("stores");
    undo_rules(&host_on(TodoApp::default(), &stores, HostConfig::default())).await;
}

#[tokio::test]
async fn undo_on_sqlite_and_after_a_restart() {
    let dir = TempDir::new("undo");
    let db = dir.path().join("undo.db");
    let stores = Stores::open(db.to_str().expect("path"))
        .await
        .expect("stores");
    undo_rules(&host_on(TodoApp::default(), &stores, HostConfig::default())).await;

    let host = host_on(TodoApp::default(), &stores, HostConfig::default());
    let s = host.create_session(Some("bob".into())).expect("session");
    s.stored().await;
    let a = id(&s, 0);
    let toggle = agent(&s, json!({"type": "toggle", "id": a})).await;
    let sid = s.id().to_owned();
    drop((s, host, stores));

    let stores = Stores::open(db.to_str().expect("path"))
        .await
        .expect("reopened");
    let host = host_on(TodoApp::default(), &stores, HostConfig::default());
    let s = host.load_session(&sid).await.expect("loaded");
    assert_eq!(done(&s, 0), json!(true));
    s.undo(toggle, false).await.expect("undo after a restart");
    assert_eq!(done(&s, 0), json!(false));
}
