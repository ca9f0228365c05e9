//! A keyed message whose claim the store refuses (`docs/stores.md` §Exactly once): two counter
//! replicas on one real PostgreSQL whose role waits at most 2 s for a lock; the test holds
//! `agent_idempotency` locked against writes, so a keyed `inc`'s claim fails. The call answers
//! 500 `internal` and applies nothing, instead of going on without its claim (which let a retry
//! on the other replica apply the message a second time, and, for a paired app behind a hop
//! that broke, kept the hop's 503 `paused` as the key's answer). Once the lock is gone, the
//! retry on the other replica applies it, a retry on the first replays it: counted once.

use std::time::Duration;

use agent_tests::browser;
use agent_tests::counter_server;
use agent_tests::postgres::PgServer;
use agent_tests::process::{mint, ServerProcess};
use serde_json::{json, Value};
use sqlx::Connection;

fn start(url: &str) -> ServerProcess {
    counter_server!().args(["--db", url]).start()
}

/// `inc` keyed `key` through `base`: the status, the body, whether it was a replay.
async fn keyed_inc(base: &str, token: &str, key: &str) -> (u16, Value, bool) {
    let r = reqwest::Client::new()
        .post(format!("{base}/agent/lap/v1/message"))
        .bearer_auth(token)
        .json(&json!({"msg": {"type": "inc"}, "idempotencyKey": key, "waitFor": "idle"}))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("an answer");
    let status = r.status().as_u16();
    let replayed = r.headers().get("idempotent-replayed").is_some();
    (status, r.json().await.unwrap_or(Value::Null), replayed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_claim_the_store_refuses_applies_nothing_and_its_retry_applies_once() {
    let pg = PgServer::start();
    let url = pg.url();
    let mut admin = sqlx::PgConnection::connect(&url).await.expect("connect");
    // A lock the replicas wait for fails after 2 s (their connections open after this).
    sqlx::query("ALTER ROLE CURRENT_USER SET lock_timeout = '2s'")
        .execute(&mut admin)
        .await
        .expect("lock_timeout");
    let (a, b) = (start(&url), start(&url));
    let owner = browser();
    let minted = mint(&owner, &a.base, json!({})).await;
    let (token, session) = (
        minted["token"].as_str().expect("token").to_owned(),
        minted["sessionId"].as_str().expect("session").to_owned(),
    );

    // Reads go on; the claim (a write) waits for the lock and fails.
    let mut locked = admin.begin().await.expect("begin");
    sqlx::query("LOCK TABLE agent_idempotency IN EXCLUSIVE MODE")
        .execute(&mut *locked)
        .await
        .expect("lock");
    let (status, body, _) = keyed_inc(&a.base, &token, "k1").await;
    locked.rollback().await.expect("unlock");
    assert_eq!(status, 500, "the refused claim's answer: {body}");
    assert_eq!(body["error"]["code"], "internal", "{body}");
    let detail = body["error"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("idempotencyKey k1") && detail.contains("nothing was changed"),
        "{detail}"
    );

    // The retry on the other replica runs it; one on the first replays that answer.
    let (status, body, replayed) = keyed_inc(&b.base, &token, "k1").await;
    assert_eq!(status, 200, "the retry: {body}");
    assert!(!replayed, "the retry ran the message: {body}");
    let (status, body, replayed) = keyed_inc(&a.base, &token, "k1").await;
    assert_eq!(status, 200, "the retry on the first replica: {body}");
    assert!(
        replayed,
        "the first replica replays the key's answer: {body}"
    );

    let (_, state) = agent_tests::stored_session(&url, &session).await;
    assert_eq!(state["count"], 1, "k1 applied once");
}
