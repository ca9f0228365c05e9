//! The LAP gate and management routes over real HTTP (`docs/lap.md` §4, §5.1, §11.2, §11.3):
//! every status code provoked for real.

use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::{serve, start_app, TestServer, USER_HEADER};
use serde_json::{json, Value};
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::security::{GovernorRateLimiter, TokenStatus};

#[tokio::test]
async fn mint_gives_a_token_bound_to_a_live_session() {
    let t = start_app(Counter).await;
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(a.status, 200);
    let token = a.body["token"].as_str().unwrap();
    assert!(token.starts_with("agt_") && token.len() == 47);
    assert_eq!(a.body["lapVersion"], 2);
    assert!(a.body["lapUrl"]
        .as_str()
        .unwrap()
        .ends_with("/agent/lap/v1"));
    assert!(a.body["wsUrl"].as_str().unwrap().starts_with("ws://"));
    let tid = a.body["tid"].as_str().unwrap();
    let record = t.server.tokens().find_by_tid(tid).await.unwrap().unwrap();
    assert_eq!(record.status, TokenStatus::AwaitingClaude);
    assert_eq!(record.uid.as_deref(), Some("alice"));
    // The app is live at once.
    let d = t.lap(token, "/describe", &Value::Null).await;
    assert_eq!(d.status, 200);
    assert_eq!(d.body["name"], "counter");
    assert!(d.body["annotations"]["inc"]["intent"].is_string());
    assert_eq!(d.body["schemaHash"].as_str().unwrap().len(), 32);
    assert_eq!(d.body["conventions"]["dispatchModel"], "TEA");
    // First successful call activates the token.
    let record = t.server.tokens().find_by_tid(tid).await.unwrap().unwrap();
    assert_eq!(record.status, TokenStatus::Active);
    assert_eq!(record.label.as_deref(), Some("agent"));
}

#[tokio::test]
async fn mint_refusals() {
    let t = start_app(Counter).await;
    // No identity, not anonymous → 401 (the server has a resolver: the caller must sign in).
    let a = t.post_json("/agent/mint", None, None, &json!({})).await;
    assert_eq!(a.status, 401);
    assert_eq!(
        a.body,
        json!({"error":{"code":"auth-required","detail":"no identity: sign in to the app first"}})
    );
    // GET → 405.
    let a = t.get("/agent/mint", Some("alice")).await;
    assert_eq!(a.status, 405);
    // Bad bodies → 400.
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({"session":5}))
        .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.body["error"]["code"], "invalid");
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!([1]))
        .await;
    assert_eq!(a.status, 400);
    // Someone else's session → 403.
    let m = t.mint("alice", None).await;
    let a = t
        .post_json(
            "/agent/mint",
            Some("bob"),
            None,
            &json!({"session": m.session_id}),
        )
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body["error"]["detail"], "unknown session or not yours");
    // Own session → a second token for it.
    let m2 = t.mint("alice", Some(&m.session_id)).await;
    assert_eq!(m2.session_id, m.session_id);
    // Cross-origin → 403.
    let req = t
        .request(reqwest::Method::POST, "/agent/mint")
        .header(USER_HEADER, "alice")
        .header("origin", "https://evil.example")
        .body("{}");
    let a = t.send(req).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body["error"]["detail"], "cross-origin request refused");
}

#[tokio::test]
async fn anonymous_mode_issues_an_identity_cookie() {
    let t = TestServer::builder(Counter).anonymous().start().await;
    let req = t.request(reqwest::Method::POST, "/agent/mint");
    let a = t.send(req).await;
    assert_eq!(a.status, 200);
    let cookie = a.headers["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("agent_identity=anon-"), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"));
    let tid = a.body["tid"].as_str().unwrap();
    let uid = t
        .server
        .tokens()
        .find_by_tid(tid)
        .await
        .unwrap()
        .unwrap()
        .uid
        .unwrap();
    assert!(uid.starts_with("anon-"));
    // The cookie identifies the same owner next time.
    let pair = cookie.split(';').next().unwrap().to_string();
    let req = t
        .request(reqwest::Method::POST, "/agent/mint")
        .header("cookie", pair);
    let a = t.send(req).await;
    assert!(a.headers.get("set-cookie").is_none());
    let tid2 = a.body["tid"].as_str().unwrap();
    assert_eq!(
        t.server
            .tokens()
            .find_by_tid(tid2)
            .await
            .unwrap()
            .unwrap()
            .uid
            .unwrap(),
        uid
    );
}

#[tokio::test]
async fn bearer_failures_are_401_and_revoked_is_403() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    t.assert_bad_bearers_refused().await;
    // Revoke by another identity → 403 revoked, record unchanged.
    let a = t
        .post_json("/agent/revoke", Some("bob"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body["error"]["code"], "revoked");
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    // Missing tid → 400; GET → 405.
    assert_eq!(
        t.post_json("/agent/revoke", Some("alice"), None, &json!({}))
            .await
            .status,
        400
    );
    assert_eq!(t.get("/agent/revoke", Some("alice")).await.status, 405);
    // The owner revokes; the token answers 403 from then on.
    let a = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, json!({"status":"revoked"}));
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body, json!({"error":{"code":"revoked"}}));
    // Again → 200.
    let a = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(a.status, 200);
}

#[tokio::test]
async fn expired_and_idle_tokens_are_auth_failed() {
    let clock = ManualClock::new(1_000_000);
    let t = TestServer::builder(Counter)
        .config(|c| c.clock = Arc::new(clock.clone()))
        .audit(Arc::new(tea_agent_runtime::security::MemoryAuditSink::new()))
        .options(|o| o.sliding_ttl = Some(std::time::Duration::from_millis(60_000)))
        .start()
        .await;
    let m = t.mint("alice", None).await;
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    clock.advance(60_001);
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 401);
    // A lapsed token says why (issue 37): idle past the sliding TTL.
    assert_eq!(a.body["error"]["code"], "auth-failed");
    assert_eq!(a.body["error"]["reason"], "idle", "{:?}", a.body);
    let m = t.mint("alice", None).await;
    clock.advance(24 * 3600 * 1000);
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 401);
    // Past its hard expiry (checked first): expired.
    assert_eq!(a.body["error"]["reason"], "expired", "{:?}", a.body);
}

#[tokio::test]
async fn oversized_bodies_are_413_before_authentication() {
    let t = start_app(Counter).await;
    let big = "x".repeat(2 * 1024 * 1024);
    // Declared length, no token at all.
    let req = t
        .request(reqwest::Method::POST, "/agent/lap/v1/state")
        .body(big.clone());
    let a = t.send(req).await;
    assert_eq!(a.status, 413);
    assert_eq!(a.body, json!({"error":{"code":"payload-too-large"}}));
    // Streamed without a length, with a valid token.
    let m = t.mint("alice", None).await;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..32).map(|_| Ok(vec![b' '; 64 * 1024])).collect();
    let req = t
        .request(reqwest::Method::POST, "/agent/lap/v1/message")
        .bearer_auth(&m.token)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)));
    let a = t.send(req).await;
    assert_eq!(a.status, 413);
    // A small chunked body is parsed.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(b"{\"path\":".to_vec()), Ok(b"\"/count\"}".to_vec())];
    let req = t
        .request(reqwest::Method::POST, "/agent/lap/v1/state")
        .bearer_auth(&m.token)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)));
    let a = t.send(req).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, json!({"state": 0, "seq": 0}));
}

#[tokio::test]
async fn rate_limited_is_429_with_retry_after() {
    let limiter = GovernorRateLimiter::new("2/second".parse().unwrap());
    let builder = TestServer::builder(Counter).into_agent_builder();
    let t = serve(
        builder
            .rate_limiter(Arc::new(limiter))
            .build()
            .await
            .expect("server"),
    )
    .await;
    let m = t.mint("alice", None).await;
    // mint consumed one token of the identity bucket; the token bucket is separate.
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 429);
    assert_eq!(a.body["error"]["code"], "rate-limited");
    let retry = a.body["error"]["retryAfterMs"].as_u64().unwrap();
    assert!(retry > 0 && retry <= 500, "{retry}");
}

#[tokio::test]
async fn a_closed_session_is_503_paused() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    assert!(t
        .server
        .host()
        .close_session(&m.session_id)
        .await
        .expect("closed"));
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 503);
    assert_eq!(a.headers["x-llui-reconnect"], "expired");
    assert!(a.headers.get("retry-after").is_none());
    assert_eq!(
        a.body,
        json!({"error":{"code":"paused","reconnect":"expired","detail":"the session was closed by the host"}})
    );
}

#[tokio::test]
async fn bad_bodies_are_400_and_unknown_tails_fall_through() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let cases = [
        ("/state", json!({"path": 5}), "path must be a string"),
        ("/query-state", json!({}), "path must be a string"),
        ("/query-dom", json!({}), "name must be a string"),
        (
            "/would-dispatch",
            json!({"msg": {}}),
            "msg.type must be a string",
        ),
        (
            "/message",
            json!({"msg": {"type": 7}}),
            "msg.type must be a string",
        ),
        ("/message", json!([1, 2]), "msg.type must be a string"),
        (
            "/message",
            json!({"msg": {"type": "inc"}, "waitFor": "bogus"}),
            "waitFor must be one of: drained, idle, none",
        ),
        (
            "/message",
            json!({"msg": {"type": "inc"}, "idempotencyKey": 5}),
            "idempotencyKey must be a string of 1 to 256 characters",
        ),
        ("/confirm-result", json!({}), "confirmId must be a string"),
        (
            "/wait",
            json!({"path": "count"}),
            "path must be empty or start with '/'",
        ),
        ("/narrate", json!({"text": ""}), "text required"),
    ];
    for (tail, body, detail) in cases {
        let a = t.lap(&m.token, tail, &body).await;
        assert_eq!(a.status, 400, "{tail} {body}");
        assert_eq!(
            a.body,
            json!({"error":{"code":"invalid","detail":detail}}),
            "{tail}"
        );
    }
    // A failed call leaves a fresh token awaiting-claude.
    let fresh = t.mint("alice", Some(&m.session_id)).await;
    assert_eq!(
        t.lap(&fresh.token, "/state", &json!({"path": 5}))
            .await
            .status,
        400
    );
    assert_eq!(
        t.server
            .tokens()
            .find_by_tid(&fresh.tid)
            .await
            .unwrap()
            .unwrap()
            .status,
        TokenStatus::AwaitingClaude
    );
    // Unknown tails and paths outside the base are not matched.
    assert_eq!(t.lap(&m.token, "/bogus", &json!({})).await.status, 404);
    assert_eq!(
        t.post_json("/agent/lapx/v1/state", None, Some(&m.token), &json!({}))
            .await
            .status,
        404
    );
    // `null` counts as absent; a non-object body reads as {}.
    let a = t.lap(&m.token, "/state", &json!({"path": null})).await;
    assert_eq!(a.body["state"]["count"], 0);
    let a = t.lap(&m.token, "/state", &json!([1, 2])).await;
    assert_eq!(a.body["state"]["count"], 0);
}

#[tokio::test]
async fn agent_sessions_lists_only_the_callers_active_tokens() {
    let t = start_app(Counter).await;
    let active = t.mint("alice", None).await;
    let _waiting = t.mint("alice", None).await;
    let other = t.mint("bob", None).await;
    t.lap(&active.token, "/state", &json!({})).await;
    t.lap(&other.token, "/state", &json!({})).await;
    let a = t.get("/agent/sessions", Some("alice")).await;
    let sessions = a.body["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["tid"], active.tid.as_str());
    assert_eq!(sessions[0]["status"], "active");
    assert_eq!(sessions[0]["label"], "agent");
    assert_eq!(
        t.get("/agent/sessions", None).await.body,
        json!({"sessions": []})
    );
    t.post_json(
        "/agent/revoke",
        Some("alice"),
        None,
        &json!({"tid": active.tid}),
    )
    .await;
    let a = t.get("/agent/sessions", Some("alice")).await;
    assert_eq!(a.body, json!({"sessions": []}));
}

/// The counter with at most `per_host` sessions, `per_owner` of them for one owner.
async fn with_session_caps(per_host: usize, per_owner: usize) -> TestServer<Counter> {
    TestServer::builder(Counter)
        .config(|c| {
            c.max_sessions = per_host;
            c.max_sessions_per_owner = per_owner;
        })
        .audit(Arc::new(tea_agent_runtime::security::MemoryAuditSink::new()))
        .start()
        .await
}

#[tokio::test]
async fn minting_new_sessions_is_bounded_per_owner_and_per_host() {
    let t = with_session_caps(3, 2).await;
    let first = t.mint("alice", None).await;
    let second = t.mint("alice", None).await;
    // A third session for alice → 503 session-capacity, and nothing was created.
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "session-capacity");
    assert!(a.body["error"]["detail"]
        .as_str()
        .unwrap()
        .contains("at most 2"));
    assert_eq!(t.server.host().session_count(), 2);
    // Another token for one of her sessions is still fine.
    let again = t.mint("alice", Some(&first.session_id)).await;
    assert_eq!(again.session_id, first.session_id);
    // Bob takes the host's last slot; carol finds the host full.
    t.mint("bob", None).await;
    let a = t
        .post_json("/agent/mint", Some("carol"), None, &json!({}))
        .await;
    assert_eq!(a.status, 503);
    assert_eq!(
        a.body["error"]["detail"],
        "the host holds its maximum of 3 open sessions"
    );
    // Closing a session frees its slot.
    assert!(t
        .server
        .host()
        .close_session(&first.session_id)
        .await
        .expect("closed"));
    t.mint("carol", None).await;
    assert_eq!(t.server.host().session_count(), 3);
    // A session closed through its own handle (not the host) frees its slot too.
    t.server.host().session(&second.session_id).unwrap().close();
    assert_eq!(t.server.host().session_count(), 2);
    assert!(t.server.host().sessions_of("alice").is_empty());
    let third = t.mint("alice", None).await;
    assert_eq!(
        t.server.host().sessions_of("alice")[0].id(),
        third.session_id
    );
    assert_eq!(t.server.host().session_count(), 3);
}

#[tokio::test]
async fn an_owners_closed_sessions_do_not_count_against_its_cap() {
    let t = with_session_caps(10, 2).await;
    let a = t.mint("alice", None).await;
    t.mint("alice", None).await;
    t.server.host().session(&a.session_id).unwrap().close();
    assert!(t.server.host().session(&a.session_id).is_none());
    t.mint("alice", None).await;
    assert_eq!(t.server.host().sessions_of("alice").len(), 2);
    let refused = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(refused.status, 503, "{}", refused.body);
}
