//! Sessions that outlive a sleep (issue 37 item 3, `docs/pairing.md` §Token / session
//! lifecycle): past its grace window a closed paired session is listed by `/agent/resume/list`
//! (marked `pastGrace`) and claimable until its hard expiry. The app speaks as LLui's client
//! does (`Tab`): it comes back with its old bearer (refused 401), finds the session in the
//! list, claims it and pairs again with the rotated bearer; the agent, given that bearer,
//! drives the same session. Server time is a manual clock.

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::paired::{assert_paused, call, status_of};
use agent_tests::tab::{ws_url, Tab};
use agent_tests::{Answer, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::clock::ManualClock;

const HOUR_MS: u64 = 3600 * 1000;

/// A counter server that mints paired sessions on a manual clock, with LLui's 60 s grace
/// window unless `grace` says otherwise.
async fn server(clock: &ManualClock, grace: Option<Duration>) -> TestServer<Counter> {
    let clock = clock.clone();
    TestServer::builder(Counter)
        .rate_limit("10000/minute")
        .config(move |c| c.clock = Arc::new(clock))
        .pairing(move |p| {
            p.native_apps = true;
            p.mint_paired = true;
            if let Some(grace) = grace {
                p.grace = grace;
            }
        })
        .start()
        .await
}

async fn resume_list(t: &TestServer<Counter>, user: &str, tid: &str) -> Answer {
    t.post_json(
        "/agent/resume/list",
        Some(user),
        None,
        &json!({ "tids": [tid] }),
    )
    .await
}

async fn resume_claim(t: &TestServer<Counter>, user: &str, tid: &str) -> Answer {
    t.post_json(
        "/agent/resume/claim",
        Some(user),
        None,
        &json!({ "tid": tid }),
    )
    .await
}

/// Mints a paired session as alice, pairs a tab, lets the agent drive it once (`active`),
/// then closes the tab: `(token, tid, sessionId)`.
async fn paired_then_closed(t: &TestServer<Counter>) -> (String, String, String) {
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(minted.status, 200, "{:?}", minted.body);
    let field = |k: &str| minted.body[k].as_str().unwrap().to_string();
    let (token, tid, session) = (field("token"), field("tid"), field("sessionId"));
    let mut tab = Tab::pair(&t.base, &token).await;
    let read = call(t, &token, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.reply(&id, json!({"state": {"count": 4}})).await;
    assert_eq!(read.await.unwrap().body, json!({"state": {"count": 4}}));
    assert_eq!(tab.next().await, json!({"t": "active"}));
    tab.close().await;
    for _ in 0..100 {
        if status_of(t, &tid).await == "pending-resume" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status_of(t, &tid).await, "pending-resume");
    (token, tid, session)
}

/// The one entry of a resume list.
fn listed(a: &Answer) -> &Value {
    assert_eq!(a.status, 200, "{:?}", a.body);
    let sessions = a.body["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{:?}", a.body);
    &sessions[0]
}

#[tokio::test]
async fn a_session_asleep_past_its_grace_is_listed_claimed_and_continues() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, None).await;
    let (old, tid, session) = paired_then_closed(&t).await;

    // Inside the grace window: listed, not past its grace.
    let entry = listed(&resume_list(&t, "alice", &tid).await).clone();
    assert_eq!(entry["pastGrace"], false);

    // The laptop sleeps: past the grace window, the agent hears LLui's `expired` hint (only a
    // claim brings the app back) and the app's bearer no longer re-pairs.
    clock.advance(10 * 60 * 1000);
    assert_paused(&t.lap(&old, "/state", &json!({})).await, "expired");
    assert_eq!(
        Tab::open(&ws_url(&t.base, &old), &[]).await.err(),
        Some(401)
    );
    // Over lunch, past the sliding TTL's hour: the old bearer is idle, and says so.
    clock.advance(HOUR_MS);
    let a = t.lap(&old, "/state", &json!({})).await;
    assert_eq!(
        (a.status, &a.body["error"]["reason"]),
        (401, &json!("idle"))
    );
    // The app comes back with its bearer: refused, as LLui's server refuses it.
    assert_eq!(
        Tab::open(&ws_url(&t.base, &old), &[]).await.err(),
        Some(401)
    );

    // LLui's client asks the list, which offers the session, past its grace.
    let a = resume_list(&t, "alice", &tid).await;
    let entry = listed(&a);
    let keys: Vec<&str> = entry
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "tid",
            "label",
            "status",
            "createdAt",
            "lastSeenAt",
            "pastGrace",
            "expiresAt"
        ]
    );
    assert_eq!(entry["tid"], tid.as_str());
    assert_eq!(entry["status"], "pending-resume");
    assert_eq!(entry["pastGrace"], true);
    // Only to its owner.
    assert_eq!(
        resume_list(&t, "bob", &tid).await.body,
        json!({"sessions": []})
    );
    assert_eq!(resume_claim(&t, "bob", &tid).await.status, 403);

    // It claims what the list offers: a rotated bearer for the same tid.
    let claimed = resume_claim(&t, "alice", &tid).await;
    assert_eq!(claimed.status, 200, "{:?}", claimed.body);
    assert_eq!(claimed.body["tid"], tid.as_str());
    let new = claimed.body["token"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_eq!(status_of(&t, &tid).await, "active");

    // The app pairs with it; the agent, handed it, drives the same session.
    let mut tab = Tab::pair(&t.base, &new).await;
    let read = call(&t, &new, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.reply(&id, json!({"state": {"count": 4}})).await;
    assert_eq!(read.await.unwrap().body, json!({"state": {"count": 4}}));
    let sessions = t.get("/agent/sessions", Some("alice")).await;
    let mine: Vec<&Value> = sessions.body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["tid"] == tid.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{:?}", sessions.body);
    assert_eq!(mine[0]["sessionId"], session.as_str());
    // The old bearer is over, on LAP and on the socket.
    assert_eq!(t.lap(&old, "/state", &json!({})).await.status, 401);
    assert_eq!(
        Tab::open(&ws_url(&t.base, &old), &[]).await.err(),
        Some(401)
    );
    // Nothing is left to claim.
    assert_eq!(
        resume_list(&t, "alice", &tid).await.body,
        json!({"sessions": []})
    );
    assert_eq!(resume_claim(&t, "alice", &tid).await.status, 403);
}

#[tokio::test]
async fn past_its_hard_expiry_a_closed_session_is_neither_listed_nor_claimable() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, None).await;
    let (_, tid, _) = paired_then_closed(&t).await;
    clock.advance(23 * HOUR_MS);
    assert_eq!(
        listed(&resume_list(&t, "alice", &tid).await)["pastGrace"],
        true
    );
    clock.advance(HOUR_MS);
    assert_eq!(
        resume_list(&t, "alice", &tid).await.body,
        json!({"sessions": []})
    );
    let a = resume_claim(&t, "alice", &tid).await;
    assert_eq!(
        (a.status, a.body),
        (403, json!({"error": {"code": "revoked"}}))
    );
}

#[tokio::test]
async fn a_revoked_session_is_not_claimable_past_its_grace() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, None).await;
    let (_, tid, _) = paired_then_closed(&t).await;
    clock.advance(10 * 60 * 1000);
    let revoked = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({ "tid": tid }))
        .await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    assert_eq!(
        resume_list(&t, "alice", &tid).await.body,
        json!({"sessions": []})
    );
    assert_eq!(resume_claim(&t, "alice", &tid).await.status, 403);
}

#[tokio::test]
async fn a_grace_of_zero_makes_every_return_a_claim() {
    let clock = ManualClock::new(1_000_000);
    let t = server(&clock, Some(Duration::ZERO)).await;
    let (old, tid, _) = paired_then_closed(&t).await;
    // No window: the same bearer never re-pairs, the session is offered past its grace at once.
    assert_eq!(
        Tab::open(&ws_url(&t.base, &old), &[]).await.err(),
        Some(401)
    );
    assert_paused(&t.lap(&old, "/state", &json!({})).await, "expired");
    assert_eq!(
        listed(&resume_list(&t, "alice", &tid).await)["pastGrace"],
        true
    );
    let claimed = resume_claim(&t, "alice", &tid).await;
    assert_eq!(claimed.status, 200, "{:?}", claimed.body);
    let new = claimed.body["token"].as_str().unwrap();
    let mut tab = Tab::pair(&t.base, new).await;
    let read = call(&t, new, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.reply(&id, json!({"state": {"count": 1}})).await;
    assert_eq!(read.await.unwrap().status, 200);
}
