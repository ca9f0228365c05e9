//! Confirmations and the human routes over real HTTP (`docs/semantics.md` §7, `docs/lap.md` §6).

use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::{start_app, Answer, Minted, TestServer, USER_HEADER};
use serde_json::{json, Value};
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::security::MemoryAuditSink;

/// Sends `delete` as the agent on a task; returns the join handle of its answer.
fn propose(
    t: &TestServer<Counter>,
    m: &Minted,
    id: &str,
    timeout_ms: u64,
) -> tokio::task::JoinHandle<Answer> {
    let body = json!({"msg":{"type":"delete","id":id},"timeoutMs":timeout_ms,"reason":"cleanup"});
    t.spawn_lap(&m.token, "/message", body)
}

#[tokio::test]
async fn approval_during_the_wait_answers_confirmed() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let call = propose(&t, &m, "99", 5000);
    let p = t.wait_for_pending("alice", &m, 1).await;
    assert_eq!(p[0]["variant"], "delete");
    assert_eq!(p[0]["payload"], json!({"id":"99"}));
    assert_eq!(p[0]["reason"], "cleanup");
    assert_eq!(p[0]["status"], "pending");
    let id = p[0]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36);
    // An agent token cannot decide.
    let a = t
        .post_json(
            &format!("/agent/human/sessions/{}/confirms/{id}", m.session_id),
            Some("alice"),
            Some(&m.token),
            &json!({"decision":"approve"}),
        )
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(
        a.body["error"]["detail"],
        "agent tokens cannot use human routes"
    );
    let (status, body) = t
        .decide("alice", &m, &id, json!({"decision":"approve"}))
        .await;
    assert_eq!((status, body), (200, json!({"status":"approved"})));
    let answer = call.await.unwrap().body;
    assert_eq!(answer["status"], "confirmed");
    assert_eq!(answer["stateAfter"]["lastDelete"], "99");
    assert!(answer.get("msg").is_none());
    // Deciding again → 409; unknown → 404; bad decision → 400.
    let (status, body) = t
        .decide("alice", &m, &id, json!({"decision":"reject"}))
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        body["error"]["detail"],
        format!("confirmation {id} is already approved")
    );
    assert_eq!(
        t.decide("alice", &m, "nope", json!({"decision":"approve"}))
            .await
            .0,
        404
    );
    assert_eq!(
        t.decide("alice", &m, &id, json!({"decision":"maybe"}))
            .await
            .0,
        400
    );
    // The log has proposed then confirmed (with the diff).
    let log = t.lap(&m.token, "/recent-actions", &json!({"n":2})).await;
    assert_eq!(log.body["entries"][0]["kind"], "confirmed");
    assert_eq!(
        log.body["entries"][0]["stateDiff"][0]["path"],
        "/lastDelete"
    );
    assert_eq!(log.body["entries"][1]["kind"], "proposed");
}

#[tokio::test]
async fn rejection_and_timeouts() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let call = propose(&t, &m, "42", 5000);
    let p = t.wait_for_pending("alice", &m, 1).await;
    let id = p[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        t.decide("alice", &m, &id, json!({"decision":"reject"}))
            .await
            .1,
        json!({"status":"rejected"})
    );
    assert_eq!(
        call.await.unwrap().body,
        json!({"status":"rejected","reason":"user-cancelled"})
    );
    // No decision in time → pending-confirmation; /confirm-result works later.
    let call = propose(&t, &m, "7", 100);
    let answer = call.await.unwrap().body;
    assert_eq!(answer["status"], "pending-confirmation");
    let id = answer["confirmId"].as_str().unwrap().to_string();
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": id, "timeoutMs": 10}),
        )
        .await;
    assert_eq!(a.body, json!({"status":"still-pending"}));
    t.decide("alice", &m, &id, json!({"decision":"approve"}))
        .await;
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": id, "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(a.body["status"], "confirmed");
    assert_eq!(a.body["stateAfter"]["lastDelete"], "7");
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "unknown"}),
        )
        .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.body["error"]["detail"], "unknown confirmId: unknown");
}

#[tokio::test]
async fn confirmations_expire_after_the_configured_age() {
    let clock = ManualClock::new(1_000_000);
    let t = TestServer::builder(Counter)
        .config(|c| {
            c.clock = Arc::new(clock.clone());
            c.confirm_max_age = std::time::Duration::from_millis(60_000);
        })
        .audit(Arc::new(MemoryAuditSink::new()))
        .start()
        .await;
    let m = t.mint("alice", None).await;
    let answer = propose(&t, &m, "42", 50).await.unwrap().body;
    assert_eq!(answer["status"], "pending-confirmation");
    let id = answer["confirmId"].as_str().unwrap().to_string();
    // Exactly the maximum age is not yet expired.
    clock.advance(60_000);
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": id, "timeoutMs": 1500}),
        )
        .await;
    assert_eq!(a.body, json!({"status":"still-pending"}));
    clock.advance(1);
    // The session sweeps once a second: the waiting poll sees the expiry.
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": id, "timeoutMs": 3000}),
        )
        .await;
    assert_eq!(a.body, json!({"status":"rejected","reason":"timeout"}));
    assert!(t.pending("alice", &m).await.is_empty());
    let (status, body) = t
        .decide("alice", &m, &id, json!({"decision":"approve"}))
        .await;
    assert_eq!(status, 409, "{body}");
    let s = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(s.body["state"]["lastDelete"], Value::Null);
}

#[tokio::test]
async fn an_edited_approval_applies_the_humans_message() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let call = propose(&t, &m, "42", 5000);
    let id = t.next_confirm_id("alice", &m).await;
    let (s, b) = t
        .decide(
            "alice",
            &m,
            &id,
            json!({"decision":"approve","msg":{"type":"inc"}}),
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(
        b["error"]["detail"],
        "msg.type must be \"delete\": an edit cannot change the variant"
    );
    let (s, b) = t
        .decide(
            "alice",
            &m,
            &id,
            json!({"decision":"approve","msg":{"type":"delete"}}),
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(b["error"]["detail"], "id: required field is missing");
    assert_eq!(t.pending("alice", &m).await.len(), 1);
    let (s, _) = t
        .decide(
            "alice",
            &m,
            &id,
            json!({"decision":"approve","msg":{"type":"delete","id":"43"}}),
        )
        .await;
    assert_eq!(s, 200);
    let answer = call.await.unwrap().body;
    assert_eq!(answer["status"], "confirmed");
    assert_eq!(answer["stateAfter"]["lastDelete"], "43");
    assert_eq!(answer["msg"], json!({"type":"delete","id":"43"}));
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["status", "stateAfter", "msg", "seq"]);
}

#[tokio::test]
async fn human_route_access_rules() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let path = format!("/agent/human/sessions/{}", m.session_id);
    assert_eq!(t.get(&path, None).await.status, 401);
    let a = t.get(&path, Some("bob")).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body["error"]["detail"], "unknown session or not yours");
    assert_eq!(
        t.get("/agent/human/sessions/unknown", Some("alice"))
            .await
            .status,
        403
    );
    let view = t.get(&path, Some("alice")).await;
    for key in ["state", "actions", "pending", "log", "lastEventId"] {
        assert!(view.body.get(key).is_some(), "{key}");
    }
    // Content type and method.
    let req = t
        .request(reqwest::Method::POST, &format!("{path}/dispatch"))
        .header(USER_HEADER, "alice")
        .header("content-type", "text/plain")
        .body("{}");
    assert_eq!(t.send(req).await.status, 415);
    let req = t
        .request(reqwest::Method::POST, &format!("{path}/dispatch"))
        .header(USER_HEADER, "alice")
        .header("content-type", "application/json; charset=utf-8")
        .body(json!({"msg":{"type":"signOut"}}).to_string());
    let a = t.send(req).await;
    assert_eq!(
        a.body["status"], "dispatched",
        "human-only is fine for the human"
    );
    assert_eq!(
        t.get(&format!("{path}/dispatch"), Some("alice"))
            .await
            .status,
        405
    );
    // The human's requiresConfirm dispatch applies directly; it is not logged.
    let a = t
        .post_json(
            &format!("{path}/dispatch"),
            Some("alice"),
            None,
            &json!({"msg":{"type":"delete","id":"5"},"includeState":true}),
        )
        .await;
    assert_eq!(a.body["stateAfter"]["lastDelete"], "5");
    let a = t
        .post_json(
            &format!("{path}/dispatch"),
            Some("alice"),
            None,
            &json!({"msg":{"type":"setCount"}}),
        )
        .await;
    assert_eq!(a.body["reason"], "invalid");
    assert_eq!(
        t.lap(&m.token, "/recent-actions", &json!({})).await.body["entries"],
        json!([])
    );
    let list = t.get("/agent/human/sessions", Some("alice")).await;
    assert_eq!(list.body["sessions"][0]["sessionId"], m.session_id.as_str());
    assert_eq!(list.body["sessions"][0]["agents"][0]["tid"], m.tid.as_str());
    // Console page.
    let page = t
        .send(t.request(reqwest::Method::GET, "/agent/console"))
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(
        t.send(t.request(reqwest::Method::POST, "/agent/console"))
            .await
            .status,
        405
    );
}
