//! Durable sessions in one process, on a real SQLite file: idle sessions leave memory and
//! come back from the store; a stored state that no longer deserializes is migrated, or kept
//! untouched and refused (never reset); a record written under another schema hash gets the
//! schema-changed note.

use std::sync::Arc;

use agent_examples::counter::{Counter, Msg};
use agent_tests::host_on;
use agent_tests::temp::TempDir;
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::{SessionRecord, Stores};
use tea_agent_runtime::{config::HostConfig, Host};

fn host(stores: &Stores, clock: Arc<ManualClock>, idle_ms: u64) -> Host<Counter> {
    let mut config = HostConfig::default();
    config.clock = clock;
    config.session_idle = std::time::Duration::from_millis(idle_ms);
    host_on(Counter, stores, config)
}

#[tokio::test]
async fn idle_sessions_leave_memory_and_come_back_from_the_store() {
    let db = TempDir::new("store");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let clock = Arc::new(ManualClock::new(1_000));
    let host = host(&stores, clock.clone(), 60_000);
    let session = host.create_session(Some("u1".into())).expect("session");
    session.stored().await;
    for _ in 0..2 {
        session
            .dispatch_msg(Msg::Inc, DispatchOptions::default())
            .await
            .expect("inc");
    }
    let id = session.id().to_owned();
    assert_eq!(session.published().seq, 2);
    // The first sweep sees the commits (a use); the next one, a minute later, drops it.
    clock.advance(1);
    assert_eq!(host.expire_idle_sessions(), 0);
    clock.advance(60_001);
    assert_eq!(host.expire_idle_sessions(), 1);
    assert_eq!(host.session_count(), 0);
    assert!(host.session(&id).is_none(), "dropped from memory");
    let back = host
        .load_session(&id)
        .await
        .expect("reloaded from the store");
    assert_eq!(back.published().seq, 2);
    assert_eq!(back.state()["count"], 2);
    assert_eq!(back.owner(), Some("u1"));
    assert_eq!(host.session_count(), 1);
    back.dispatch_msg(Msg::Inc, DispatchOptions::default())
        .await
        .expect("inc");
    let stored = stores
        .sessions
        .load_session(&id)
        .await
        .expect("load")
        .expect("stored");
    assert_eq!(stored.seq, 3);
    assert_eq!(host.load_sessions_of("u1").await.len(), 1);
    // Closing a session deletes it from the store.
    assert!(host.close_session(&id).await.expect("deleted"));
    for _ in 0..100 {
        if stores
            .sessions
            .load_session(&id)
            .await
            .expect("load")
            .is_none()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(stores
        .sessions
        .load_session(&id)
        .await
        .expect("load")
        .is_none());
    let again = host.load_session(&id).await;
    assert!(again.is_none(), "{again:?}");
}

#[tokio::test]
async fn an_unreadable_state_is_kept_and_refused_and_a_new_schema_is_noted() {
    let db = TempDir::new("store");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let clock = Arc::new(ManualClock::new(1_000));
    let host = host(&stores, clock, 0);
    let hash = host.catalog().schema_hash().to_owned();
    // A state of another shape than the app's: nothing migrates it.
    let mut broken = SessionRecord::new("broken", None, 5, r#"{"count":"many"}"#.into(), &hash);
    broken.seq = 7;
    stores
        .sessions
        .insert_session(broken.clone())
        .await
        .expect("insert");
    for _ in 0..2 {
        assert!(
            host.load_session("broken").await.is_none(),
            "refused, not reset"
        );
    }
    assert_eq!(host.session_count(), 0);
    let stored = stores
        .sessions
        .load_session("broken")
        .await
        .expect("load")
        .expect("still stored");
    assert_eq!(stored, broken, "never overwritten");

    // A state lacking a field the app now has: the default migration fills it in.
    let mut older = SessionRecord::new("lacking", None, 5, r#"{"count":12}"#.into(), "v0");
    older.seq = 3;
    stores.sessions.insert_session(older).await.expect("insert");
    let session = host.load_session("lacking").await.expect("migrated");
    assert_eq!(session.state()["count"], 12);
    assert_eq!(session.published().seq, 4);
    let log = session.recent_log(10, Some("error"));
    assert!(
        log.iter()
            .any(|e| e.intent.as_deref() == Some("Session migrated")),
        "{log:?}"
    );
    session.stored().await;
    let stored = stores
        .sessions
        .load_session("lacking")
        .await
        .expect("load")
        .expect("stored");
    assert_eq!(stored.seq, 4, "the migration is committed");
    assert!(stored.state.contains("\"count\":12"), "{}", stored.state);

    // A good state written under an older schema: kept, with the note.
    let good = SessionRecord::new(
        "older",
        None,
        5,
        serde_json::to_string(&serde_json::json!({
            "count": 41, "view": "home", "lastDelete": null
        }))
        .expect("json"),
        "old-hash",
    );
    stores.sessions.insert_session(good).await.expect("insert");
    let session = host.load_session("older").await.expect("loaded");
    let log = session.recent_log(10, Some("error"));
    assert_eq!(session.state()["count"], 41);
    let note = log
        .iter()
        .find(|e| e.intent.as_deref() == Some("App schema changed"))
        .and_then(|e| e.detail.clone())
        .unwrap_or_else(|| panic!("no schema note in {log:?}"));
    assert!(
        note.contains("old-hash") && note.contains(&hash) && note.contains("stale"),
        "{note}"
    );
}
