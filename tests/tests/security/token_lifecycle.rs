//! The token life cycle under races and store failures (`docs/security.md` §Promises): a revoke
//! stays revoked whatever call was in flight, on memory, SQLite and PostgreSQL, across a
//! restart; a change that lost the race to a revoke changes nothing; a store that fails is
//! answered as an error, never as success.

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::token_faults::{FaultyTokens, TokenOp};
use agent_tests::{Answer, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink, TokenStatus};
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::store::TokenStore;

/// A counter server on `stores`, its token store optionally replaced (a wrapper of the
/// stores' own), auditing into `audit`.
async fn server_on(
    stores: &Stores,
    tokens: Option<Arc<dyn TokenStore>>,
    audit: &MemoryAuditSink,
) -> (TestServer<Counter>, tokio::task::JoinHandle<()>) {
    let mut builder = TestServer::builder(Counter)
        .rate_limit("10000/minute")
        .audit(Arc::new(audit.clone()))
        .stores(stores);
    if let Some(tokens) = tokens {
        builder = builder.token_store(tokens);
    }
    builder.start_stoppable().await
}

async fn revoke(t: &TestServer<Counter>, tid: &str) -> Answer {
    t.post_json("/agent/revoke", Some("alice"), None, &json!({ "tid": tid }))
        .await
}

/// The owner's `/agent/sessions` entry of `tid`, if listed.
async fn listed(t: &TestServer<Counter>, tid: &str) -> Option<Value> {
    let a = t.get("/agent/sessions", Some("alice")).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    a.body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["tid"] == tid)
        .cloned()
}

/// Finding 1: the first call of a token waits on a confirmation; the owner revokes it; when
/// the wait ends, the call's success tail must not bring the token back. Then a restart on
/// the same store keeps it revoked.
async fn revoke_during_the_first_call_stays_revoked(spec: &str) {
    let stores = Stores::open(spec).await.expect("store");
    let audit = MemoryAuditSink::new();
    let (t, task) = server_on(&stores, None, &audit).await;
    let minted = t.mint("alice", None).await;
    let first = t.spawn_lap(
        &minted.token,
        "/message",
        json!({"msg": {"type": "delete", "id": "42"}, "timeoutMs": 1500}),
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let revoked = revoke(&t, &minted.tid).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    let answered = first.await.expect("first call");
    assert_eq!(answered.status, 403, "{:?}", answered.body);
    // The detached dispatch runs its success tail when the confirmation wait ends.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let observed = t.lap(&minted.token, "/observe", &json!({})).await;
    assert_eq!(observed.status, 403, "{:?}", observed.body);
    assert_eq!(observed.body["error"]["code"], "revoked");
    assert_eq!(listed(&t, &minted.tid).await, None);
    let stored = stores.tokens.find_by_tid(&minted.tid).await.expect("find");
    assert_eq!(stored.expect("kept").status, TokenStatus::Revoked);
    task.abort();

    if spec != "memory" {
        let reopened = Stores::open(spec).await.expect("store");
        let (again, task) = server_on(&reopened, None, &audit).await;
        let observed = again.lap(&minted.token, "/observe", &json!({})).await;
        assert_eq!(observed.status, 403, "{:?}", observed.body);
        task.abort();
    }
}

#[tokio::test]
async fn revoke_during_the_first_call_stays_revoked_in_memory() {
    revoke_during_the_first_call_stays_revoked("memory").await;
}

#[tokio::test]
async fn revoke_during_the_first_call_stays_revoked_on_sqlite() {
    let dir = TempDir::new("lifecycle");
    revoke_during_the_first_call_stays_revoked(&dir.file("counter.db")).await;
}

#[tokio::test]
async fn revoke_during_the_first_call_stays_revoked_on_postgres() {
    let pg = PgServer::start();
    revoke_during_the_first_call_stays_revoked(&pg.url()).await;
}

/// A revoke that lands while the activation's write is held open wins: the held write, let
/// through afterwards, changes nothing, and the call that ran it answers 403.
async fn revoke_racing_the_activation_wins(spec: &str) {
    let stores = Stores::open(spec).await.expect("store");
    let faulty = FaultyTokens::new(stores.tokens.clone());
    let audit = MemoryAuditSink::new();
    let (t, task) = server_on(&stores, Some(faulty.clone()), &audit).await;
    let minted = t.mint("alice", None).await;
    faulty.hold_changes();
    let first = t.spawn_lap(
        &minted.token,
        "/message",
        json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
    );
    for _ in 0..200 {
        if faulty.held() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(faulty.held(), 1, "the activation never reached the store");
    let revoked = revoke(&t, &minted.tid).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    faulty.release();
    let answered = first.await.expect("first call");
    assert_eq!(answered.status, 403, "{:?}", answered.body);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stored = stores.tokens.find_by_tid(&minted.tid).await.expect("find");
    assert_eq!(stored.expect("kept").status, TokenStatus::Revoked);
    let observed = t.lap(&minted.token, "/observe", &json!({})).await;
    assert_eq!(observed.status, 403, "{:?}", observed.body);
    task.abort();
}

#[tokio::test]
async fn revoke_racing_the_activation_wins_in_memory() {
    revoke_racing_the_activation_wins("memory").await;
}

#[tokio::test]
async fn revoke_racing_the_activation_wins_on_sqlite() {
    let dir = TempDir::new("lifecycle");
    revoke_racing_the_activation_wins(&dir.file("counter.db")).await;
}

#[tokio::test]
async fn revoke_racing_the_activation_wins_on_postgres() {
    let pg = PgServer::start();
    revoke_racing_the_activation_wins(&pg.url()).await;
}

/// Every failed token write is an error answer (500 `internal`, audited `store-failed`), never
/// a success: a mint hands out no token, a revoke is not reported done, a first call whose
/// activation failed is not answered 200, a lookup that failed is not a 401.
async fn failing_token_writes_are_errors(spec: &str) {
    let stores = Stores::open(spec).await.expect("store");
    let faulty = FaultyTokens::new(stores.tokens.clone());
    let audit = MemoryAuditSink::new();
    let (t, task) = server_on(&stores, Some(faulty.clone()), &audit).await;

    faulty.fail(TokenOp::Create);
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(minted.status, 500, "{:?}", minted.body);
    assert_eq!(minted.body["error"]["code"], "internal");
    assert!(minted.body.get("token").is_none());
    assert!(
        !minted.body.to_string().contains("injected"),
        "{}",
        minted.body
    );
    faulty.heal(TokenOp::Create);
    let stored_failures = || {
        audit
            .events()
            .into_iter()
            .filter(|e| *e == AuditEvent::StoreFailed)
            .count()
    };
    assert_eq!(stored_failures(), 1);

    let minted = t.mint("alice", None).await;
    faulty.fail(TokenOp::Change);
    let first = t.lap(&minted.token, "/observe", &json!({})).await;
    assert_eq!(first.status, 500, "{:?}", first.body);
    assert_eq!(stored_failures(), 2);
    faulty.heal(TokenOp::Change);

    faulty.fail(TokenOp::Revoke);
    let revoked = revoke(&t, &minted.tid).await;
    assert_eq!(revoked.status, 500, "{:?}", revoked.body);
    assert_eq!(stored_failures(), 3);
    faulty.heal(TokenOp::Revoke);
    assert_eq!(revoke(&t, &minted.tid).await.status, 200);

    faulty.fail(TokenOp::Find);
    let looked_up = t.lap(&minted.token, "/observe", &json!({})).await;
    assert_eq!(looked_up.status, 500, "{:?}", looked_up.body);
    faulty.heal(TokenOp::Find);
    assert_eq!(
        t.lap(&minted.token, "/observe", &json!({})).await.status,
        403
    );
    task.abort();
}

#[tokio::test]
async fn failing_token_writes_are_errors_in_memory() {
    failing_token_writes_are_errors("memory").await;
}

#[tokio::test]
async fn failing_token_writes_are_errors_on_sqlite() {
    let dir = TempDir::new("lifecycle");
    failing_token_writes_are_errors(&dir.file("counter.db")).await;
}

#[tokio::test]
async fn failing_token_writes_are_errors_on_postgres() {
    let pg = PgServer::start();
    failing_token_writes_are_errors(&pg.url()).await;
}

/// Finding 7: a session takes at most 64 live tokens; a mint of one more is refused until
/// one is revoked.
#[tokio::test]
async fn a_session_takes_a_bounded_number_of_tokens() {
    let stores = Stores::in_memory();
    let audit = MemoryAuditSink::new();
    let (t, task) = server_on(&stores, None, &audit).await;
    let first = t.mint("alice", None).await;
    for _ in 1..64 {
        t.mint("alice", Some(&first.session_id)).await;
    }
    let over = t
        .post_json(
            "/agent/mint",
            Some("alice"),
            None,
            &json!({"session": first.session_id}),
        )
        .await;
    assert_eq!(over.status, 503, "{:?}", over.body);
    assert_eq!(over.body["error"]["code"], "session-capacity");
    assert_eq!(revoke(&t, &first.tid).await.status, 200);
    t.mint("alice", Some(&first.session_id)).await;
    task.abort();
}

/// Finding 2: closing a hosted session revokes its tokens, so no agent call reloads it from
/// the store afterwards (before, the next call loaded it again and answered 200).
async fn closing_a_session_ends_its_agents(spec: &str) {
    let stores = Stores::open(spec).await.expect("store");
    let audit = MemoryAuditSink::new();
    let (t, task) = server_on(&stores, None, &audit).await;
    let minted = t.mint("alice", None).await;
    let second = t.mint("alice", Some(&minted.session_id)).await;
    assert_eq!(
        t.lap(&minted.token, "/observe", &json!({})).await.status,
        200
    );
    let closed = t
        .post_json(
            &format!("/agent/human/sessions/{}/close", minted.session_id),
            Some("alice"),
            None,
            &json!({}),
        )
        .await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);
    for token in [&minted.token, &second.token] {
        let observed = t.lap(token, "/observe", &json!({})).await;
        assert_eq!(observed.status, 403, "{:?}", observed.body);
        assert_eq!(observed.body["error"]["code"], "revoked");
    }
    assert_eq!(
        audit
            .events()
            .iter()
            .filter(|e| **e == AuditEvent::Revoke)
            .count(),
        2
    );
    task.abort();
}

#[tokio::test]
async fn closing_a_session_ends_its_agents_in_memory() {
    closing_a_session_ends_its_agents("memory").await;
}

#[tokio::test]
async fn closing_a_session_ends_its_agents_on_sqlite() {
    let dir = TempDir::new("lifecycle");
    closing_a_session_ends_its_agents(&dir.file("counter.db")).await;
}

#[tokio::test]
async fn closing_a_session_ends_its_agents_on_postgres() {
    let pg = PgServer::start();
    closing_a_session_ends_its_agents(&pg.url()).await;
}

/// Finding 1 on a paired session: the agent's first call waits on the app's confirmation;
/// the owner revokes; the relay's wait ends at once, and its success tail must not make the
/// token `active` again.
#[tokio::test]
async fn revoke_during_the_first_paired_call_stays_revoked() {
    use agent_tests::paired::{self, AppProcess};
    let t = paired::server().await;
    let (token, _app) = AppProcess::paired(&t, env!("CARGO_BIN_EXE_paired-counter")).await;
    let tid = t
        .server
        .tokens()
        .list_by_identity("alice")
        .await
        .expect("list")
        .pop()
        .expect("the paired token")
        .tid;
    let first = t.spawn_lap(
        &token,
        "/message",
        json!({"msg": {"type": "delete", "id": "42"}, "timeoutMs": 1500}),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let revoked = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({ "tid": tid }))
        .await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    let answered = first.await.expect("first call");
    assert_ne!(answered.status, 200, "{:?}", answered.body);
    tokio::time::sleep(Duration::from_millis(1800)).await;
    assert_eq!(paired::status_of(&t, &tid).await, "revoked");
    let observed = t.lap(&token, "/observe", &json!({})).await;
    assert_eq!(observed.status, 403, "{:?}", observed.body);
}

/// Finding 9: the app's socket needs an `Origin` (a page always sends one) unless the server
/// pairs native apps, so a plain client holding the session's token (an agent) cannot open it
/// and supersede the app.
#[tokio::test]
async fn an_app_socket_needs_an_origin_unless_the_server_pairs_native_apps() {
    use agent_tests::tab::{ws_url, Tab};
    for native_apps in [false, true] {
        let t = TestServer::builder(Counter)
            .pairing(|p| {
                p.mint_paired = true;
                p.native_apps = native_apps;
            })
            .start()
            .await;
        let minted = t
            .post_json("/agent/mint", Some("alice"), None, &json!({}))
            .await;
        let token = minted.body["token"].as_str().expect("token");
        let url = ws_url(&t.base, token);
        let plain = Tab::open_native(&url, &[]).await;
        if native_apps {
            assert!(
                plain.is_ok(),
                "a native app pairs when the server allows it"
            );
        } else {
            assert_eq!(plain.err(), Some(403), "no Origin, no socket");
            let page = Tab::open(&url, &[]).await;
            assert!(page.is_ok(), "a page of the server's own origin pairs");
        }
    }
}
