//! Undo (`docs/semantics.md` §12) under races and against the app's own types: an undo racing
//! agents' commits is decided by the session's single writer (every commit counted, none lost,
//! on the memory store and SQLite); an undo whose result does not deserialize as the app's
//! `State` changes nothing; and the undo rules on PostgreSQL, with an undo after a restart.

use agent_examples::todo::TodoApp;
use agent_tests::host_on;
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::session::{DispatchOptions, UndoError};
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::{AgentMsg, Host, Session};

fn done(session: &Session<TodoApp>, i: usize) -> Value {
    session.state()["todos"][i]["done"].clone()
}

fn id(session: &Session<TodoApp>, i: usize) -> String {
    session.state()["todos"][i]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn agent<A: tea_agent_runtime::app::App>(session: &Session<A>, msg: Value, tid: &str) -> u64 {
    session
        .send_message(&msg, None, DispatchOptions::default(), Some(tid))
        .await
        .expect("sent");
    session.published().seq
}

/// Twenty agents' toggles of one todo race the undo of another todo's toggle, then one toggle
/// of the same todo races its undo.
async fn races(host: &Host<TodoApp>) {
    let s = host.create_session(Some("alice".into())).expect("session");
    s.stored().await;
    let (a, b) = (id(&s, 0), id(&s, 1));
    let b_before = done(&s, 1);
    let toggle = agent(&s, json!({"type": "toggle", "id": a}), "tid-1").await;
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (s, b) = (s.clone(), b.clone());
            tokio::spawn(
                async move { agent(&s, json!({"type": "toggle", "id": b}), "tid-2").await },
            )
        })
        .collect();
    let undone = s
        .undo(toggle, false)
        .await
        .expect("not in the way of the others");
    for t in tasks {
        t.await.expect("joined");
    }
    assert_eq!(s.published().seq, toggle + 21, "every commit counted once");
    assert!(undone.seq > toggle && undone.seq <= toggle + 21);
    assert_eq!(done(&s, 0), json!(false), "the undo stands");
    assert_eq!(done(&s, 1), b_before, "twenty toggles, none lost");

    // The same todo: whichever the writer takes first, the result is one of the two orders.
    let toggle = agent(&s, json!({"type": "toggle", "id": a}), "tid-1").await;
    let racer = {
        let (s, a) = (s.clone(), a.clone());
        tokio::spawn(async move { agent(&s, json!({"type": "toggle", "id": a}), "tid-2").await })
    };
    let undo = s.undo(toggle, false).await;
    racer.await.expect("joined");
    match undo {
        // The undo first (false), then the toggle (true).
        Ok(u) => {
            assert_eq!(u.seq, toggle + 1);
            assert_eq!(done(&s, 0), json!(true));
        }
        // The toggle first (back to false): it is in the way.
        Err(UndoError::Conflict { later, .. }) => {
            assert_eq!(later, vec![toggle + 1]);
            assert_eq!(done(&s, 0), json!(false));
        }
        Err(other) => panic!("unexpected refusal: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_racing_agents_commits_on_the_memory_store() {
    let stores = Stores::open("memory").await.expect("stores");
    races(&host_on(TodoApp::default(), &stores, HostConfig::default())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_racing_agents_commits_on_sqlite() {
    let dir = TempDir::new("undo-race");
    let db = dir.path().join("race.db");
    let stores = Stores::open(db.to_str().expect("path"))
        .await
        .expect("stores");
    races(&host_on(TodoApp::default(), &stores, HostConfig::default())).await;
}

/// A budget whose two parts never sum past 10: the deserializer refuses it.
#[derive(Clone, Serialize, JsonSchema)]
struct Budget {
    a: u32,
    b: u32,
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            a: u32,
            b: u32,
        }
        let raw = Raw::deserialize(d)?;
        if raw.a + raw.b > 10 {
            return Err(serde::de::Error::custom(format!(
                "a + b is {}; the budget is 10",
                raw.a + raw.b
            )));
        }
        Ok(Budget { a: raw.a, b: raw.b })
    }
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum BudgetMsg {
    /// @intent("set a")
    SetA { value: u32 },
    /// @intent("set b")
    SetB { value: u32 },
}

struct BudgetApp;

agent_tests::test_app! {
    BudgetApp {
        name: "budget",
        version: "1",
        state: Budget = Budget { a: 5, b: 0 },
        msg: BudgetMsg,
    }
    update(state, msg) => match msg {
        BudgetMsg::SetA { value } if value + state.b <= 10 => state.a = value,
        BudgetMsg::SetB { value } if value + state.a <= 10 => state.b = value,
        _ => {}
    };
}

#[tokio::test]
async fn an_undo_whose_result_does_not_deserialize_changes_nothing() {
    let stores = Stores::open("memory").await.expect("stores");
    let host = host_on(BudgetApp, &stores, HostConfig::default());
    let s = host.create_session(Some("alice".into())).expect("session");
    s.stored().await;
    // The agent frees a's 5; the human then spends all 10 on b: undoing the agent's commit
    // alone would make 15.
    let freed = agent(&s, json!({"type": "setA", "value": 0}), "tid-1").await;
    s.dispatch_as_human(
        &json!({"type": "setB", "value": 10}),
        DispatchOptions::default(),
    )
    .await
    .expect("human");
    let seq = s.published().seq;
    match s.undo(freed, false).await {
        Err(UndoError::Invalid { seq: at, detail }) => {
            assert_eq!(at, freed);
            assert!(detail.contains("a + b is 15"), "{detail}");
        }
        other => panic!("expected an invalid result, got {other:?}"),
    }
    assert_eq!(s.published().seq, seq, "no commit");
    assert_eq!(s.state(), json!({"a": 0, "b": 10}), "nothing changed");
    assert!(s.recent_log(10, Some("undone")).is_empty());
    // Back to it, the human's commit goes too, and the result is valid.
    let back = s.undo(freed, true).await.expect("back to N");
    assert_eq!(back.undid, vec![seq, freed]);
    assert_eq!(s.state(), json!({"a": 5, "b": 0}));
}

#[tokio::test]
async fn undo_on_postgres_and_after_a_restart() {
    let pg = PgServer::start();
    let stores = Stores::open(&pg.url()).await.expect("stores");
    let host = host_on(TodoApp::default(), &stores, HostConfig::default());
    races(&host).await;
    let s = host.create_session(Some("bob".into())).expect("session");
    s.stored().await;
    let (a, b) = (id(&s, 0), id(&s, 1));
    let b_before = done(&s, 1);
    let toggle = agent(&s, json!({"type": "toggle", "id": a}), "tid-1").await;
    let other = agent(&s, json!({"type": "toggle", "id": b}), "tid-1").await;
    let sid = s.id().to_owned();
    drop((s, host, stores));

    // Another process: the records come from PostgreSQL.
    let stores = Stores::open(&pg.url()).await.expect("reopened");
    let host = host_on(TodoApp::default(), &stores, HostConfig::default());
    let s = host.load_session(&sid).await.expect("loaded");
    assert_eq!(done(&s, 0), json!(true));
    let undone = s.undo(toggle, false).await.expect("undo after a restart");
    assert_eq!(undone.undid, vec![toggle]);
    assert_eq!(done(&s, 0), json!(false));
    assert_ne!(done(&s, 1), b_before, "commit {other} stays");
    assert!(matches!(
        s.undo(toggle, false).await,
        Err(UndoError::AlreadyUndone { .. })
    ));
    // A message that starts effects (`@emits`), its record read back from PostgreSQL: its own
    // commit is the next, its effect's message commits after it.
    let emits = s.published().seq + 1;
    agent(
        &s,
        json!({"type": "bulkAdd", "todos": [{"title": "x"}]}),
        "tid-1",
    )
    .await;
    match s.undo(emits, false).await {
        Err(UndoError::NotUndoable { reason, .. }) => assert!(reason.contains("effects")),
        other => panic!("expected not undoable, got {other:?}"),
    }
}
