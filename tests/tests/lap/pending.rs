//! An agent's own proposals over real HTTP and MCP (`docs/lap.md` §5.8, `docs/semantics.md` §7):
//! `proposed` log entries carry the `confirmId`; `/pending` lists the caller's undecided
//! proposals; `/withdraw` takes one back (the human's card goes, `/confirm-result` answers
//! `withdrawn`); another token's proposal or a decided one is refused; a durable store keeps
//! the withdrawal across a restart (SQLite and PostgreSQL).

use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::mcp::McpAgent;
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::{start_app, Minted, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::security::MemoryAuditSink;
use tea_agent_runtime::store::Stores;

/// Proposes `delete {id}` as `m`, answered `pending-confirmation` after a short wait.
async fn propose(t: &TestServer<Counter>, m: &Minted, id: &str, reason: Option<&str>) -> String {
    let mut body = json!({"msg":{"type":"delete","id":id},"timeoutMs":10});
    if let Some(r) = reason {
        body["reason"] = json!(r);
    }
    let a = t.lap(&m.token, "/message", &body).await;
    assert_eq!(a.body["status"], "pending-confirmation", "{}", a.body);
    a.body["confirmId"].as_str().unwrap().to_string()
}

fn error(a: &agent_tests::Answer) -> (u16, Value, Value) {
    (
        a.status,
        a.body["error"]["code"].clone(),
        a.body["error"]["detail"].clone(),
    )
}

#[tokio::test]
async fn an_agent_lists_and_withdraws_only_its_own_proposals() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = TestServer::builder(Counter)
        .audit(audit.clone())
        .start()
        .await;
    let a = t.mint("alice", None).await;
    let b = t.mint("alice", Some(&a.session_id)).await;
    let session = t.server.host().session(&a.session_id).unwrap();
    let mut events = session.subscribe(Some(&session.last_event_id().to_string()));

    let first = propose(&t, &a, "42", None).await;
    let second = propose(&t, &a, "43", Some("tidy up")).await;
    let others = propose(&t, &b, "44", None).await;

    // The `proposed` entries carry their confirmId.
    let log = t
        .lap(&a.token, "/recent-actions", &json!({"kind":"proposed"}))
        .await
        .body;
    let ids: Vec<&Value> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["confirmId"])
        .collect();
    assert_eq!(ids, [&json!(others), &json!(second), &json!(first)]);

    // Each token sees its own, oldest first.
    let mine = t.lap(&a.token, "/pending", &json!({})).await;
    assert_eq!(mine.status, 200);
    let pending = mine.body["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0]["confirmId"], first.as_str());
    assert_eq!(pending[0]["variant"], "delete");
    assert_eq!(pending[0]["msg"], json!({"type":"delete","id":"42"}));
    assert_eq!(pending[0]["reason"], Value::Null);
    assert!(pending[0]["proposedAt"].as_u64().unwrap() > 0);
    assert_eq!(pending[1]["reason"], "tidy up");
    let keys: Vec<&str> = pending[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["confirmId", "variant", "msg", "reason", "proposedAt"]
    );
    let theirs = t.lap(&b.token, "/pending", &json!({})).await.body;
    assert_eq!(theirs["pending"].as_array().unwrap().len(), 1);
    assert_eq!(theirs["pending"][0]["confirmId"], others.as_str());

    // Another token's proposal, an unknown id, a missing id: refused, nothing changes.
    let refused = t
        .lap(&b.token, "/withdraw", &json!({"confirmId": first}))
        .await;
    assert_eq!(
        error(&refused),
        (
            403,
            json!("forbidden"),
            json!(format!(
                "confirmation {first} was proposed by another agent token"
            ))
        )
    );
    let unknown = t
        .lap(&a.token, "/withdraw", &json!({"confirmId": "nope"}))
        .await;
    assert_eq!(
        error(&unknown),
        (400, json!("invalid"), json!("unknown confirmId: nope"))
    );
    let missing = t.lap(&a.token, "/withdraw", &json!({})).await;
    assert_eq!(
        error(&missing),
        (400, json!("invalid"), json!("confirmId must be a string"))
    );
    assert_eq!(session.pending().len(), 3);

    // Withdrawn: the answer, the human's card, the outcome, the log, the audit.
    let withdrawn = t
        .lap(&a.token, "/withdraw", &json!({"confirmId": first}))
        .await;
    assert_eq!(
        (withdrawn.status, withdrawn.body),
        (200, json!({"status":"withdrawn"}))
    );
    let left: Vec<String> = session.pending().into_iter().map(|e| e.id).collect();
    assert_eq!(left, [second.clone(), others.clone()]);
    let view = t
        .get(
            &format!("/agent/human/sessions/{}", a.session_id),
            Some("alice"),
        )
        .await
        .body;
    assert_eq!(view["pending"].as_array().unwrap().len(), 2);
    let outcome = t
        .lap(&a.token, "/confirm-result", &json!({"confirmId": first}))
        .await
        .body;
    assert_eq!(outcome, json!({"status":"withdrawn"}));
    let entry = &t
        .lap(
            &a.token,
            "/recent-actions",
            &json!({"n":1,"kind":"rejected"}),
        )
        .await
        .body["entries"][0];
    assert_eq!(entry["detail"], "withdrawn");
    assert_eq!(entry["confirmId"], first.as_str());
    assert_eq!(entry["tid"], a.tid.as_str());
    let audited: Vec<_> = audit
        .entries()
        .into_iter()
        .filter(|e| e.event.as_str() == "confirm-withdrawn")
        .collect();
    assert_eq!(audited.len(), 1);
    assert_eq!(
        audited[0].detail,
        json!({"variant":"delete","confirmId": first})
    );
    assert_eq!(audited[0].tid.as_deref(), Some(a.tid.as_str()));
    // The human's event stream takes the card off: a `confirm` event with status `withdrawn`.
    let mut saw = false;
    while let Ok(Some(event)) =
        tokio::time::timeout(std::time::Duration::from_secs(2), events.next()).await
    {
        let data = event.data();
        if event.name == "confirm" && data["id"] == first.as_str() {
            if data["status"] == "withdrawn" {
                saw = true;
                break;
            }
            assert_eq!(data["status"], "pending");
        }
    }
    assert!(saw, "a confirm event with status withdrawn");

    // Decided: withdrawn again, or decided by the human first → 409; the human cannot approve
    // a withdrawn card.
    let again = t
        .lap(&a.token, "/withdraw", &json!({"confirmId": first}))
        .await;
    assert_eq!(
        error(&again),
        (
            409,
            json!("conflict"),
            json!(format!("confirmation {first} is already withdrawn"))
        )
    );
    let (status, _) = t
        .decide("alice", &a, &first, json!({"decision":"approve"}))
        .await;
    assert_eq!(status, 409);
    t.decide("alice", &a, &second, json!({"decision":"reject"}))
        .await;
    let decided = t
        .lap(&a.token, "/withdraw", &json!({"confirmId": second}))
        .await;
    assert_eq!(
        error(&decided),
        (
            409,
            json!("conflict"),
            json!(format!("confirmation {second} is already rejected"))
        )
    );
    assert_eq!(
        t.lap(&a.token, "/pending", &json!({})).await.body,
        json!({"pending":[]})
    );
}

#[tokio::test]
async fn confirm_result_of_another_tokens_proposal_answers_as_unknown() {
    let t = start_app(Counter).await;
    let a = t.mint("alice", None).await;
    let b = t.mint("alice", Some(&a.session_id)).await;
    let mine = propose(&t, &a, "42", None).await;
    let poll = |id: &str| json!({"confirmId": id, "timeoutMs": 10});

    // The proposer reads its outcome; another token of the same session gets exactly the
    // answer of an id never proposed, so ids cannot be probed.
    let own = t.lap(&a.token, "/confirm-result", &poll(&mine)).await;
    assert_eq!(
        (own.status, &own.body),
        (200, &json!({"status":"still-pending"}))
    );
    let theirs = t.lap(&b.token, "/confirm-result", &poll(&mine)).await;
    let unknown = t.lap(&b.token, "/confirm-result", &poll("nope")).await;
    assert_eq!(
        error(&theirs),
        (
            400,
            json!("invalid"),
            json!(format!("unknown confirmId: {mine}"))
        )
    );
    assert_eq!(
        error(&unknown),
        (400, json!("invalid"), json!("unknown confirmId: nope"))
    );

    // Decided, it stays hidden from the other token.
    let (status, _) = t
        .decide("alice", &a, &mine, json!({"decision":"reject"}))
        .await;
    assert_eq!(status, 200);
    let own = t.lap(&a.token, "/confirm-result", &poll(&mine)).await;
    assert_eq!(own.body["status"], "rejected", "{}", own.body);
    let theirs = t.lap(&b.token, "/confirm-result", &poll(&mine)).await;
    assert_eq!(error(&theirs).0, 400, "{}", theirs.body);
}

#[tokio::test]
async fn a_message_waiting_on_its_proposal_answers_withdrawn() {
    let t = start_app(Counter).await;
    let a = t.mint("alice", None).await;
    let call = t.spawn_lap(
        &a.token,
        "/message",
        json!({"msg":{"type":"delete","id":"9"},"timeoutMs":10_000}),
    );
    let id = t.next_confirm_id("alice", &a).await;
    let w = t
        .lap(&a.token, "/withdraw", &json!({"confirmId": id}))
        .await;
    assert_eq!(w.status, 200);
    let answer = call.await.unwrap().body;
    assert_eq!(answer, json!({"status":"withdrawn"}));
    assert_eq!(
        t.lap(&a.token, "/state", &json!({})).await.body["state"]["lastDelete"],
        Value::Null
    );
}

#[tokio::test]
async fn mcp_tools_list_and_withdraw() {
    let t = start_app(Counter).await;
    let a = t.mint("alice", None).await;
    let id = propose(&t, &a, "5", Some("why not")).await;
    let agent = McpAgent::connect(&t.base, &a.token).await;
    let listed = agent.call("list_pending", json!({})).await;
    assert_eq!(listed["pending"][0]["confirmId"], id.as_str());
    assert_eq!(listed["pending"][0]["reason"], "why not");
    let withdrawn = agent
        .call("withdraw_proposal", json!({"confirmId": id}))
        .await;
    assert_eq!(withdrawn, json!({"status":"withdrawn"}));
    let polled = agent
        .call("get_confirm_result", json!({"confirmId": id}))
        .await;
    assert_eq!(polled, json!({"status":"withdrawn"}));
    assert_eq!(
        agent.call("list_pending", json!({})).await,
        json!({"pending":[]})
    );
    agent.close().await;
}

/// An in-process server on the stores at `spec`.
async fn durable(spec: &str) -> (TestServer<Counter>, tokio::task::JoinHandle<()>, Stores) {
    let stores = Stores::open(spec).await.expect("store");
    let (t, task) = TestServer::builder(Counter)
        .stores(&stores)
        .start_stoppable()
        .await;
    (t, task, stores)
}

/// A withdrawal is stored: after a restart the card stays gone and the outcome stays
/// `withdrawn`.
async fn withdrawal_survives_a_restart(spec: &str) {
    let (t, task, stores) = durable(spec).await;
    let a = t.mint("alice", None).await;
    let kept = propose(&t, &a, "1", None).await;
    let gone = propose(&t, &a, "2", None).await;
    let w = t
        .lap(&a.token, "/withdraw", &json!({"confirmId": gone}))
        .await;
    assert_eq!(w.status, 200);
    // The confirmation saver writes after every change.
    let mut stored = String::new();
    for _ in 0..200 {
        stored = stores
            .sessions
            .load_session(&a.session_id)
            .await
            .expect("load")
            .expect("stored")
            .confirms;
        if stored.contains("withdrawn") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(stored.contains("withdrawn"), "{stored}");
    task.abort();
    let _ = task.await;
    drop(t);

    let (t, task, _stores) = durable(spec).await;
    let view = t
        .get(
            &format!("/agent/human/sessions/{}", a.session_id),
            Some("alice"),
        )
        .await
        .body;
    let pending: Vec<&Value> = view["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(pending, [&json!(kept)]);
    let outcome = t
        .lap(&a.token, "/confirm-result", &json!({"confirmId": gone}))
        .await
        .body;
    assert_eq!(outcome, json!({"status":"withdrawn"}));
    let listed = t.lap(&a.token, "/pending", &json!({})).await.body;
    assert_eq!(listed["pending"].as_array().unwrap().len(), 1);
    task.abort();
}

#[tokio::test]
async fn withdrawal_is_stored_on_sqlite() {
    let dir = TempDir::new("withdraw");
    withdrawal_survives_a_restart(&dir.file("w.db")).await;
}

#[tokio::test]
async fn withdrawal_is_stored_on_postgres() {
    let pg = PgServer::start();
    withdrawal_survives_a_restart(&pg.url()).await;
}

/// Paired sessions (`docs/pairing.md` §LAP → frames): the relay lists what each relayed
/// `/message` proposed until the app resolves it; a withdrawal becomes the outcome and is pushed
/// to the app as `confirm-expire`; the app's later `user-cancelled` does not undo it. `observe`
/// relays the app's `seq` when it sends one.
#[tokio::test]
async fn paired_sessions_list_and_withdraw_through_the_relay() {
    use agent_tests::tab::Tab;

    /// The next frame of type `t`, skipping others (`active`, `log-push`).
    async fn next_of(tab: &mut Tab, t: &str) -> Value {
        loop {
            let frame = tab.next().await;
            if frame["t"] == t {
                return frame;
            }
        }
    }

    let t = agent_tests::paired::server().await;
    let m = agent_tests::paired::mint(&t).await;
    let mut tab = Tab::pair(&t.base, &m.token).await;

    let call = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg":{"type":"delete","id":"5"},"reason":"old row","timeoutMs":50}),
    );
    let rpc = next_of(&mut tab, "rpc").await;
    assert_eq!(rpc["tool"], "send_message");
    tab.reply(
        rpc["id"].as_str().unwrap(),
        json!({"status":"pending-confirmation","confirmId":"c1"}),
    )
    .await;
    let answer = call.await.unwrap().body;
    assert_eq!(
        answer,
        json!({"status":"pending-confirmation","confirmId":"c1"})
    );

    let listed = t.lap(&m.token, "/pending", &json!({})).await.body;
    let pending = listed["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{listed}");
    assert_eq!(pending[0]["confirmId"], "c1");
    assert_eq!(pending[0]["variant"], "delete");
    assert_eq!(pending[0]["msg"], json!({"type":"delete","id":"5"}));
    assert_eq!(pending[0]["reason"], "old row");
    assert!(pending[0]["proposedAt"].as_u64().unwrap() > 0);

    let unknown = t
        .lap(&m.token, "/withdraw", &json!({"confirmId":"zz"}))
        .await;
    assert_eq!(
        error(&unknown),
        (400, json!("invalid"), json!("unknown confirmId: zz"))
    );
    let withdrawn = t
        .lap(&m.token, "/withdraw", &json!({"confirmId":"c1"}))
        .await;
    assert_eq!(
        (withdrawn.status, withdrawn.body),
        (200, json!({"status":"withdrawn"}))
    );
    let expire = next_of(&mut tab, "confirm-expire").await;
    assert_eq!(expire["confirmId"], "c1");
    // The app voids it and reports a cancellation: it stays withdrawn.
    tab.send(json!({"t":"confirm-resolved","confirmId":"c1","outcome":"user-cancelled"}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let polled = t
        .lap(&m.token, "/confirm-result", &json!({"confirmId":"c1"}))
        .await
        .body;
    assert_eq!(polled, json!({"status":"withdrawn"}));
    let again = t
        .lap(&m.token, "/withdraw", &json!({"confirmId":"c1"}))
        .await;
    assert_eq!(
        error(&again),
        (
            409,
            json!("conflict"),
            json!("confirmation c1 is already withdrawn")
        )
    );
    assert_eq!(
        t.lap(&m.token, "/pending", &json!({})).await.body,
        json!({"pending":[]})
    );

    // Decided by the human in the app first: refused.
    let call = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg":{"type":"delete","id":"6"},"timeoutMs":50}),
    );
    let rpc = next_of(&mut tab, "rpc").await;
    tab.reply(
        rpc["id"].as_str().unwrap(),
        json!({"status":"pending-confirmation","confirmId":"c2"}),
    )
    .await;
    call.await.unwrap();
    tab.send(json!({"t":"confirm-resolved","confirmId":"c2","outcome":"confirmed","stateAfter":{"count":0}}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let decided = t
        .lap(&m.token, "/withdraw", &json!({"confirmId":"c2"}))
        .await;
    assert_eq!(
        error(&decided),
        (
            409,
            json!("conflict"),
            json!("confirmation c2 is already confirmed")
        )
    );

    let observed = t.spawn_lap(&m.token, "/observe", json!({}));
    let rpc = next_of(&mut tab, "rpc").await;
    assert_eq!(rpc["tool"], "observe");
    tab.reply(
        rpc["id"].as_str().unwrap(),
        json!({"state": {"count": 3}, "actions": [], "context": null, "seq": 7}),
    )
    .await;
    let observed = observed.await.unwrap().body;
    assert_eq!(observed["seq"], 7);
    assert_eq!(observed["state"]["count"], 3);
}
