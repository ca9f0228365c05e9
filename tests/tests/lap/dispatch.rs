//! `/message`, `/would-dispatch`, reads and the log over real HTTP (`docs/semantics.md` §5–§9,
//! `docs/lap.md` §5.5–§5.7).

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_examples::todo::TodoApp;
use agent_tests::probe::Probe;
use agent_tests::{start_app, TestServer};
use serde_json::json;
use tea_agent_runtime::config::ActionGates;

#[tokio::test]
async fn dispatched_envelope_and_human_only_gate() {
    let t = start_app(Probe).await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"inc"},"waitFor":"idle"}),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["status"], "dispatched");
    assert_eq!(a.body["stateDiff"][0]["path"], "/count");
    assert_eq!(a.body["drain"]["effectsObserved"], 1);
    assert_eq!(a.body["drain"]["timedOut"], false);
    assert!(a.body.get("stateAfter").is_none());
    // Human-only: rejected, never reaches update.
    let a = t
        .lap(&m.token, "/message", &json!({"msg":{"type":"clickButton"}}))
        .await;
    assert_eq!(
        a.body,
        json!({"status":"rejected","reason":"human-only","detail":"\"click button\" can only be triggered by the user (human-only action)"})
    );
    let s = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(s.body["state"]["applied"], json!(["inc"]));
    // The redacted secret never shows.
    assert!(s.body["state"].get("secret").is_none());
    // Listing never shows the human-only binding.
    let a = t.lap(&m.token, "/actions", &json!({})).await;
    let variants: Vec<&str> = a.body["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, vec!["inc"]);
}

/// The probe binds only `inc`: its other variants are sent with the action gates advisory, so
/// that these tests see validation and the drain, not the `unavailable` refusal.
async fn probe_with_advisory_gates() -> TestServer<Probe> {
    TestServer::builder(Probe)
        .config(|c| c.action_gates = ActionGates::Advisory)
        .start()
        .await
}

#[tokio::test]
async fn invalid_payloads_are_rejected_with_details() {
    let t = probe_with_advisory_gates().await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(&m.token, "/message", &json!({"msg":{"type":"set"}}))
        .await;
    assert_eq!(a.body["status"], "rejected");
    assert_eq!(a.body["reason"], "invalid");
    assert_eq!(a.body["detail"], "value: required field is missing");
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"set","value":500}}),
        )
        .await;
    assert!(a.body["detail"]
        .as_str()
        .unwrap()
        .contains("violates `@validates(\"v >= 0 && v <= 100\")`"));
    let a = t
        .lap(&m.token, "/message", &json!({"msg":{"type":"UnknownMsg"}}))
        .await;
    assert!(a.body["detail"].as_str().unwrap().contains("UnknownMsg"));
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"setRaw","n":3000000000u64}}),
        )
        .await;
    assert!(a.body["detail"]
        .as_str()
        .unwrap()
        .starts_with("msg does not deserialize: "));
    // Each rejection is a `blocked` log entry and shapes describe_context.
    let ctx = t.lap(&m.token, "/context", &json!({})).await;
    let hint = ctx.body["context"]["hints"][0].as_str().unwrap();
    assert!(hint.starts_with("LAST DISPATCH REJECTED: setRaw — msg does not deserialize"));
    let log = t
        .lap(&m.token, "/recent-actions", &json!({"kind":"blocked"}))
        .await;
    assert_eq!(log.body["entries"].as_array().unwrap().len(), 4);
    let s = t.lap(&m.token, "/state", &json!({"path":"/applied"})).await;
    assert_eq!(s.body["state"], json!([]));
}

#[tokio::test]
async fn drain_errors_timeouts_and_panics() {
    let t = probe_with_advisory_gates().await;
    let m = t.mint("alice", None).await;
    // A panicking update is still a commit; the session keeps working.
    let a = t
        .lap(&m.token, "/message", &json!({"msg":{"type":"crash"}}))
        .await;
    assert_eq!(a.body["status"], "dispatched");
    assert_eq!(
        a.body["drain"]["errors"],
        json!([{"kind":"error","message":"update panicked: scoring crashed: bad row"}])
    );
    let a = t
        .lap(&m.token, "/message", &json!({"msg":{"type":"inc"}}))
        .await;
    assert_eq!(a.body["drain"]["errors"], json!([]));
    assert_eq!(a.body["stateDiff"][0]["value"], 1);
    // An effect failing inside the quiet window.
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"failLater","afterMs":10},"drainQuietMs":40}),
        )
        .await;
    assert_eq!(
        a.body["drain"]["errors"],
        json!([{"kind":"unhandledrejection","message":"effect failed: mid-drain failure"}])
    );
    // A session that never goes quiet hits the cap.
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"ticks","times":40,"everyMs":10},"drainQuietMs":50,"timeoutMs":120}),
        )
        .await;
    assert_eq!(a.body["drain"]["timedOut"], true);
    assert!(a.body["drain"]["effectsObserved"].as_u64().unwrap() > 1);
    assert!(a.body["drain"]["durationMs"].as_u64().unwrap() >= 100);
    // timeoutMs 0 answers at once, the message is still applied.
    let before = t.lap(&m.token, "/state", &json!({"path":"/applied"})).await;
    let n = before.body["state"].as_array().unwrap().len();
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"inc"},"timeoutMs":0}),
        )
        .await;
    assert_eq!(a.body["drain"]["timedOut"], true);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = t.lap(&m.token, "/state", &json!({"path":"/applied"})).await;
    assert!(after.body["state"].as_array().unwrap().len() > n);
}

#[tokio::test]
async fn drained_waits_for_the_effect_round_trip() {
    let t = start_app(TodoApp::default()).await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"save"},"drainQuietMs":150,"includeState":true}),
        )
        .await;
    assert_eq!(a.body["status"], "dispatched");
    assert_eq!(a.body["drain"]["effectsObserved"], 2, "{}", a.body);
    assert_eq!(a.body["stateAfter"]["save"], "saved");
    assert_eq!(a.body["stateAfter"]["saves"], 1);
    // The secret is redacted everywhere.
    assert!(a.body["stateAfter"].get("apiKey").is_none());
    // `idle` returns after the message's own commit, before the save finishes.
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"save"},"waitFor":"idle","includeState":true}),
        )
        .await;
    assert_eq!(a.body["drain"]["effectsObserved"], 1);
    assert_eq!(a.body["stateAfter"]["save"], "saving");
}

#[tokio::test]
async fn state_diffs_chain_to_the_final_state() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let first = t.lap(&m.token, "/observe", &json!({})).await;
    let mut doc = first.body["state"].clone();
    let msgs = [
        json!({"type":"inc"}),
        json!({"type":"setCount","value":41}),
        json!({"type":"inc"}),
        json!({"type":"nav","to":"reports"}),
        json!({"type":"bulkAdd","amounts":[1,2,3]}),
        json!({"type":"dec"}),
        json!({"type":"reset"}),
        json!({"type":"setCount","value":7}),
    ];
    for msg in msgs {
        let a = t.lap(&m.token, "/message", &json!({ "msg": msg })).await;
        assert_eq!(a.body["status"], "dispatched", "{}", a.body);
        let patch: json_patch::Patch = serde_json::from_value(a.body["stateDiff"].clone()).unwrap();
        json_patch::patch(&mut doc, &patch).unwrap();
    }
    let last = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(doc, last.body["state"]);
    assert_eq!(doc, json!({"count":7,"lastDelete":null,"view":"reports"}));
}

#[tokio::test]
async fn would_dispatch_predicts_without_committing() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(
            &m.token,
            "/would-dispatch",
            &json!({"msg":{"type":"bulkAdd","amounts":[5]}}),
        )
        .await;
    assert_eq!(
        a.body,
        json!({"status":"predicted","stateDiff":[{"op":"replace","path":"/count","value":5}],"effects":[{"type":"audit/write","amounts":[5]}]})
    );
    let a = t
        .lap(
            &m.token,
            "/would-dispatch",
            &json!({"msg":{"type":"Bogus"}}),
        )
        .await;
    assert_eq!(a.body["status"], "schema-mismatch");
    assert_eq!(a.body["errors"][0]["code"], "unknown-variant");
    let a = t
        .lap(
            &m.token,
            "/would-dispatch",
            &json!({"msg":{"type":"signOut"}}),
        )
        .await;
    assert_eq!(a.body["reason"], "human-only");
    let s = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(s.body["state"]["count"], 0);
    let log = t.lap(&m.token, "/recent-actions", &json!({"n":10})).await;
    let intents: Vec<&str> = log.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["intent"].as_str().unwrap())
        .collect();
    assert_eq!(
        intents,
        vec![
            "Read app state",
            "would_dispatch",
            "would_dispatch",
            "would_dispatch"
        ]
    );
}

#[tokio::test]
async fn reads_and_narration() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(&m.token, "/query-state", &json!({"path":"/view"}))
        .await;
    assert_eq!(a.body, json!({"found":true,"value":"home"}));
    let a = t
        .lap(&m.token, "/query-state", &json!({"path":"/missing"}))
        .await;
    assert_eq!(a.body["found"], false);
    let a = t.lap(&m.token, "/query-dom", &json!({"name":"inc"})).await;
    assert_eq!(a.body["elements"][0]["text"], "+");
    let a = t.lap(&m.token, "/describe-visible", &json!({})).await;
    assert_eq!(a.body["source"], "data-agent");
    assert_eq!(a.body["outline"][2]["actionVariant"], "inc");
    let a = t
        .lap(&m.token, "/narrate", &json!({"text":"thinking"}))
        .await;
    assert_eq!(a.body, json!({"ok":true}));
    let log = t.lap(&m.token, "/recent-actions", &json!({"n":1})).await;
    let e = &log.body["entries"][0];
    assert_eq!(e["kind"], "narrate");
    assert_eq!(e["intent"], "Agent narrated");
    assert_eq!(e["detail"], "thinking");
    assert!(e["id"].as_str().unwrap().starts_with("narrate-"));
    // observe carries everything.
    let a = t.lap(&m.token, "/observe", &json!({})).await;
    for key in ["state", "actions", "description", "context"] {
        assert!(a.body.get(key).is_some(), "{key}");
    }
    let variants: Vec<&str> = a.body["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        variants,
        vec!["inc", "dec", "reset", "setCount", "delete", "nav", "bulkAdd"]
    );
    assert_eq!(
        a.body["actions"][6]["payloadHint"],
        json!({"type":"bulkAdd","amounts":[0]})
    );
}

#[tokio::test]
async fn wait_for_change_and_revoke_ends_long_polls() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let a = t.lap(&m.token, "/wait", &json!({"timeoutMs":200})).await;
    assert_eq!(a.body, json!({"status":"timeout","stateAfter":null}));
    let waiter = t.spawn_lap(&m.token, "/wait", json!({"path":"/count","timeoutMs":5000}));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let human = t
        .human_dispatch("alice", &m, json!({"type":"nav","to":"reports"}))
        .await;
    assert_eq!(human.body["status"], "dispatched");
    t.human_dispatch("alice", &m, json!({"type":"inc"})).await;
    let got = waiter.await.unwrap().body;
    assert_eq!(got["status"], "changed");
    assert_eq!(got["stateAfter"]["count"], 1);
    // A pending /wait of a token ends with 403 when it is revoked.
    let waiter = t.spawn_lap(&m.token, "/wait", json!({"timeoutMs":10000}));
    tokio::time::sleep(Duration::from_millis(100)).await;
    t.post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(waiter.await.unwrap().status, 403);
}

#[tokio::test]
async fn idempotency_keys_replay_the_first_answer() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let body = json!({"msg":{"type":"inc"},"idempotencyKey":"k1","waitFor":"idle"});
    let first = t
        .send(
            t.request(reqwest::Method::POST, "/agent/lap/v1/message")
                .bearer_auth(&m.token)
                .body(body.to_string()),
        )
        .await;
    assert_eq!(first.body["status"], "dispatched");
    let again = t
        .send(
            t.request(reqwest::Method::POST, "/agent/lap/v1/message")
                .bearer_auth(&m.token)
                .body(body.to_string()),
        )
        .await;
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let s = t.lap(&m.token, "/state", &json!({"path":"/count"})).await;
    assert_eq!(s.body["state"], 1);
    // The same key for another message → 409.
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"dec"},"idempotencyKey":"k1"}),
        )
        .await;
    assert_eq!(a.status, 409);
    assert_eq!(a.body["error"]["code"], "conflict");
    // Another token of the same session is another scope.
    let other = t.mint("alice", Some(&m.session_id)).await;
    let a = t.lap(&other.token, "/message", &body).await;
    assert!(a.headers.get("idempotent-replayed").is_none());
    let s = t.lap(&m.token, "/state", &json!({"path":"/count"})).await;
    assert_eq!(s.body["state"], 2);
    // Two concurrent calls with one key: one dispatch, equal answers.
    let concurrent = json!({"msg":{"type":"inc"},"idempotencyKey":"k2","waitFor":"idle"});
    let (x, y) = tokio::join!(
        t.lap(&m.token, "/message", &concurrent),
        t.lap(&m.token, "/message", &concurrent)
    );
    assert_eq!(x.body, y.body);
    let s = t.lap(&m.token, "/state", &json!({"path":"/count"})).await;
    assert_eq!(s.body["state"], 3);
    assert_eq!(
        t.lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"inc"},"idempotencyKey":""})
        )
        .await
        .status,
        400
    );
}

#[tokio::test]
async fn idle_counts_the_commits_queued_ahead_and_their_errors() {
    use tea_agent_runtime::session::DispatchOptions;
    use tea_agent_schema::protocol::{SendResult, WaitFor};

    let t = start_app(Probe).await;
    let session = t
        .server
        .host()
        .create_session(Some("alice".into()))
        .unwrap();
    let mut none = DispatchOptions::default();
    none.wait_for = WaitFor::None;
    // On this single-threaded test runtime the session task cannot run before the idle call
    // awaits, so the panic and the increment commit after its enqueue, ahead of its own commit.
    for msg in [json!({"type":"crash"}), json!({"type":"inc"})] {
        session.dispatch_as_human(&msg, none).await.unwrap();
    }
    let mut idle = DispatchOptions::default();
    idle.wait_for = WaitFor::Idle;
    let result = session
        .dispatch_as_human(&json!({"type":"inc"}), idle)
        .await
        .unwrap();
    let SendResult::Dispatched { drain, .. } = result else {
        panic!("not dispatched: {result:?}");
    };
    assert_eq!(drain.effects_observed, 3);
    assert!(!drain.timed_out);
    assert_eq!(drain.errors.len(), 1, "{:?}", drain.errors);
    assert!(drain.errors[0].message.starts_with("update panicked"));
    assert_eq!(session.state()["count"], 2);
}
