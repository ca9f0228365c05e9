//! A paired token that expires while its socket is open closes that socket (issue 25,
//! `docs/pairing.md` §Bounds): the token is checked at every ping period.

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::tab::Tab;
use agent_tests::TestServer;
use serde_json::json;
use tea_agent_runtime::clock::ManualClock;

#[tokio::test]
async fn an_expired_token_closes_its_socket() {
    let clock = ManualClock::new(1_000_000);
    let t = TestServer::builder(Counter)
        .config(|c| c.clock = Arc::new(clock.clone()))
        .audit(Arc::new(tea_agent_runtime::security::MemoryAuditSink::new()))
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
            p.ping_interval = std::time::Duration::from_millis(100);
            p.close_grace = std::time::Duration::from_millis(200);
        })
        .start()
        .await;
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({"paired": true}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let token = a.body["token"].as_str().unwrap().to_string();
    let mut tab = Tab::pair(&t.base, &token).await;
    // Still open while the token lives (pings answered while reading).
    let open = tokio::time::timeout(
        Duration::from_millis(400),
        tab.try_next(Duration::from_secs(5)),
    )
    .await;
    assert!(open.is_err(), "{open:?}");
    // Past the token's 24 h lifetime: the socket is told and closed at the next check.
    clock.advance(25 * 3600 * 1000);
    let (closed, seen) = tab.closed().await;
    assert!(closed, "the socket of an expired token is still open");
    assert_eq!(seen, [json!({"t": "revoked"})]);
}

/// The sliding TTL (one hour by default) runs from when a paired app's socket closed, not
/// while the app holds it open (issue 37 item 4, `docs/security.md` §Token lifetimes): the
/// server touches the token at each ping period while its socket lives.
#[tokio::test]
async fn an_open_app_socket_keeps_its_token_from_going_idle() {
    let clock = ManualClock::new(1_000_000);
    let t = TestServer::builder(Counter)
        .config(|c| c.clock = Arc::new(clock.clone()))
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
            p.ping_interval = Duration::from_millis(100);
        })
        .start()
        .await;
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({"paired": true}))
        .await;
    let token = a.body["token"].as_str().unwrap().to_string();
    let mut tab = Tab::pair(&t.base, &token).await;
    // Two quiet stretches of 50 minutes: the agent calls nothing, the app stays connected
    // (and reads, so it answers the server's pings).
    for _ in 0..2 {
        clock.advance(50 * 60 * 1000);
        let quiet = tokio::time::timeout(
            Duration::from_millis(400),
            tab.try_next(Duration::from_secs(5)),
        )
        .await;
        assert!(quiet.is_err(), "{quiet:?}");
    }
    // A hundred minutes after the mint, the token is not idle: the agent's call is relayed.
    let read = t.spawn_lap(&token, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.reply(&id, json!({"state": {"count": 2}})).await;
    let a = read.await.unwrap();
    assert_eq!(a.status, 200, "{:?}", a.body);
    // Closed, the hour runs: past it, the token is idle.
    tab.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.advance(61 * 60 * 1000);
    let a = t.lap(&token, "/state", &json!({})).await;
    assert_eq!(a.status, 401, "{:?}", a.body);
    assert_eq!(a.body["error"]["reason"], "idle");
}
