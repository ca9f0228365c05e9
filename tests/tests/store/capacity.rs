//! A full store does not lock everyone out (`docs/stores.md` §Bounds on disk), on a real
//! SQLite file and a real PostgreSQL: a mint that finds the store at `max_sessions` evicts the
//! least recently used idle session without a live agent or a pending confirmation, audited
//! `session-evicted`, and refuses only when every stored session is in use. Anonymous mints are
//! bounded per client address. A store that cannot count refuses the mint (never lets the caps
//! pass), and the stored-session expiry never deletes a session being loaded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::{Counter, Msg};
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::{host_on, TestServer};
use futures::future::BoxFuture;
use serde_json::json;
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink, TrustProxy};
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::{
    CommitWrite, Committed, ConfirmsSwap, SessionChanges, SessionRecord, SessionStore, StoreError,
    StoreResult, Stores,
};
use tea_agent_runtime::{config::HostConfig, Host, ServerOptions};

const IDLE_MS: u64 = 1_000;

/// A server on `sessions` (tokens and bindings in `stores`) holding at most three sessions.
async fn capped_server(
    stores: &Stores,
    sessions: Arc<dyn SessionStore>,
    clock: Arc<ManualClock>,
    audit: Arc<MemoryAuditSink>,
) -> TestServer<Counter> {
    TestServer::builder(Counter)
        .config(|c| {
            c.clock = clock;
            c.max_sessions = 3;
            c.session_idle = std::time::Duration::from_millis(IDLE_MS);
        })
        .audit(audit)
        .stores(stores)
        .session_store(sessions)
        .start()
        .await
}

async fn mint_as(t: &TestServer<Counter>, user: &str) -> agent_tests::Answer {
    t.post_json("/agent/mint", Some(user), None, &json!({}))
        .await
}

/// The pending entries stored for `session` (the confirmations are written by a saver task).
async fn stored_pending(stores: &Stores, session: &str) -> bool {
    for _ in 0..200 {
        let record = stores.sessions.load_session(session).await.expect("load");
        if record.is_some_and(|r| r.confirms.contains("\"pending\"")) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

async fn a_full_store_makes_room(stores: Stores) {
    let clock = Arc::new(ManualClock::new(1_000));
    let audit = Arc::new(MemoryAuditSink::new());
    let t = capped_server(
        &stores,
        stores.sessions.clone(),
        clock.clone(),
        audit.clone(),
    )
    .await;
    let ana = mint_as(&t, "ana").await;
    assert_eq!(ana.status, 200, "{}", ana.body);
    let bob = mint_as(&t, "bob").await;
    let carl = mint_as(&t, "carl").await;
    assert_eq!((bob.status, carl.status), (200, 200));
    let token = |a: &agent_tests::Answer| a.body["token"].as_str().expect("token").to_owned();
    let session = |a: &agent_tests::Answer| a.body["sessionId"].as_str().expect("id").to_owned();
    // Carl's agent proposes a confirmation the human has not decided.
    let proposed = t
        .lap(
            &token(&carl),
            "/message",
            &json!({"msg": {"type": "delete", "id": "42"}, "timeoutMs": 0}),
        )
        .await;
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    assert!(stored_pending(&stores, &session(&carl)).await);

    // Everyone idle; then bob's agent works again.
    clock.advance(2 * IDLE_MS);
    let read = t.lap(&token(&bob), "/state", &json!({})).await;
    assert_eq!(read.status, 200, "{}", read.body);

    // The store is full of sessions: ana's (idle, no live agent) makes room.
    let dave = mint_as(&t, "dave").await;
    assert_eq!(
        dave.status, 200,
        "a full store must make room: {}",
        dave.body
    );
    let evicted: Vec<_> = audit
        .entries()
        .into_iter()
        .filter(|e| e.event == AuditEvent::SessionEvicted)
        .collect();
    assert_eq!(evicted.len(), 1, "{evicted:?}");
    assert_eq!(evicted[0].detail["sessionId"], session(&ana));
    assert_eq!(evicted[0].uid.as_deref(), Some("ana"));
    let load = |id: String| {
        let stores = &stores;
        async move { stores.sessions.load_session(&id).await.expect("load") }
    };
    assert!(load(session(&ana)).await.is_none(), "ana's session evicted");
    assert!(load(session(&bob)).await.is_some(), "a live agent keeps it");
    assert!(
        load(session(&carl)).await.is_some(),
        "a pending confirmation keeps it"
    );
    let gone = t.lap(&token(&ana), "/state", &json!({})).await;
    assert_eq!(gone.status, 503, "{}", gone.body);

    // Every stored session in use: refused, and nothing more is evicted.
    let full = mint_as(&t, "erin").await;
    assert_eq!(full.status, 503, "{}", full.body);
    assert_eq!(full.body["error"]["code"], "session-capacity");
    assert!(
        full.body["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("all in use")),
        "{}",
        full.body
    );
    assert_eq!(stores.sessions.session_count().await.expect("count"), 3);
}

#[tokio::test]
async fn a_full_sqlite_store_evicts_an_idle_session_to_mint() {
    let db = TempDir::new("capacity");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    a_full_store_makes_room(stores).await;
}

#[tokio::test]
async fn a_full_postgres_store_evicts_an_idle_session_to_mint() {
    let pg = PgServer::start();
    let stores = Stores::open(&pg.url()).await.expect("store");
    a_full_store_makes_room(stores).await;
}

#[tokio::test]
async fn an_anonymous_mint_flood_from_one_address_is_throttled() {
    let t = TestServer::builder(Counter)
        .anonymous()
        // The per-caller limit is generous (an operator raised it for busy agents): the
        // anonymous bucket per address is what bounds a visitor.
        .rate_limit("100000/minute")
        .options(|o| o.trust_proxy = TrustProxy::hops(1))
        .cookie_identity_only()
        .start()
        .await;
    let mint_from = |address: &'static str| {
        let t = &t;
        async move {
            t.send(
                t.request(reqwest::Method::POST, "/agent/mint")
                    .header("x-forwarded-for", address)
                    .json(&json!({})),
            )
            .await
        }
    };
    let allowed = ServerOptions::default().anonymous_mint_rate.count();
    for i in 0..allowed {
        let minted = mint_from("203.0.113.7").await;
        assert_eq!(minted.status, 200, "mint {i}: {}", minted.body);
    }
    let flood = mint_from("203.0.113.7").await;
    assert_eq!(flood.status, 429, "{}", flood.body);
    assert_eq!(flood.body["error"]["code"], "rate-limited");
    assert!(flood.body["error"]["retryAfterMs"]
        .as_u64()
        .is_some_and(|ms| ms > 0));
    // Another address is not affected.
    assert_eq!(mint_from("198.51.100.1").await.status, 200);
}

/// A session store that fails `session_count` or `sessions_of`, and can hold a load open.
struct Faulty {
    inner: Arc<dyn SessionStore>,
    fail_count: AtomicBool,
    fail_owner: AtomicBool,
    /// The next load waits here (after telling `loading`) until `resume` is notified.
    hold_load: AtomicBool,
    loading: tokio::sync::Notify,
    resume: tokio::sync::Notify,
}

impl Faulty {
    fn new(inner: Arc<dyn SessionStore>) -> Arc<Self> {
        Arc::new(Faulty {
            inner,
            fail_count: AtomicBool::new(false),
            fail_owner: AtomicBool::new(false),
            hold_load: AtomicBool::new(false),
            loading: tokio::sync::Notify::new(),
            resume: tokio::sync::Notify::new(),
        })
    }
}

fn failure() -> StoreError {
    StoreError::Database("the database is unreachable".into())
}

impl SessionStore for Faulty {
    fn insert_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.inner.insert_session(record)
    }
    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        Box::pin(async move {
            if self.hold_load.swap(false, Ordering::SeqCst) {
                self.loading.notify_one();
                self.resume.notified().await;
            }
            self.inner.load_session(id).await
        })
    }
    fn commit<'a>(&'a self, write: CommitWrite<'a>) -> BoxFuture<'a, StoreResult<Committed>> {
        self.inner.commit(write)
    }
    fn load_since<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Option<SessionChanges>>> {
        self.inner.load_since(id, after)
    }
    fn swap_confirms<'a>(
        &'a self,
        id: &'a str,
        expected: &'a str,
        confirms: &'a str,
    ) -> BoxFuture<'a, StoreResult<ConfirmsSwap>> {
        self.inner.swap_confirms(id, expected, confirms)
    }
    fn save_log_tail<'a>(
        &'a self,
        id: &'a str,
        log_tail: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.inner.save_log_tail(id, log_tail)
    }
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.inner.delete_session(id)
    }
    fn delete_session_unused<'a>(
        &'a self,
        id: &'a str,
        before: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.inner.delete_session_unused(id, before)
    }
    fn sessions_of<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        if self.fail_owner.load(Ordering::SeqCst) {
            return Box::pin(async { Err(failure()) });
        }
        self.inner.sessions_of(owner)
    }
    fn session_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        if self.fail_count.load(Ordering::SeqCst) {
            return Box::pin(async { Err(failure()) });
        }
        self.inner.session_count()
    }
    fn touch_session<'a>(&'a self, id: &'a str, at: u64) -> BoxFuture<'a, StoreResult<()>> {
        self.inner.touch_session(id, at)
    }
    fn stale_sessions(&self, before: u64, limit: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.inner.stale_sessions(before, limit)
    }
}

#[tokio::test]
async fn a_store_that_cannot_count_refuses_the_mint() {
    let db = TempDir::new("capacity");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let faulty = Faulty::new(stores.sessions.clone());
    let clock = Arc::new(ManualClock::new(1_000));
    let audit = Arc::new(MemoryAuditSink::new());
    let t = capped_server(&stores, faulty.clone(), clock, audit).await;
    assert_eq!(mint_as(&t, "ana").await.status, 200);
    for (flag, what) in [
        (&faulty.fail_count, "session_count"),
        (&faulty.fail_owner, "sessions_of"),
    ] {
        flag.store(true, Ordering::SeqCst);
        let refused = mint_as(&t, "ana").await;
        assert_eq!(
            refused.status, 500,
            "a failed {what} must refuse: {}",
            refused.body
        );
        assert_eq!(refused.body["error"]["code"], "internal");
        flag.store(false, Ordering::SeqCst);
    }
    assert_eq!(stores.sessions.session_count().await.expect("count"), 1);
    assert_eq!(mint_as(&t, "ana").await.status, 200, "works again");
}

#[tokio::test]
async fn the_stored_session_expiry_does_not_delete_a_session_being_loaded() {
    const TTL: u64 = 86_400_000;
    let db = TempDir::new("capacity");
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let clock = Arc::new(ManualClock::new(1_000));
    let config = || {
        let mut config = HostConfig::default();
        config.clock = clock.clone();
        config.stored_session_ttl = std::time::Duration::from_millis(TTL);
        config.session_idle = std::time::Duration::from_millis(0);
        config
    };
    let first = host_on(Counter, &stores, config());
    let session = first.create_session(Some("u1".into())).expect("session");
    session.stored().await;
    session
        .dispatch_msg(Msg::Inc, DispatchOptions::default())
        .await
        .expect("inc");
    let id = session.id().to_owned();
    drop((session, first));

    // Another process, a day later: a request loads the session while the sweep runs.
    let faulty = Faulty::new(stores.sessions.clone());
    let second = Host::with_store(
        Counter,
        config(),
        Arc::new(MemoryAuditSink::new()),
        faulty.clone(),
    )
    .expect("host");
    clock.advance(TTL + 1);
    faulty.hold_load.store(true, Ordering::SeqCst);
    let loading = faulty.loading.notified();
    let load = tokio::spawn({
        let (second, id) = (second.clone(), id.clone());
        async move { second.load_session(&id).await }
    });
    loading.await;
    let sweep = tokio::spawn({
        let second = second.clone();
        async move { second.expire_stored_sessions().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    faulty.resume.notify_one();
    let loaded = load.await.expect("load task").expect("loaded");
    assert_eq!(sweep.await.expect("sweep task"), 0, "nothing expired");
    assert!(
        stores
            .sessions
            .load_session(&id)
            .await
            .expect("load")
            .is_some(),
        "the session being loaded stays stored"
    );
    loaded
        .dispatch_msg(Msg::Inc, DispatchOptions::default())
        .await
        .expect("inc");
    let stored = stores.sessions.load_session(&id).await.expect("load");
    assert_eq!(stored.map(|r| r.seq), Some(2), "its commits are stored");
}
