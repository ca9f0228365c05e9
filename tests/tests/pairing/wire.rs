//! `/agent/ws` on the wire (`docs/pairing.md`): a raw WebSocket client plays the app runtime with
//! frames the test writes itself, and an agent calls LAP over HTTP. Handshake, forwarding,
//! confirmations, watches and the log; the life cycle is in `lifecycle.rs`.

use agent_examples::counter::Counter;
use agent_tests::paired::{assert_paused, call, mint, mint_as, server, status_of};
use agent_tests::tab::{ws_url, Tab};
use agent_tests::{Answer, TestServer};
use serde_json::json;

#[tokio::test]
async fn handshake_refusals() {
    let t = server().await;
    let m = mint(&t).await;
    let ws_base = t.base.replacen("http", "ws", 1);
    assert_eq!(
        Tab::open(&format!("{ws_base}/agent/wsx?token={}", m.token), &[])
            .await
            .err(),
        Some(404)
    );
    assert_eq!(
        Tab::open(
            &ws_url(&t.base, &m.token),
            &[("origin", "https://evil.example")]
        )
        .await
        .err(),
        Some(403)
    );
    assert_eq!(
        Tab::open(&format!("{ws_base}/agent/ws"), &[]).await.err(),
        Some(401)
    );
    assert_eq!(
        Tab::open(&ws_url(&t.base, "agt_nope"), &[]).await.err(),
        Some(401)
    );
    // A token of a session hosted in the server does not pair.
    let hosted = mint_as(&t, "alice", false).await;
    let hosted_token = hosted.body["token"].as_str().unwrap();
    assert_eq!(
        Tab::open(&ws_url(&t.base, hosted_token), &[]).await.err(),
        Some(403)
    );
    // Same origin and the Authorization header are accepted.
    let own_origin = t.base.clone();
    let auth = format!("Bearer {}", m.token);
    let tab = Tab::open(
        &format!("{ws_base}/agent/ws"),
        &[("origin", &own_origin), ("authorization", &auth)],
    )
    .await;
    assert!(tab.is_ok());
    assert_eq!(status_of(&t, &m.tid).await, "awaiting-claude");
}

#[tokio::test]
async fn unpaired_token_is_paused_then_every_route_is_forwarded() {
    let t = server().await;
    let m = mint(&t).await;
    assert_eq!(status_of(&t, &m.tid).await, "awaiting-ws");
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_paused(&a, "pending");
    assert_eq!(a.headers["retry-after"], "5");

    let mut tab = Tab::pair(&t.base, &m.token).await;
    // Every forwarded route: the rpc's tool and args, and the reply as the HTTP body.
    let cases = [
        (
            "/state",
            json!({"path": "/count"}),
            "get_state",
            json!({"path": "/count"}),
        ),
        (
            "/query-state",
            json!({"path": "/a"}),
            "query_state",
            json!({"path": "/a"}),
        ),
        ("/actions", json!({}), "list_actions", json!({})),
        (
            "/query-dom",
            json!({"name": "count", "multiple": true}),
            "query_dom",
            json!({"name": "count", "multiple": true}),
        ),
        (
            "/describe-visible",
            json!({}),
            "describe_visible_content",
            json!({}),
        ),
        ("/context", json!({}), "describe_context", json!({})),
        (
            "/would-dispatch",
            json!({"msg": {"type": "inc"}}),
            "would_dispatch",
            json!({"msg": {"type": "inc"}}),
        ),
    ];
    for (i, (tail, body, tool, args)) in cases.into_iter().enumerate() {
        let pending = call(&t, &m.token, tail, body);
        let (id, got) = tab.rpc(tool).await;
        assert_eq!(got, args, "{tail}");
        let result = json!({"answer": tool, "n": i});
        tab.reply(&id, result.clone()).await;
        let a = pending.await.unwrap();
        assert_eq!((a.status, &a.body), (200, &result), "{tail}");
        if i == 0 {
            // The first successful call activates the session.
            assert_eq!(tab.next().await, json!({"t": "active"}));
            assert_eq!(status_of(&t, &m.tid).await, "active");
        }
    }
    // /message forwards the whole body.
    let body = json!({"msg": {"type": "inc"}, "reason": "why", "timeoutMs": 1000});
    let pending = call(&t, &m.token, "/message", body.clone());
    let (id, args) = tab.rpc("send_message").await;
    assert_eq!(args, body);
    let result = json!({"status": "rejected", "reason": "human-only"});
    tab.reply(&id, result.clone()).await;
    let a = pending.await.unwrap();
    assert_eq!((a.status, a.body), (200, result));
    // A keyed /message reaches the app once: the retry is the first answer replayed, and
    // another message under the key is 409 (neither is forwarded: the next rpc is observe's).
    let keyed = json!({"msg": {"type": "inc"}, "idempotencyKey": "k-1"});
    let pending = call(&t, &m.token, "/message", keyed.clone());
    let (id, _) = tab.rpc("send_message").await;
    let result = json!({"status": "dispatched", "stateDiff": [], "actions": [], "drain": {}});
    tab.reply(&id, result.clone()).await;
    assert_eq!(pending.await.unwrap().body, result);
    let again = t.lap(&m.token, "/message", &keyed).await;
    assert_eq!((again.status, &again.body), (200, &result));
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let other = json!({"msg": {"type": "dec"}, "idempotencyKey": "k-1"});
    let conflict = t.lap(&m.token, "/message", &other).await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    assert_eq!(
        conflict.body["error"]["detail"],
        "idempotencyKey k-1 was used for a different message"
    );
    // /describe from the cached hello; /observe merges it.
    let a = t.lap(&m.token, "/describe", &json!({})).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["name"], "wire-app");
    assert_eq!(a.body["schemaHash"], "0123456789abcdef0123456789abcdef");
    assert_eq!(a.body["messages"]["discriminant"], "type");
    let pending = call(&t, &m.token, "/observe", json!({}));
    let (id, args) = tab.rpc("observe").await;
    assert_eq!(args, json!({}));
    tab.reply(
        &id,
        json!({"state": {"n": 1}, "actions": [], "context": null}),
    )
    .await;
    let a = pending.await.unwrap();
    assert_eq!(a.body["state"], json!({"n": 1}));
    assert_eq!(a.body["description"]["version"], "0.0.1");
    // rpc-error → 500 with its code; no answer → 504; a late reply is ignored.
    let pending = call(&t, &m.token, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.send(json!({"t": "rpc-error", "id": id, "code": "schema-error", "detail": "bad"}))
        .await;
    let a = pending.await.unwrap();
    assert_eq!(a.status, 500);
    assert_eq!(
        a.body,
        json!({"error": {"code": "schema-error", "detail": "bad"}})
    );
    let pending = call(&t, &m.token, "/actions", json!({}));
    let (id, _) = tab.rpc("list_actions").await;
    let a = pending.await.unwrap();
    assert_eq!(
        (a.status, a.body),
        (504, json!({"error": {"code": "timeout"}}))
    );
    tab.reply(&id, json!({"late": true})).await;
    // Invalid requests are refused before any frame.
    let a = t.lap(&m.token, "/would-dispatch", &json!({})).await;
    assert_eq!(a.status, 400);
    // Invalid frames are dropped; the socket stays.
    tab.send(json!({"t": "nonsense"})).await;
    let pending = call(&t, &m.token, "/context", json!({}));
    let (id, _) = tab.rpc("describe_context").await;
    tab.reply(&id, json!({"ok": 1})).await;
    assert_eq!(pending.await.unwrap().status, 200);
}

/// The agent sends `reset` (waiting `timeout_ms`) and the tab answers that it awaits
/// confirmation `confirm_id`; answers the agent's pending call.
async fn propose_reset(
    t: &TestServer<Counter>,
    token: &str,
    tab: &mut Tab,
    timeout_ms: u64,
    confirm_id: &str,
) -> tokio::task::JoinHandle<Answer> {
    let pending = call(
        t,
        token,
        "/message",
        json!({"msg": {"type": "reset"}, "timeoutMs": timeout_ms}),
    );
    let (id, _) = tab.rpc("send_message").await;
    tab.reply(
        &id,
        json!({"status": "pending-confirmation", "confirmId": confirm_id}),
    )
    .await;
    pending
}

#[tokio::test]
async fn confirmations_wait_expire_and_are_buffered() {
    let t = server().await;
    let m = mint(&t).await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    // Approved while the agent waits.
    let pending = propose_reset(&t, &m.token, &mut tab, 3000, "c1").await;
    tab.send(json!({"t": "confirm-resolved", "confirmId": "c1", "outcome": "confirmed", "stateAfter": {"count": 0}}))
        .await;
    let a = pending.await.unwrap();
    assert_eq!(
        a.body,
        json!({"status": "confirmed", "stateAfter": {"count": 0}})
    );
    assert_eq!(tab.next().await, json!({"t": "active"}));
    // Rejected: the agent hears "user-cancelled" and the tab is told to void it.
    let pending = propose_reset(&t, &m.token, &mut tab, 3000, "c2").await;
    tab.send(json!({"t": "confirm-resolved", "confirmId": "c2", "outcome": "user-cancelled"}))
        .await;
    let a = pending.await.unwrap();
    assert_eq!(
        a.body,
        json!({"status": "rejected", "reason": "user-cancelled"})
    );
    assert_eq!(
        tab.next().await,
        json!({"t": "confirm-expire", "confirmId": "c2"})
    );
    // Undecided within timeoutMs: pending-confirmation; decided between polls: kept.
    let pending = propose_reset(&t, &m.token, &mut tab, 100, "c3").await;
    let a = pending.await.unwrap();
    assert_eq!(
        a.body,
        json!({"status": "pending-confirmation", "confirmId": "c3"})
    );
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "c3", "timeoutMs": 50}),
        )
        .await;
    assert_eq!(a.body, json!({"status": "still-pending"}));
    tab.send(json!({"t": "confirm-resolved", "confirmId": "c3", "outcome": "confirmed", "stateAfter": {"count": 7}}))
        .await;
    for _ in 0..2 {
        let a = t
            .lap(
                &m.token,
                "/confirm-result",
                &json!({"confirmId": "c3", "timeoutMs": 2000}),
            )
            .await;
        assert_eq!(
            a.body,
            json!({"status": "confirmed", "stateAfter": {"count": 7}})
        );
    }
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "zz", "timeoutMs": 10}),
        )
        .await;
    assert_eq!(a.status, 400);
}

#[tokio::test]
async fn wait_watches_and_narrate_echoes_into_recent_actions() {
    let t = server().await;
    let m = mint(&t).await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let pending = call(
        &t,
        &m.token,
        "/wait",
        json!({"path": "/count", "timeoutMs": 3000}),
    );
    let watch = tab.next().await;
    assert_eq!(watch["t"], "watch");
    assert_eq!(watch["path"], "/count");
    let id = watch["id"].as_str().unwrap().to_string();
    // An update of another watch id does not wake it.
    tab.send(json!({"t": "state-update", "id": "other", "path": "", "stateAfter": {"count": 9}}))
        .await;
    tab.send(json!({"t": "state-update", "id": id, "path": "/count", "stateAfter": {"count": 1}}))
        .await;
    let a = pending.await.unwrap();
    assert_eq!(
        a.body,
        json!({"status": "changed", "stateAfter": {"count": 1}})
    );
    assert_eq!(tab.next().await, json!({"t": "unwatch", "id": id}));
    assert_eq!(tab.next().await, json!({"t": "active"}));
    let a = t.lap(&m.token, "/wait", &json!({"timeoutMs": 50})).await;
    assert_eq!(a.body, json!({"status": "timeout", "stateAfter": null}));
    let watch = tab.next().await;
    assert_eq!(watch["t"], "watch");
    assert_eq!(tab.next().await["t"], "unwatch");

    let a = t
        .lap(
            &m.token,
            "/narrate",
            &json!({"text": "tidying up", "intent": "plan"}),
        )
        .await;
    assert_eq!(a.body, json!({"ok": true}));
    let push = tab.next().await;
    assert_eq!(push["t"], "log-push");
    let entry = push["entry"].clone();
    assert!(entry["id"].as_str().unwrap().starts_with("narrate-"));
    assert_eq!(entry["kind"], "narrate");
    assert_eq!(entry["detail"], "tidying up");
    assert_eq!(entry["intent"], "plan");
    // Nothing lands in the log until the tab echoes it.
    let a = t.lap(&m.token, "/recent-actions", &json!({})).await;
    assert_eq!(a.body, json!({"entries": []}));
    tab.send(json!({"t": "log-append", "entry": {"id": "r1", "at": 1, "kind": "read"}}))
        .await;
    tab.send(json!({"t": "log-append", "entry": entry})).await;
    tab.send(json!({"t": "log-append", "entry": {"id": "d1", "at": 3, "kind": "dispatched", "variant": "inc"}}))
        .await;
    // Frames are handled in order: a round trip after them sees all three.
    let pending = call(&t, &m.token, "/context", json!({}));
    let (id, _) = tab.rpc("describe_context").await;
    tab.reply(&id, json!({})).await;
    pending.await.unwrap();
    let a = t.lap(&m.token, "/recent-actions", &json!({"n": 2})).await;
    let ids: Vec<&str> = a.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "d1");
    assert!(ids[1].starts_with("narrate-"));
    let a = t
        .lap(&m.token, "/recent-actions", &json!({"kind": "read"}))
        .await;
    assert_eq!(
        a.body["entries"],
        json!([{"id": "r1", "at": 1, "kind": "read"}])
    );
}
