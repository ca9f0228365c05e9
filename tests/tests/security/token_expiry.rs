//! Token lifetimes you can set (issue 37 item 4, `docs/security.md` §Agent tokens), on a
//! manual clock: the sliding TTL is on by default with one hour, the hard expiry is an option,
//! and a token that lapsed tells the agent why (`reason`: `idle` or `expired`).

use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::mcp::{call, err};
use agent_tests::TestServer;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::json;
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::ServerOptions;

const MINUTE_MS: u64 = 60 * 1000;
const HOUR_MS: u64 = 60 * MINUTE_MS;

async fn server(
    clock: &ManualClock,
    options: impl FnOnce(&mut ServerOptions) + Send + 'static,
) -> TestServer<Counter> {
    let clock = clock.clone();
    TestServer::builder(Counter)
        .rate_limit("10000/minute")
        .config(move |c| {
            c.clock = Arc::new(clock);
            // The sessions stay open: these tests are about the tokens.
            c.session_idle = std::time::Duration::from_secs(7 * 24 * 3600);
        })
        .options(options)
        .start()
        .await
}

/// Mints a hosted session's token as alice: `(token, expiresAt)`.
async fn mint(t: &TestServer<Counter>) -> (String, u64) {
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    (
        a.body["token"].as_str().unwrap().to_string(),
        a.body["expiresAt"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn the_sliding_ttl_is_one_hour_by_default_and_an_idle_token_says_so() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, |_| {}).await;
    let (token, expires_at) = mint(&t).await;
    assert_eq!(
        expires_at,
        1_000_000 + 24 * HOUR_MS,
        "the hard expiry's default"
    );
    assert_eq!(t.lap(&token, "/state", &json!({})).await.status, 200);
    // Used within the hour, again and again: it lives on.
    for _ in 0..3 {
        clock.advance(59 * MINUTE_MS);
        let a = t.lap(&token, "/state", &json!({})).await;
        assert_eq!(a.status, 200, "{:?}", a.body);
    }
    // An hour and a minute without use: idle.
    clock.advance(61 * MINUTE_MS);
    let a = t.lap(&token, "/state", &json!({})).await;
    assert_eq!(a.status, 401, "{:?}", a.body);
    assert_eq!(a.body["error"]["code"], "auth-failed");
    assert_eq!(a.body["error"]["reason"], "idle");
    assert!(a.body["error"]["detail"]
        .as_str()
        .is_some_and(|d| d.contains("sliding TTL")));
    // So does MCP's `connect_session`.
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/agent/mcp", t.base));
    let client = ().serve(transport).await.expect("MCP initialize");
    let connect = call(client.peer(), "connect_session", json!({ "token": token })).await;
    let text = err(&connect);
    assert!(text.starts_with("Token idle: "), "{text}");
    let _ = client.cancel().await;
    // An unknown token still says nothing more than auth-failed.
    let a = t.lap("agt_unknown", "/state", &json!({})).await;
    assert_eq!(
        (a.status, a.body),
        (401, json!({"error": {"code": "auth-failed"}}))
    );
}

#[tokio::test]
async fn the_hard_expiry_is_an_option_and_an_expired_token_says_so() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, |o| {
        o.hard_expiry = std::time::Duration::from_secs(2 * 3600);
        o.sliding_ttl = None;
    })
    .await;
    let (token, expires_at) = mint(&t).await;
    assert_eq!(expires_at, 1_000_000 + 2 * HOUR_MS);
    clock.advance(2 * HOUR_MS - 1);
    assert_eq!(t.lap(&token, "/state", &json!({})).await.status, 200);
    clock.advance(1);
    let a = t.lap(&token, "/state", &json!({})).await;
    assert_eq!(a.status, 401, "{:?}", a.body);
    assert_eq!(a.body["error"]["code"], "auth-failed");
    assert_eq!(a.body["error"]["reason"], "expired");
}

#[tokio::test]
async fn a_working_agent_outlives_the_default_day_with_a_longer_hard_expiry() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, |o| {
        o.hard_expiry = std::time::Duration::from_secs(3 * 24 * 3600);
    })
    .await;
    let (token, _) = mint(&t).await;
    // Working through two nights, a call every half hour.
    for _ in 0..(2 * 24 * 2) {
        clock.advance(30 * MINUTE_MS);
        let a = t.lap(&token, "/state", &json!({})).await;
        assert_eq!(a.status, 200, "{:?}", a.body);
    }
}
