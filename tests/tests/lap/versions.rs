//! Versions over real HTTP and MCP (`docs/semantics.md` §8.7, `docs/lap.md` §5.3): every answer
//! that carries state or a diff carries the session's `seq`; `/state {sinceSeq}` answers the
//! patch since then (or the whole state, flagged); `/wait {sinceSeq}` answers at once when the
//! session is already past it.

use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::mcp::McpAgent;
use agent_tests::{start_app, Minted, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::security::MemoryAuditSink;
use tea_agent_runtime::Host;

/// Applies JSON Patch `ops` (the subset the diff emits) to `doc`.
fn apply(doc: &mut Value, ops: &Value) {
    for op in ops.as_array().unwrap() {
        let path = op["path"].as_str().unwrap();
        let (parent, key) = path.rsplit_once('/').unwrap();
        let target = if parent.is_empty() {
            &mut *doc
        } else {
            doc.pointer_mut(parent).unwrap()
        };
        let key = key.replace("~1", "/").replace("~0", "~");
        match (op["op"].as_str().unwrap(), target) {
            ("remove", Value::Object(m)) => {
                m.shift_remove(&key);
            }
            ("remove", Value::Array(a)) => {
                a.remove(key.parse::<usize>().unwrap());
            }
            ("add", Value::Array(a)) => a.insert(key.parse().unwrap(), op["value"].clone()),
            (_, Value::Object(m)) => {
                m.insert(key, op["value"].clone());
            }
            (_, Value::Array(a)) => a[key.parse::<usize>().unwrap()] = op["value"].clone(),
            (kind, other) => panic!("{kind} on {other}"),
        }
    }
}

async fn inc(t: &TestServer<Counter>, m: &Minted) -> Value {
    let a = t
        .lap(&m.token, "/message", &json!({"msg":{"type":"inc"}}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body
}

#[tokio::test]
async fn answers_carry_the_sessions_seq() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let observed = t.lap(&m.token, "/observe", &json!({})).await.body;
    assert_eq!(observed["seq"], 0);
    let state = t.lap(&m.token, "/state", &json!({})).await.body;
    assert_eq!(
        state,
        json!({"state":{"count":0,"lastDelete":null,"view":"home"},"seq":0})
    );
    let sent = inc(&t, &m).await;
    assert_eq!(sent["status"], "dispatched");
    assert_eq!(sent["seq"], 1);
    // A slice and a miss carry the version they were read from.
    let slice = t
        .lap(&m.token, "/state", &json!({"path":"/count"}))
        .await
        .body;
    assert_eq!(slice, json!({"state":1,"seq":1}));
    let miss = t
        .lap(&m.token, "/state", &json!({"path":"/nope"}))
        .await
        .body;
    assert_eq!(miss, json!({"seq":1}));
    // A human commit moves it too; a wait sees it.
    let waiter = t.spawn_lap(&m.token, "/wait", json!({"timeoutMs":5000}));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    t.human_dispatch("alice", &m, json!({"type":"inc"})).await;
    let waited = waiter.await.unwrap().body;
    assert_eq!(waited["status"], "changed");
    assert_eq!(waited["seq"], 2);
    assert_eq!(waited["stateAfter"]["count"], 2);
    // A timeout has no state and no seq.
    let timeout = t
        .lap(&m.token, "/wait", &json!({"timeoutMs":50}))
        .await
        .body;
    assert_eq!(timeout, json!({"status":"timeout","stateAfter":null}));

    // A confirmed proposal carries the seq of its commit.
    let call = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg":{"type":"delete","id":"7"},"timeoutMs":5000}),
    );
    let id = t.next_confirm_id("alice", &m).await;
    t.decide("alice", &m, &id, json!({"decision":"approve"}))
        .await;
    let confirmed = call.await.unwrap().body;
    assert_eq!(confirmed["status"], "confirmed");
    assert_eq!(confirmed["seq"], 3);
    let polled = t
        .lap(&m.token, "/confirm-result", &json!({"confirmId": id}))
        .await
        .body;
    assert_eq!(polled["seq"], 3);
    assert_eq!(polled["stateAfter"]["lastDelete"], "7");
}

#[tokio::test]
async fn state_since_a_seq_is_the_patch_since_then() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let first = t.lap(&m.token, "/state", &json!({})).await.body;
    let mut mine = first["state"].clone();
    inc(&t, &m).await;
    t.human_dispatch("alice", &m, json!({"type":"nav","to":"reports"}))
        .await;
    t.human_dispatch("alice", &m, json!({"type":"setCount","value":40}))
        .await;
    let since = t.lap(&m.token, "/state", &json!({"sinceSeq":0})).await.body;
    assert_eq!(since["seq"], 3);
    assert!(since.get("state").is_none(), "{since}");
    assert!(since.get("full").is_none(), "{since}");
    apply(&mut mine, &since["stateDiff"]);
    let now = t.lap(&m.token, "/state", &json!({})).await.body;
    assert_eq!(mine, now["state"]);
    // Up to date: an empty patch.
    let same = t.lap(&m.token, "/state", &json!({"sinceSeq":3})).await.body;
    assert_eq!(same, json!({"stateDiff":[],"seq":3}));
    // A version the session never had: the whole state, flagged.
    let future = t
        .lap(&m.token, "/state", &json!({"sinceSeq":99}))
        .await
        .body;
    assert_eq!(future["full"], true);
    assert_eq!(future["state"], now["state"]);
    assert_eq!(future["seq"], 3);
    // Bad input is a clear 400.
    for (body, detail) in [
        (
            json!({"sinceSeq":"3"}),
            "sinceSeq must be a non-negative integer",
        ),
        (
            json!({"sinceSeq":-1}),
            "sinceSeq must be a non-negative integer",
        ),
        (
            json!({"sinceSeq":1.5}),
            "sinceSeq must be a non-negative integer",
        ),
        (
            json!({"sinceSeq":1,"path":"/count"}),
            "sinceSeq reads the whole state: leave out path",
        ),
    ] {
        let a = t.lap(&m.token, "/state", &body).await;
        assert_eq!(a.status, 400, "{body}");
        assert_eq!(a.body["error"]["detail"], detail);
    }
    for body in [json!({"sinceSeq":"x"}), json!({"sinceSeq":-2})] {
        let a = t.lap(&m.token, "/wait", &body).await;
        assert_eq!(a.status, 400, "{body}");
        assert_eq!(
            a.body["error"]["detail"],
            "sinceSeq must be a non-negative integer"
        );
    }
}

#[tokio::test]
async fn the_patch_ring_is_bounded() {
    let t = TestServer::builder(Counter)
        .config(|c| c.budgets.patch_history = 2)
        .audit(Arc::new(MemoryAuditSink::new()))
        .start()
        .await;
    let m = t.mint("alice", None).await;
    for _ in 0..4 {
        inc(&t, &m).await;
    }
    // The two newest commits are held, the older ones are not.
    let held = t.lap(&m.token, "/state", &json!({"sinceSeq":2})).await.body;
    assert_eq!(held["stateDiff"].as_array().unwrap().len(), 2, "{held}");
    let gone = t.lap(&m.token, "/state", &json!({"sinceSeq":1})).await.body;
    assert_eq!(gone["full"], true);
    assert_eq!(gone["state"]["count"], 4);

    // In bytes: a patch bigger than the budget is never held.
    let t = TestServer::builder(Counter)
        .config(|c| c.budgets.patch_history_bytes = 8)
        .audit(Arc::new(MemoryAuditSink::new()))
        .start()
        .await;
    let m = t.mint("alice", None).await;
    inc(&t, &m).await;
    let gone = t.lap(&m.token, "/state", &json!({"sinceSeq":0})).await.body;
    assert_eq!(gone["full"], true);
    assert_eq!(gone["seq"], 1);
}

#[tokio::test]
async fn wait_since_a_seq_answers_at_once_when_past_it() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    inc(&t, &m).await;
    inc(&t, &m).await;
    let started = std::time::Instant::now();
    let a = t
        .lap(&m.token, "/wait", &json!({"sinceSeq":1,"timeoutMs":10_000}))
        .await
        .body;
    assert!(started.elapsed().as_millis() < 5000);
    assert_eq!(a["status"], "changed");
    assert_eq!(a["seq"], 2);
    assert_eq!(a["stateAfter"]["count"], 2);
    // At the current version it waits.
    let a = t
        .lap(&m.token, "/wait", &json!({"sinceSeq":2,"timeoutMs":100}))
        .await
        .body;
    assert_eq!(a["status"], "timeout");
    // With a path: only a change there since that version counts.
    let a = t
        .lap(
            &m.token,
            "/wait",
            &json!({"sinceSeq":0,"path":"/view","timeoutMs":100}),
        )
        .await
        .body;
    assert_eq!(a["status"], "timeout");
    let a = t
        .lap(
            &m.token,
            "/wait",
            &json!({"sinceSeq":0,"path":"/count","timeoutMs":10_000}),
        )
        .await
        .body;
    assert_eq!(a["status"], "changed");
    assert_eq!(a["seq"], 2);
    // A version the session never had: answered at once (the caller's copy is stale).
    let a = t
        .lap(
            &m.token,
            "/wait",
            &json!({"sinceSeq":50,"path":"/view","timeoutMs":10_000}),
        )
        .await
        .body;
    assert_eq!(a["status"], "changed");
}

#[tokio::test]
async fn mcp_tools_carry_the_seq() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let agent = McpAgent::connect(&t.base, &m.token).await;
    let observed = agent.call("observe", json!({})).await;
    assert_eq!(observed["seq"], 0);
    let sent = agent
        .call("send_message", json!({"msg":{"type":"inc"}}))
        .await;
    assert_eq!(sent["seq"], 1);
    let state = agent.call("get_state", json!({"sinceSeq":0})).await;
    assert_eq!(
        state,
        json!({"stateDiff":[{"op":"replace","path":"/count","value":1}],"seq":1})
    );
    let waited = agent
        .call("wait_for_change", json!({"sinceSeq":0,"timeoutMs":10_000}))
        .await;
    assert_eq!(waited["status"], "changed");
    assert_eq!(waited["seq"], 1);
    agent.close().await;
}

/// A paired session driven by the Rust pairing client: its answers carry the app session's
/// own `seq`, and `/state {sinceSeq}` is answered by the app (`docs/pairing.md` §LAP → frames).
#[tokio::test]
async fn a_rust_paired_app_answers_with_its_own_seq() {
    use std::time::Duration;
    use tea_agent_runtime::pairing::client::{PairingClient, PairingConfig, PairingStatus};
    use tea_agent_runtime::session::DispatchOptions;

    let t = TestServer::builder(Counter)
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .start()
        .await;
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    let token = minted.body["token"].as_str().unwrap().to_string();
    let host = Host::new(Counter).unwrap();
    let session = host.create_session(None).unwrap();
    session
        .dispatch_as_human(&json!({"type":"inc"}), DispatchOptions::default())
        .await
        .unwrap();
    let client =
        PairingClient::new(&host, session.clone(), PairingConfig::new(&t.base, &token)).spawn();
    let status = client
        .wait_for(Duration::from_secs(10), |s| *s == PairingStatus::Paired)
        .await;
    assert_eq!(status, PairingStatus::Paired);
    let observed = t.lap(&token, "/observe", &json!({})).await.body;
    assert_eq!(observed["seq"], 1, "{observed}");
    let sent = t
        .lap(&token, "/message", &json!({"msg":{"type":"inc"}}))
        .await
        .body;
    assert_eq!(sent["seq"], 2, "{sent}");
    let since = t.lap(&token, "/state", &json!({"sinceSeq":1})).await.body;
    assert_eq!(
        since,
        json!({"stateDiff":[{"op":"replace","path":"/count","value":2}],"seq":2})
    );
    client.stop().await;
}
