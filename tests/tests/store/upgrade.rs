//! Upgrades lose nothing (`docs/stores.md` §Upgrades): a session stored by one version of an
//! app is loaded by the next. On a real SQLite file and a real PostgreSQL, over HTTP:
//!
//! 1. version 1 stores two notes an agent added;
//! 2. version 3 (`notes` became objects, no migration) cannot read them: the session answers
//!    503 `paused` saying why (to its agent and its owner, not to others), one audit entry,
//!    and the stored row is left exactly as it was: not reset;
//! 3. version 2 (a required field added) loads it through the default migration: the notes
//!    survive, the new field takes its initial value, the migration is committed and logged;
//! 4. version 3 with a migration hook carries the notes over into their new shape.

use std::sync::Arc;

use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::TestServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_runtime::app::{App, MigrationError};
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::AgentMsg;

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @intent("add a note")
    Add { text: String },
}

/// Version 1's state.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct V1 {
    title: String,
    notes: Vec<String>,
}

/// Version 2: a required field added.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct V2 {
    title: String,
    notes: Vec<String>,
    owner_name: String,
}

/// Version 3: the notes became objects.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct V3 {
    title: String,
    notes: Vec<Note>,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Note {
    text: String,
    done: bool,
}

/// The same app (same name) in three versions; `hook` gives version 3 its migration.
#[derive(Clone, Copy)]
enum Notes {
    V1,
    V2,
    V3 { hook: bool },
}

// One state type per version, one app each.
#[allow(dead_code)] // read by version 3's hook only
struct NotesV1(Notes);
#[allow(dead_code)]
struct NotesV2(Notes);
struct NotesV3(Notes);

agent_tests::test_app! {
    NotesV1 {
        name: "notes",
        version: "1",
        state: V1 = V1 {
            title: "Notes".into(),
            notes: vec![],
        },
        msg: Msg,
    }
    update(s, Msg::Add { text }) => s.notes.push(text);
}

agent_tests::test_app! {
    NotesV2 {
        name: "notes",
        version: "2",
        state: V2 = V2 {
            title: "Notes".into(),
            notes: vec![],
            owner_name: "nobody yet".into(),
        },
        msg: Msg,
    }
    update(s, Msg::Add { text }) => s.notes.push(text);
}

agent_tests::test_app! {
    NotesV3 {
        name: "notes",
        version: "3",
        state: V3 = V3 {
            title: "Notes".into(),
            notes: vec![],
        },
        msg: Msg,
    }
    update(s, Msg::Add { text }) => s.notes.push(Note { text, done: false });
    fn migrate(&self, stored: Value, _hash: &str) -> Result<V3, MigrationError> {
        match self.0 {
            // Version 3's hook: string notes become objects.
            Notes::V3 { hook: true } => {
                let mut state = stored;
                let notes = state["notes"].as_array().cloned().unwrap_or_default();
                state["notes"] = notes
                    .into_iter()
                    .map(|n| match n {
                        Value::String(text) => json!({"text": text, "done": false}),
                        other => other,
                    })
                    .collect();
                Ok(serde_json::from_value(state)?)
            }
            // Without it: what the default hook does.
            _ => tea_agent_runtime::app::fill_missing_fields(&self.init().0, stored),
        }
    }
}

/// A server for `app` on `spec`'s store that can be stopped (a restart in one process).
struct Running<A: App> {
    t: TestServer<A>,
    stores: Stores,
    audit: Arc<MemoryAuditSink>,
    task: tokio::task::JoinHandle<()>,
}

impl<A: App> Running<A> {
    async fn start(app: A, spec: &str) -> Running<A> {
        let stores = Stores::open(spec).await.expect("store");
        let audit = Arc::new(MemoryAuditSink::new());
        let (t, task) = TestServer::builder(app)
            .audit(audit.clone())
            .stores(&stores)
            .start_stoppable()
            .await;
        Running {
            t,
            stores,
            audit,
            task,
        }
    }

    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    async fn stored(&self, id: &str) -> (u64, Value) {
        let record = self
            .stores
            .sessions
            .load_session(id)
            .await
            .expect("load")
            .expect("stored");
        (
            record.seq,
            serde_json::from_str(&record.state).expect("json"),
        )
    }
}

async fn upgrade_on(spec: &str) {
    // Version 1: an agent adds two notes.
    let v1 = Running::start(NotesV1(Notes::V1), spec).await;
    let m = v1.t.mint("ana", None).await;
    for text in ["milk", "eggs"] {
        let a =
            v1.t.lap(
                &m.token,
                "/message",
                &json!({"msg": {"type": "add", "text": text}}),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let (seq, stored_v1) = v1.stored(&m.session_id).await;
    assert_eq!(seq, 2);
    assert_eq!(stored_v1["notes"], json!(["milk", "eggs"]));
    v1.stop().await;

    // Version 3 without a migration: refused with the reason, the row untouched.
    let v3 = Running::start(NotesV3(Notes::V3 { hook: false }), spec).await;
    for _ in 0..2 {
        let a = v3.t.lap(&m.token, "/state", &json!({})).await;
        assert_eq!(a.status, 503, "{}", a.body);
        assert_eq!(a.body["error"]["code"], "paused", "{}", a.body);
        let detail = a.body["error"]["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("cannot be loaded")
                && detail.contains("App::migrate")
                && detail.contains("kept unchanged")
                && detail.contains("commit 2"),
            "{detail}"
        );
    }
    let a =
        v3.t.get(
            &format!("/agent/human/sessions/{}", m.session_id),
            Some("ana"),
        )
        .await;
    assert_eq!(a.status, 503, "the owner is told why: {}", a.body);
    assert!(a.body["error"]["detail"]
        .as_str()
        .is_some_and(|d| d.contains("kept unchanged")));
    let a =
        v3.t.get(
            &format!("/agent/human/sessions/{}", m.session_id),
            Some("bob"),
        )
        .await;
    assert_eq!(a.status, 403, "others are not: {}", a.body);
    assert_eq!(
        v3.stored(&m.session_id).await,
        (2, stored_v1.clone()),
        "never overwritten"
    );
    let refusals: Vec<_> = v3
        .audit
        .entries()
        .into_iter()
        .filter(|e| e.event == AuditEvent::SessionNotMigrated)
        .collect();
    assert_eq!(refusals.len(), 1, "audited once: {refusals:?}");
    assert_eq!(refusals[0].detail["sessionId"], json!(m.session_id));
    assert_eq!(refusals[0].uid.as_deref(), Some("ana"));
    v3.stop().await;

    // Version 2 (a required field added): the default migration keeps the notes.
    let v2 = Running::start(NotesV2(Notes::V2), spec).await;
    let a = v2.t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["state"]["notes"], json!(["milk", "eggs"]));
    assert_eq!(a.body["state"]["ownerName"], "nobody yet");
    let log =
        v2.t.lap(
            &m.token,
            "/recent-actions",
            &json!({"n": 20, "kind": "error"}),
        )
        .await;
    let migrated = log.body["entries"]
        .as_array()
        .and_then(|entries| {
            entries
                .iter()
                .find(|e| e["intent"] == "Session migrated")
                .cloned()
        })
        .unwrap_or_else(|| panic!("no migration entry in {}", log.body));
    assert!(
        migrated["detail"]
            .as_str()
            .is_some_and(|d| d.contains("commit 2") && d.contains("commit 3")),
        "{migrated}"
    );
    // The migration is committed as the next commit before any other.
    let mut stored = v2.stored(&m.session_id).await;
    for _ in 0..100 {
        if stored.0 == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        stored = v2.stored(&m.session_id).await;
    }
    assert_eq!(stored.0, 3);
    assert_eq!(stored.1["ownerName"], "nobody yet");
    assert_eq!(stored.1["notes"], json!(["milk", "eggs"]));
    let a =
        v2.t.lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "add", "text": "tea"}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(v2.stored(&m.session_id).await.0, 4);
    v2.stop().await;

    // Version 3 with its hook: the notes change shape and survive.
    let v3 = Running::start(NotesV3(Notes::V3 { hook: true }), spec).await;
    let a = v3.t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["state"]["notes"],
        json!([
            {"text": "milk", "done": false},
            {"text": "eggs", "done": false},
            {"text": "tea", "done": false}
        ])
    );
    v3.stop().await;
}

#[tokio::test]
async fn an_upgrade_migrates_or_refuses_and_never_resets_on_sqlite() {
    let dir = TempDir::new("upgrade");
    upgrade_on(&dir.file("notes.db")).await;
}

#[tokio::test]
async fn an_upgrade_migrates_or_refuses_and_never_resets_on_postgres() {
    let pg = PgServer::start();
    upgrade_on(&pg.url()).await;
}

#[test]
fn the_default_migration_fills_only_what_is_missing() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Mode {
        Plain { size: u32 },
        Fancy { colour: String },
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        a: u32,
        added: bool,
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct State {
        inner: Inner,
        mode: Mode,
        tags: std::collections::BTreeMap<String, u32>,
        added: String,
    }
    let initial = State {
        inner: Inner { a: 1, added: true },
        mode: Mode::Plain { size: 1 },
        tags: [("default".to_string(), 1)].into(),
        added: "new".into(),
    };
    // A nested struct gained a field; another enum variant and a map's entries stay as stored.
    let stored = json!({
        "inner": {"a": 7},
        "mode": {"Fancy": {"colour": "red"}},
        "tags": {"mine": 2},
    });
    let state: State =
        tea_agent_runtime::app::fill_missing_fields(&initial, stored).expect("filled");
    assert_eq!(
        state,
        State {
            inner: Inner { a: 7, added: true },
            mode: Mode::Fancy {
                colour: "red".into()
            },
            tags: [("mine".to_string(), 2)].into(),
            added: "new".into(),
        }
    );
    // A stored value of another type is never replaced: no migration.
    let wrong = json!({"inner": {"a": "seven"}, "mode": {"Plain": {"size": 1}}, "tags": {}});
    assert!(tea_agent_runtime::app::fill_missing_fields(&initial, wrong).is_err());
}
