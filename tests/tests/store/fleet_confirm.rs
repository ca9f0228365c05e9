//! Confirmations across a re-pair (issue 50, `docs/pairing.md` §A fleet of replicas): three
//! replicas of the relay example on one PostgreSQL; an LLui-protocol app (frames the test
//! writes) pairs with one, the agent's `/message` proposals are relayed there, and that
//! replica is killed with SIGKILL. While the app is away, `/confirm-result` answers 503
//! `paused`; once the app re-pairs with another replica, `/confirm-result` on any replica
//! answers each proposal as the killed replica would have: the decision made before the
//! crash, `still-pending`, then the decision the app sends on its new socket; an id no
//! replica relayed is still 400 `unknown confirmId`.

use std::time::Duration;

use agent_tests::lb::{mint_paired, RelayFleet};
use agent_tests::tab::Tab;
use serde_json::json;

use super::fleet_calls::{holder_where, lap, spawn_lap, PAIRING};

/// The agent proposes through `base`; the app (on `tab`) answers `pending-confirmation` with
/// `id`; the call answers the same once its `timeoutMs` is over.
async fn propose(tab: &mut Tab, base: &str, token: &str, id: &str) {
    let call = spawn_lap(
        base,
        token,
        "/message",
        json!({"msg": {"type": "inc"}, "timeoutMs": 300}),
    );
    let rpc = loop {
        let frame = tab.next().await;
        if frame["t"] == "rpc" {
            assert_eq!(frame["tool"], "send_message", "{frame}");
            break frame["id"].as_str().expect("id").to_owned();
        }
    };
    tab.reply(
        &rpc,
        json!({"status": "pending-confirmation", "confirmId": id}),
    )
    .await;
    let (status, _, body) = call.await.expect("message");
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "pending-confirmation", "confirmId": id})
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirm_result_answers_after_the_app_re_pairs_with_another_replica() {
    let mut fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 3, PAIRING, "1s");
    let (token, tid) = mint_paired(&fleet.base(0)).await;
    let mut tab = Tab::pair(&fleet.base(0), &token).await;
    holder_where(&fleet, &tid, Duration::from_secs(10), |i| i == 0).await;

    // Two proposals relayed to the app on replica 0 through replica 1; the human decides the
    // second there, before the crash.
    propose(&mut tab, &fleet.base(1), &token, "c1").await;
    propose(&mut tab, &fleet.base(1), &token, "c2").await;
    tab.send(
        json!({"t": "confirm-resolved", "confirmId": "c2", "outcome": "confirmed",
                    "stateAfter": {"count": 3}}),
    )
    .await;
    let (status, _, body) = lap(
        &fleet.base(2),
        &token,
        "/confirm-result",
        json!({"confirmId": "c2"}),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "confirmed", "stateAfter": {"count": 3}})
        )
    );

    // The socket's replica dies: while the app is away, a clear 503 paused.
    fleet.kill(0);
    drop(tab);
    let (status, reconnect, body) = lap(
        &fleet.base(1),
        &token,
        "/confirm-result",
        json!({"confirmId": "c1", "timeoutMs": 200}),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "paused", "{body}");
    assert_eq!(reconnect.as_deref(), Some("pending"));

    // The app re-pairs with replica 1. The decision made before the crash, read on any
    // replica; the undecided proposal is still pending (not an unknown id).
    let mut tab = Tab::pair(&fleet.base(1), &token).await;
    holder_where(&fleet, &tid, Duration::from_secs(10), |i| i == 1).await;
    for base in [fleet.base(2), fleet.base(1)] {
        let (status, _, body) =
            lap(&base, &token, "/confirm-result", json!({"confirmId": "c2"})).await;
        assert_eq!(
            (status, body),
            (
                200,
                json!({"status": "confirmed", "stateAfter": {"count": 3}})
            ),
            "{base}"
        );
        let (status, _, body) = lap(
            &base,
            &token,
            "/confirm-result",
            json!({"confirmId": "c1", "timeoutMs": 200}),
        )
        .await;
        assert_eq!(
            (status, body),
            (200, json!({"status": "still-pending"})),
            "{base}"
        );
    }

    // The human decides it in the app, on its new socket, while the agent waits.
    let waiting = spawn_lap(
        &fleet.base(2),
        &token,
        "/confirm-result",
        json!({"confirmId": "c1", "timeoutMs": 8000}),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    tab.send(
        json!({"t": "confirm-resolved", "confirmId": "c1", "outcome": "confirmed",
                    "stateAfter": {"count": 4}}),
    )
    .await;
    let (status, _, body) = waiting.await.expect("confirm-result");
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "confirmed", "stateAfter": {"count": 4}})
        )
    );

    // A proposal relayed before the crash and rejected after the re-pair, before any agent
    // asked this replica about it: the decision is the fleet's, read after one more crash.
    propose(&mut tab, &fleet.base(2), &token, "c3").await;
    tab.send(json!({"t": "confirm-resolved", "confirmId": "c3", "outcome": "user-cancelled"}))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    fleet.kill(1);
    drop(tab);
    let _tab = Tab::pair(&fleet.base(2), &token).await;
    holder_where(&fleet, &tid, Duration::from_secs(10), |i| i == 2).await;
    let (status, _, body) = lap(
        &fleet.base(2),
        &token,
        "/confirm-result",
        json!({"confirmId": "c1"}),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "confirmed", "stateAfter": {"count": 4}})
        )
    );
    let (status, _, body) = lap(
        &fleet.base(2),
        &token,
        "/confirm-result",
        json!({"confirmId": "c3"}),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "rejected", "reason": "user-cancelled"})
        )
    );

    // An id no replica relayed: 400, as on one process.
    let (status, _, body) = lap(
        &fleet.base(2),
        &token,
        "/confirm-result",
        json!({"confirmId": "never"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["detail"], "unknown confirmId: never",
        "{body}"
    );

    // What the fleet keeps of them: the store's rows for this token.
    let pool = sqlx::PgPool::connect(&fleet.pg.url()).await.expect("db");
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT confirm_id, decision FROM agent_paired_proposals WHERE tid = $1 \
         ORDER BY confirm_id",
    )
    .bind(&tid)
    .fetch_all(&pool)
    .await
    .expect("rows");
    assert_eq!(
        rows,
        vec![
            ("c1".to_owned(), Some("confirmed".to_owned())),
            ("c2".to_owned(), Some("confirmed".to_owned())),
            ("c3".to_owned(), Some("user-cancelled".to_owned())),
        ]
    );
    pool.close().await;
}
