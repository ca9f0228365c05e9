//! The host's bounds hold on disk (`docs/stores.md` §Bounds on disk), on a real SQLite file:
//! the session caps count the stored sessions, not only those in memory (an owner whose
//! sessions went idle cannot mint past the cap), stored sessions expire, and stored
//! idempotency answers past their window go while keyed calls come, without a mint.

use std::sync::Arc;

use agent_examples::counter::{Counter, Msg};
use agent_tests::host_on;
use agent_tests::temp::TempDir;
use agent_tests::TestServer;
use serde_json::json;
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::{config::HostConfig, Host};

const TTL: u64 = 86_400_000;

/// The bounds of these tests: `clock`, stored sessions kept for [`TTL`].
fn bounds(config: &mut HostConfig, clock: &Arc<ManualClock>) {
    config.clock = clock.clone();
    config.stored_session_ttl = std::time::Duration::from_millis(TTL);
}

fn host(
    stores: &Stores,
    clock: Arc<ManualClock>,
    change: impl FnOnce(&mut HostConfig),
) -> Host<Counter> {
    let mut config = HostConfig::default();
    change(&mut config);
    bounds(&mut config, &clock);
    host_on(Counter, stores, config)
}

#[tokio::test]
async fn stored_sessions_expire_unless_in_use() {
    let db = TempDir::new("bounds");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let clock = Arc::new(ManualClock::new(1_000));
    let first = host(&stores, clock.clone(), |_| {});
    let idle = first.create_session(Some("u1".into())).expect("session");
    let used = first.create_session(Some("u1".into())).expect("session");
    for s in [&idle, &used] {
        s.stored().await;
        s.dispatch_msg(Msg::Inc, DispatchOptions::default())
            .await
            .expect("inc");
    }
    let (idle, used) = (idle.id().to_owned(), used.id().to_owned());
    drop(first);

    // Another process: `used` is loaded half-way through the TTL, `idle` never. (It keeps
    // sessions in memory however long they are idle there.)
    let second = host(&stores, clock.clone(), |c| {
        c.session_idle = std::time::Duration::from_millis(0)
    });
    clock.advance(TTL / 2);
    let held = second.load_session(&used).await.expect("loaded");
    assert_eq!(held.state()["count"], 1);
    clock.advance(TTL / 2);
    // (The host's own sweeper may run meanwhile: outcomes are checked, not counts.)
    second.expire_stored_sessions().await;
    assert!(stores
        .sessions
        .load_session(&idle)
        .await
        .expect("load")
        .is_none());
    assert!(second.load_session(&idle).await.is_none(), "gone for good");
    // `used` was loaded TTL/2 ago: kept. Past its TTL while held in memory, it is in use:
    // marked used, not deleted.
    clock.advance(TTL / 2 + 1);
    second.expire_stored_sessions().await;
    let stored = stores
        .sessions
        .load_session(&used)
        .await
        .expect("load")
        .expect("kept");
    assert_eq!(stored.updated_at, 1_000 + TTL + TTL / 2 + 1);
    assert_eq!(stores.sessions.session_count().await.expect("count"), 1);
}

#[tokio::test]
async fn the_session_caps_count_stored_sessions() {
    let db = TempDir::new("bounds");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let clock = Arc::new(ManualClock::new(1_000));
    let (t, task) = TestServer::builder(Counter)
        .config(|c| {
            c.max_sessions = 3;
            c.max_sessions_per_owner = 2;
            c.session_idle = std::time::Duration::from_millis(1_000);
            bounds(c, &clock);
        })
        .stores(&stores)
        .start_stoppable()
        .await;
    let mint = |user: &'static str| {
        let t = &t;
        async move {
            t.post_json("/agent/mint", Some(user), None, &json!({}))
                .await
        }
    };
    let a1 = mint("ana").await;
    assert_eq!(a1.status, 200, "{}", a1.body);
    let a2 = mint("ana").await;
    assert_eq!(a2.status, 200);
    // Both leave memory when idle; they are still stored, and still count.
    clock.advance(2_000);
    t.server.host().expire_idle_sessions();
    assert_eq!(t.server.host().session_count(), 0);
    let refused = mint("ana").await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "session-capacity");
    assert!(
        refused.body["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("2 stored sessions")),
        "{}",
        refused.body
    );
    // The whole store: three at most, whoever mints. Ana's agent works on her first session;
    // her second, idle with no live agent, makes room for carl (`capacity.rs`).
    let token = a1.body["token"].as_str().expect("token");
    assert_eq!(t.lap(token, "/state", &json!({})).await.status, 200);
    assert_eq!(mint("bob").await.status, 200);
    assert_eq!(mint("carl").await.status, 200);
    let evicted = a2.body["sessionId"].as_str().expect("session id");
    assert!(stores
        .sessions
        .load_session(evicted)
        .await
        .expect("load")
        .is_none());
    let full = mint("dave").await;
    assert_eq!(full.status, 503, "{}", full.body);
    assert!(
        full.body["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the store holds its maximum of 3 sessions")),
        "{}",
        full.body
    );
    // The owner closes one: room again.
    let session = a1.body["sessionId"].as_str().expect("session id");
    let closed = t
        .post_json(
            &format!("/agent/human/sessions/{session}/close"),
            Some("ana"),
            None,
            &json!({}),
        )
        .await;
    assert_eq!(closed.status, 200, "{}", closed.body);
    let mut again = mint("ana").await;
    for _ in 0..100 {
        if again.status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        again = mint("ana").await;
    }
    assert_eq!(again.status, 200, "{}", again.body);
    // Expired stored sessions make room too.
    assert_eq!(mint("dave").await.status, 503);
    clock.advance(TTL + 1);
    t.server.host().expire_idle_sessions();
    let after = mint("dave").await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(stores.sessions.session_count().await.expect("count"), 1);
    task.abort();
}

#[tokio::test]
async fn stored_idempotency_answers_past_the_window_go_without_a_mint() {
    let db = TempDir::new("bounds");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let clock = Arc::new(ManualClock::new(1_000));
    let (t, task) = TestServer::builder(Counter)
        .config(|c| bounds(c, &clock))
        .stores(&stores)
        .start_stoppable()
        .await;
    let m = t.mint("ana", None).await;
    let keyed = |key: &'static str| json!({"msg": {"type": "inc"}, "idempotencyKey": key});
    assert_eq!(t.lap(&m.token, "/message", &keyed("k1")).await.status, 200);
    let stored = |key: &'static str| {
        let stores = stores.clone();
        let tid = m.tid.clone();
        async move {
            stores
                .idempotency
                .get_idempotent(&tid, key)
                .await
                .expect("get")
                .is_some()
        }
    };
    assert!(stored("k1").await);
    // Past the 10-minute window, the next keyed call deletes it (no mint in between).
    clock.advance(tea_agent_runtime::IDEMPOTENCY_WINDOW.as_millis() as u64 + 1);
    assert_eq!(t.lap(&m.token, "/message", &keyed("k2")).await.status, 200);
    assert!(!stored("k1").await);
    assert!(stored("k2").await);
    task.abort();
}
