//! A graceful shutdown (`docs/operations.md` §Shutdown) of the counter example, a process of
//! its own on a durable store, stopped with SIGTERM while a `/wait` long poll, the human's event
//! stream and a paired app's socket are open: each gets an answer or a reconnect hint (503
//! `shutting-down` with `Retry-After`, a `shutting-down` event with `retry`, a 1001 close
//! frame), never a reset; the process exits 0; the commits and the token's last touch are in
//! the store; after a restart on the same store the state is there. On SQLite and PostgreSQL.

use std::time::{Duration, Instant};

use agent_tests::postgres::PgServer;
use agent_tests::process::{self, lap};
use agent_tests::tab::Tab;
use agent_tests::temp::TempDir;
use agent_tests::{browser, counter_server};
use futures::StreamExt as _;
use serde_json::{json, Value};

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_millis()).expect("ms fit")
}

/// Reads a text/event-stream to its end (30 s at most): the events' raw text.
async fn read_to_end(resp: reqwest::Response) -> String {
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, body.next()).await {
            Ok(Some(Ok(chunk))) => text.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(Some(Err(e))) => panic!("the event stream was cut: {e}\n{text}"),
            Ok(None) => return text,
            Err(_) => panic!("the event stream did not end within 30 s:\n{text}"),
        }
    }
}

/// The token's `last_seen_at` as the store holds it.
async fn last_seen_at(db: &str, tid: &str) -> i64 {
    let query = "SELECT last_seen_at FROM agent_tokens WHERE tid = $1";
    if db.starts_with("postgres://") {
        let pool = sqlx::PgPool::connect(db).await.expect("PostgreSQL");
        let (at,): (i64,) = sqlx::query_as(query)
            .bind(tid)
            .fetch_one(&pool)
            .await
            .expect("row");
        at
    } else {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite:{db}"))
            .await
            .expect("SQLite");
        let (at,): (i64,) = sqlx::query_as(query)
            .bind(tid)
            .fetch_one(&pool)
            .await
            .expect("row");
        at
    }
}

async fn sigterm_answers_what_is_in_flight_and_loses_nothing(db: &str) {
    let server = counter_server!().args(["--db", db]).start();
    let base = server.base.clone();
    let human = browser();
    let minted = process::mint(&human, &base, json!({})).await;
    let token = minted["token"].as_str().expect("token").to_owned();
    let tid = minted["tid"].as_str().expect("tid").to_owned();
    let session = minted["sessionId"].as_str().expect("session").to_owned();
    for _ in 0..2 {
        let (status, body) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let (_, state) = lap(&base, &token, "/state", json!({})).await;
    let seq = state["seq"].as_u64().expect("seq");

    // In flight: a long poll, the human's event stream, a paired app's socket.
    let wait = tokio::spawn({
        let (base, token) = (base.clone(), token.clone());
        async move {
            let started = Instant::now();
            let resp = reqwest::Client::new()
                .post(format!("{base}/agent/lap/v1/wait"))
                .bearer_auth(&token)
                .json(&json!({"sinceSeq": seq, "timeoutMs": 60_000}))
                .send()
                .await
                .expect("an answer, not a reset");
            let retry = resp
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            let status = resp.status().as_u16();
            let body: Value = resp.json().await.expect("a JSON answer");
            (status, retry, body, started.elapsed())
        }
    });
    let events = human
        .get(format!("{base}/agent/human/sessions/{session}/events"))
        .send()
        .await
        .expect("events");
    assert_eq!(events.status().as_u16(), 200);
    let events = tokio::spawn(read_to_end(events));
    let paired = process::mint(&human, &base, json!({"paired": true})).await;
    let mut tab = Tab::pair(&base, paired["token"].as_str().expect("paired token")).await;
    // Past the second within which a success writes no touch (`docs/lap.md` §2.4; the long
    // poll touched on arrival), so the call below touches and the store holds that touch back.
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    // The last touch of the token, then at once the stop signal.
    let touched_at = now_ms();
    let (status, _) = lap(&base, &token, "/observe", json!({})).await;
    assert_eq!(status, 200);
    let stopping = Instant::now();
    let exited = tokio::task::spawn_blocking(move || server.terminate());

    let (status, retry, body, _) = wait.await.expect("the wait task");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "shutting-down", "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    let stream = events.await.expect("the events task");
    assert!(stream.contains("event: shutting-down"), "{stream}");
    assert!(stream.contains("retry: 1000"), "{stream}");
    assert_eq!(tab.close_code(Duration::from_secs(10)).await, Some(1001));
    let exit = exited.await.expect("terminate");
    assert!(exit.success(), "{exit:?}");
    assert!(
        stopping.elapsed() < Duration::from_secs(20),
        "the shutdown took {:?}",
        stopping.elapsed()
    );

    // What was held back is stored: the last touch, the commits.
    let stored = last_seen_at(db, &tid).await;
    assert!(
        stored >= touched_at,
        "last_seen_at {stored} < {touched_at}: the last touch was lost"
    );
    let again = counter_server!().args(["--db", db]).start();
    let (status, state) = lap(&again.base, &token, "/state", json!({})).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["state"]["count"], 2, "{state}");
    assert_eq!(state["seq"].as_u64(), Some(seq), "{state}");
}

#[tokio::test]
async fn sigterm_on_sqlite_answers_what_is_in_flight_and_loses_nothing() {
    let dir = TempDir::new("shutdown");
    sigterm_answers_what_is_in_flight_and_loses_nothing(&dir.file("counter.db")).await;
}

#[tokio::test]
async fn sigterm_on_postgres_answers_what_is_in_flight_and_loses_nothing() {
    let pg = PgServer::start();
    sigterm_answers_what_is_in_flight_and_loses_nothing(&pg.url()).await;
}
