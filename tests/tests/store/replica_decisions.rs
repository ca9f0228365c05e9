//! A human's decision is applied once, however many replicas see it (`docs/stores.md`
//! §Confirmations, `docs/semantics.md` §7), and a closed session stops everywhere.
//!
//! Two servers share one store: on PostgreSQL each opens its own connections (two replicas
//! woken by `LISTEN/NOTIFY`); on SQLite and in memory they share one store in one process
//! (nothing wakes the other: the store's compare-and-set alone decides). Each race sends
//! both requests at once: exactly one is answered as success, the other 409 with the decision
//! that won, and the approved message commits at most once, only when the approval won.

use agent_examples::counter::Counter;
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::{stored_in, Minted, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::tea_agent_schema::protocol::SendResult;

/// Proposals raced per test: one race may go either way, several make a double decision
/// certain to show on code that allows one.
const ROUNDS: usize = 4;

/// A server on `stores`.
async fn replica(stores: &Stores) -> TestServer<Counter> {
    TestServer::builder(Counter).stores(stores).start().await
}

/// Two servers on the store at `spec` (PostgreSQL: each with its own connections), and a
/// store handle to read what was stored.
async fn pair(spec: &str) -> ([TestServer<Counter>; 2], Stores) {
    let shared = !spec.starts_with("postgres");
    let first = Stores::open(spec).await.expect("store");
    let second = if shared {
        first.clone()
    } else {
        Stores::open(spec).await.expect("store")
    };
    let reader = if shared {
        first.clone()
    } else {
        Stores::open(spec).await.expect("store")
    };
    ([replica(&first).await, replica(&second).await], reader)
}

/// Proposes `delete {id}` through `t`; answers the confirmation id.
async fn propose(t: &TestServer<Counter>, m: &Minted, id: &str) -> String {
    let body = json!({"msg": {"type": "delete", "id": id}, "timeoutMs": 10});
    let a = t.lap(&m.token, "/message", &body).await;
    assert_eq!(a.body["status"], "pending-confirmation", "{}", a.body);
    a.body["confirmId"].as_str().expect("confirmId").to_owned()
}

/// Waits until the proposal `confirm_id` is stored, then until `t` lists it as pending (on
/// PostgreSQL the other replica is told; in one process it loads the session now).
async fn pending_on(t: &TestServer<Counter>, stores: &Stores, m: &Minted, confirm_id: &str) {
    for _ in 0..500 {
        let record = stores.sessions.load_session(&m.session_id).await;
        if record
            .expect("load")
            .expect("stored")
            .confirms
            .contains(confirm_id)
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    for _ in 0..500 {
        if t.pending("alice", m)
            .await
            .iter()
            .any(|e| e["id"] == confirm_id)
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("proposal {confirm_id} never reached the other server");
}

/// Waits until the committed sequence number of `session` stops moving; answers it.
async fn settled(stores: &Stores, session: &str) -> (u64, Value) {
    let mut last = stored_in(stores, session).await;
    for _ in 0..10 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = stored_in(stores, session).await;
        if now.0 == last.0 {
            return now;
        }
        last = now;
    }
    last
}

async fn two_approvals_commit_once(spec: &str) {
    let ([a, b], stores) = pair(spec).await;
    for round in 0..ROUNDS {
        // A session of its own each round: in one process nothing tells the other server
        // of a new proposal in a session it holds; it loads a new one from the store.
        let m = a.mint("alice", None).await;
        let id = propose(&a, &m, &format!("row-{round}")).await;
        pending_on(&b, &stores, &m, &id).await;
        let (before, _) = stored_in(&stores, &m.session_id).await;
        let approve = json!({"decision": "approve"});
        let (on_a, on_b) = tokio::join!(
            a.decide("alice", &m, &id, approve.clone()),
            b.decide("alice", &m, &id, approve.clone()),
        );
        let mut answers = [on_a, on_b];
        answers.sort_by_key(|(status, _)| *status);
        assert_eq!(answers[0].0, 200, "round {round}: {answers:?}");
        assert_eq!(
            answers[1].0, 409,
            "round {round}: both approved: {answers:?}"
        );
        assert_eq!(
            answers[1].1["error"]["detail"],
            format!("confirmation {id} is already approved"),
            "round {round}"
        );
        let (after, state) = settled(&stores, &m.session_id).await;
        assert_eq!(after, before + 1, "round {round}: one commit, not two");
        assert_eq!(state["lastDelete"], format!("row-{round}"));
    }
}

async fn approve_or_withdraw_never_both(spec: &str) {
    let ([a, b], stores) = pair(spec).await;
    let mut approved = 0;
    for round in 0..ROUNDS {
        let m = a.mint("alice", None).await;
        let id = propose(&a, &m, &format!("row-{round}")).await;
        pending_on(&b, &stores, &m, &id).await;
        let (before, _) = stored_in(&stores, &m.session_id).await;
        // The human approves on B while the agent withdraws on A.
        let withdrawal = json!({"confirmId": id});
        let (approve, withdraw) = tokio::join!(
            b.decide("alice", &m, &id, json!({"decision": "approve"})),
            a.lap(&m.token, "/withdraw", &withdrawal),
        );
        let (after, state) = settled(&stores, &m.session_id).await;
        match (approve.0, withdraw.status) {
            (200, 409) => {
                approved += 1;
                assert_eq!(
                    withdraw.body["error"]["detail"]
                        .as_str()
                        .map(|d| d.contains("approved")),
                    Some(true),
                    "round {round}: {}",
                    withdraw.body
                );
                assert_eq!(after, before + 1, "round {round}: the approval committed");
                assert_eq!(state["lastDelete"], format!("row-{round}"));
            }
            (409, 200) => {
                assert_eq!(
                    approve.1["error"]["detail"],
                    format!("confirmation {id} is already withdrawn"),
                    "round {round}"
                );
                assert_eq!(
                    after, before,
                    "round {round}: a withdrawn proposal never runs"
                );
            }
            other => panic!(
                "round {round}: approve {} and withdraw {} ({approve:?}, {})",
                other.0, other.1, withdraw.body
            ),
        }
        // The server that decided tells the agent the decision that won; the other one
        // does too, or (in one process, where nothing tells it of the approval's commit)
        // still waits for it.
        let outcome = a
            .lap(&m.token, "/confirm-result", &json!({"confirmId": id}))
            .await;
        let expected = if after == before {
            "withdrawn"
        } else {
            "confirmed"
        };
        for _ in 0..200 {
            let on_b = b
                .lap(&m.token, "/confirm-result", &json!({"confirmId": id}))
                .await;
            if on_b.body["status"] == expected {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let on_b = b
            .lap(&m.token, "/confirm-result", &json!({"confirmId": id}))
            .await;
        assert_eq!(
            on_b.body["status"], expected,
            "round {round}: {}",
            on_b.body
        );
        assert!(
            outcome.body["status"] == expected || outcome.body["status"] == "still-pending",
            "round {round}: {}",
            outcome.body
        );
    }
    eprintln!("approvals won {approved} of {ROUNDS} races");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_approvals_on_two_replicas_commit_once_on_postgres() {
    let pg = PgServer::start();
    two_approvals_commit_once(&pg.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_approvals_on_two_hosts_commit_once_on_sqlite() {
    let dir = TempDir::new("decisions");
    two_approvals_commit_once(&dir.file("d.db")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_approvals_on_two_hosts_commit_once_in_memory() {
    two_approvals_commit_once("memory").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approve_and_withdraw_on_two_replicas_on_postgres() {
    let pg = PgServer::start();
    approve_or_withdraw_never_both(&pg.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approve_and_withdraw_on_two_hosts_on_sqlite() {
    let dir = TempDir::new("withdraws");
    approve_or_withdraw_never_both(&dir.file("w.db")).await;
}

/// Closing a session on one replica stops it on the other: the delete is announced, the
/// other replica drops the session (its agent's calls answer 503 `paused`, a message is not
/// applied) and never loads it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_closed_on_one_replica_stops_on_the_other_on_postgres() {
    let pg = PgServer::start();
    let ([a, b], stores) = pair(&pg.url()).await;
    let m = a.mint("alice", None).await;
    // B holds the session in memory.
    let inc = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
    assert_eq!(b.lap(&m.token, "/message", &inc).await.status, 200);
    assert!(b.server.host().session(&m.session_id).is_some());

    let close = a
        .post_json(
            &format!("/agent/human/sessions/{}/close", m.session_id),
            Some("alice"),
            None,
            &json!({}),
        )
        .await;
    assert_eq!(close.status, 200, "{}", close.body);
    assert!(stores
        .sessions
        .load_session(&m.session_id)
        .await
        .expect("load")
        .is_none());
    // The announcement reaches B.
    let mut dropped = false;
    for _ in 0..300 {
        if b.server.host().session(&m.session_id).is_none() {
            dropped = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(dropped, "the other replica still holds the closed session");
    // B serves it no more (closing revoked its token), and does not bring it back.
    for _ in 0..3 {
        let state = b.lap(&m.token, "/state", &json!({})).await;
        assert_eq!(state.status, 403, "{}", state.body);
        let sent = b.lap(&m.token, "/message", &inc).await;
        assert_ne!(sent.status, 200, "{}", sent.body);
    }
    assert!(b.server.host().session(&m.session_id).is_none());
    assert!(stores
        .sessions
        .load_session(&m.session_id)
        .await
        .expect("load")
        .is_none());
}

/// A session closed by one host while another host (same store, one process, nothing
/// announced) holds it: the other host's next commit finds it gone, applies nothing and
/// closes it (no effect runs, no state published); it is never loaded again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_on_a_deleted_session_closes_it_on_sqlite() {
    let dir = TempDir::new("closed");
    let ([a, b], stores) = pair(&dir.file("c.db")).await;
    let m = a.mint("alice", None).await;
    let inc = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
    assert_eq!(b.lap(&m.token, "/message", &inc).await.status, 200);
    let close = a
        .post_json(
            &format!("/agent/human/sessions/{}/close", m.session_id),
            Some("alice"),
            None,
            &json!({}),
        )
        .await;
    assert_eq!(close.status, 200, "{}", close.body);
    let held = b.server.host().session(&m.session_id).expect("B holds it");
    let seq = held.published().seq;
    // The agent's token was revoked by the close: the app's own UI dispatches on B.
    let sent = held
        .dispatch_as_human(&json!({"type": "inc"}), DispatchOptions::default())
        .await;
    assert!(
        !matches!(sent, Ok(SendResult::Dispatched { .. })),
        "a message on a deleted session is not answered as applied: {sent:?}"
    );
    assert_eq!(held.published().seq, seq, "nothing was published");
    assert!(held.is_closed());
    assert!(b.server.host().session(&m.session_id).is_none());
    assert_eq!(b.lap(&m.token, "/state", &json!({})).await.status, 403);
    assert!(stores
        .sessions
        .load_session(&m.session_id)
        .await
        .expect("load")
        .is_none());
}
