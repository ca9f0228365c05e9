//! A state schema change never shows agents a `@redact` value (issue 31): serde's error text
//! quotes the value it could not read, so none of it reaches what an agent reads (the
//! `paused` detail, `/recent-actions`, a dispatch's `drain.errors`); agents get a fixed text
//! and the operator's log the full one. On a real SQLite file and a real PostgreSQL, over
//! HTTP, a rolling upgrade:
//!
//! 1. version 1 stores a session whose `@redact` pin is a word;
//! 2. version 2 (the pin became a number; its migration reads digits only) cannot carry it
//!    over: 503 `paused`, and the detail does not quote the pin;
//! 3. version 1 rotates the pin to digits and keeps the session open;
//! 4. version 2 loads it through its migration: the `Session migrated` log entry does not
//!    quote the pin;
//! 5. version 1, still running, commits on the session version 2 moved on: it cannot read the
//!    stored state back, and the drain error and the log entry saying so do not quote the pin.

use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::{Answer, TestServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_runtime::app::{App, MigrationError};
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::AgentMsg;

/// The pin version 1 starts with (a word: version 2 cannot read it).
const WORD_PIN: &str = "S3CRET-pin";
/// The pin after a rotation (digits: version 2's migration reads it).
const DIGIT_PIN: u64 = 271_828;

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("add a note")
    Add { text: String },
    /// @intent("rotate the pin")
    Rotate,
}

/// Version 1's state: the pin is text.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct V1 {
    notes: Vec<String>,
    /// @redact
    pin: String,
}

/// Version 2's state: the pin is a number.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct V2 {
    notes: Vec<String>,
    /// @redact
    pin: u64,
}

struct LockV1;
struct LockV2;

agent_tests::test_app! {
    LockV1 {
        name: "lock",
        version: "1",
        state: V1 = V1 {
            notes: Vec::new(),
            pin: WORD_PIN.into(),
        },
        msg: Msg,
    }
    update(state, msg) => match msg {
        Msg::Add { text } => state.notes.push(text),
        Msg::Rotate => state.pin = DIGIT_PIN.to_string(),
    };
}

agent_tests::test_app! {
    LockV2 {
        name: "lock",
        version: "2",
        state: V2 = V2 {
            notes: Vec::new(),
            pin: 0,
        },
        msg: Msg,
    }
    update(state, msg) => match msg {
        Msg::Add { text } => state.notes.push(text),
        Msg::Rotate => state.pin += 1,
    };
    /// A pin of digits becomes a number; anything else is left for serde to refuse (its
    /// error quotes the pin).
    fn migrate(&self, stored: Value, _hash: &str) -> Result<V2, MigrationError> {
        let mut state = stored;
        if let Some(pin) = state["pin"].as_str().and_then(|p| p.parse::<u64>().ok()) {
            state["pin"] = json!(pin);
        }
        Ok(serde_json::from_value(state)?)
    }
}

/// Fails when `what` shows either pin.
fn assert_clean(what: &str, body: &Value) {
    let text = body.to_string();
    for needle in [WORD_PIN.to_string(), DIGIT_PIN.to_string()] {
        assert!(!text.contains(&needle), "{what} shows the pin: {text}");
    }
}

async fn server<A: App>(app: A, spec: &str) -> (TestServer<A>, tokio::task::JoinHandle<()>) {
    let stores = Stores::open(spec).await.expect("store");
    TestServer::builder(app)
        .stores(&stores)
        .start_stoppable()
        .await
}

async fn stop(task: tokio::task::JoinHandle<()>) {
    task.abort();
    let _ = task.await;
}

/// The entries of `/recent-actions`, checked clean.
async fn recent<A: App>(t: &TestServer<A>, token: &str) -> Vec<Value> {
    let log: Answer = t
        .lap(token, "/recent-actions", &json!({"n": 50, "kind": "error"}))
        .await;
    assert_eq!(log.status, 200, "{}", log.body);
    assert_clean("/recent-actions", &log.body);
    log.body["entries"].as_array().cloned().unwrap_or_default()
}

async fn upgrade_on(spec: &str) {
    // 1. Version 1 stores the session, its pin a word.
    let (v1, task) = server(LockV1, spec).await;
    let m = v1.mint("ana", None).await;
    let a = v1
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "add", "text": "milk"}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    drop(v1);
    stop(task).await;

    // 2. Version 2 cannot carry it over: refused, without quoting the pin.
    let (v2, task) = server(LockV2, spec).await;
    let a = v2.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "paused", "{}", a.body);
    assert_clean("the paused detail", &a.body);
    let detail = a.body["error"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("cannot be loaded") && detail.contains("App::migrate"),
        "still says why: {detail}"
    );
    let path = format!("/agent/human/sessions/{}", m.session_id);
    let a = v2.get(&path, Some("ana")).await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert_clean("the owner's paused detail", &a.body);
    drop(v2);
    stop(task).await;

    // 3. Version 1 rotates the pin to digits, and stays up with the session open.
    let (v1, v1_task) = server(LockV1, spec).await;
    let a = v1
        .lap(&m.token, "/message", &json!({"msg": {"type": "rotate"}}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);

    // 4. Version 2 migrates it: the log entry does not quote the pin.
    let (v2, v2_task) = server(LockV2, spec).await;
    let a = v2.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["state"], json!({"notes": ["milk"]}));
    let entries = recent(&v2, &m.token).await;
    // The migration is committed (as commit 3) before version 1 commits again.
    let stores = Stores::open(spec).await.expect("store");
    let mut seq = 0;
    for _ in 0..200 {
        let record = stores.sessions.load_session(&m.session_id).await;
        seq = record.expect("load").expect("stored").seq;
        if seq == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(seq, 3, "the migration is stored");
    let migrated = entries
        .iter()
        .find(|e| e["intent"] == "Session migrated")
        .unwrap_or_else(|| panic!("no migration entry in {entries:?}"));
    assert!(
        migrated["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no longer deserialized")),
        "still says why: {migrated}"
    );

    // 5. Version 1 commits after version 2's migration: it cannot read the stored state
    // back; the drain error and the log say so without quoting the pin.
    let a = v1
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "add", "text": "eggs"}, "waitFor": "drained"}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_clean("the drain errors", &a.body);
    let errors = a.body["drain"]["errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("not stored"))),
        "the commit was not stored: {}",
        a.body
    );
    let entries = recent(&v1, &m.token).await;
    assert!(
        entries.iter().any(|e| e["intent"] == "Commit not stored"),
        "{entries:?}"
    );
    drop((v1, v2));
    stop(v1_task).await;
    stop(v2_task).await;
}

#[tokio::test]
async fn a_schema_change_never_quotes_a_redacted_value_on_sqlite() {
    let dir = TempDir::new("redaction-upgrade");
    upgrade_on(&dir.file("lock.db")).await;
}

#[tokio::test]
async fn a_schema_change_never_quotes_a_redacted_value_on_postgres() {
    let pg = PgServer::start();
    upgrade_on(&pg.url()).await;
}
