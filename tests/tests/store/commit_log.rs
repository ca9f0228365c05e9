//! The commit log (`docs/stores.md` §The commit log) with real processes: the counter example
//! on a SQLite file killed with SIGKILL in the middle of appends and in the middle of a
//! compaction (held open by the test hook `AGENT_TEST_HOLD_COMPACTION_MS`), then started
//! again: the state is the last answered commit and the log stays within its bounds; and two
//! replicas on a real PostgreSQL, one of them stopped (SIGSTOP) while the other commits past
//! two compactions, which catches up when it continues.

use std::time::Duration;

use agent_tests::browser;
use agent_tests::counter_server;
use agent_tests::postgres::PgServer;
use agent_tests::process::{lap, mint, ServerProcess};
use agent_tests::temp::TempDir;
use serde_json::{json, Value};

/// Rate limit of the servers: the tests send hundreds of calls a second.
const RATE: &str = "1000000/second";

/// Commits between two snapshots, at most (`SNAPSHOT_EVERY`): the 129th commit after a
/// snapshot writes the next one.
const K: u64 = 128;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

async fn inc(base: &str, token: &str) {
    let (status, body) = lap(
        base,
        token,
        "/message",
        json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

async fn count(base: &str, token: &str) -> i64 {
    let (status, body) = lap(base, token, "/state", json!({})).await;
    assert_eq!(status, 200, "{body}");
    body["state"]["count"].as_i64().expect("count")
}

async fn mint_one(base: &str) -> (String, String) {
    let minted = mint(&browser(), base, json!({})).await;
    (
        minted["token"].as_str().expect("token").to_owned(),
        minted["sessionId"].as_str().expect("session").to_owned(),
    )
}

/// Rows and bytes of the session's log, its stored `seq` and `snapshot_seq`.
async fn sqlite_log(db: &str, session: &str) -> (i64, i64, i64, i64) {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{db}"))
        .await
        .expect("read the file");
    let (rows, bytes): (i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), SUM(LENGTH(patch)) FROM agent_session_log WHERE session_id = $1",
    )
    .bind(session)
    .fetch_one(&pool)
    .await
    .expect("log");
    let (seq, snapshot_seq): (i64, i64) =
        sqlx::query_as("SELECT seq, snapshot_seq FROM agent_sessions WHERE id = $1")
            .bind(session)
            .fetch_one(&pool)
            .await
            .expect("session");
    pool.close().await;
    (rows, bytes.unwrap_or(0), seq, snapshot_seq)
}

/// Sends `inc`s until `stop` answered ones, then kills the server with a call in flight:
/// answers how many were answered. A call in flight when the process dies may have
/// committed or not; every answered one must be there.
async fn incs_then_kill(server: ServerProcess, token: &str, stop: i64) -> i64 {
    let base = server.base.clone();
    let token_of_task = token.to_owned();
    let (tx, mut rx) = tokio::sync::watch::channel(0i64);
    let sender = tokio::spawn(async move {
        let mut answered = 0;
        loop {
            let r = client()
                .post(format!("{base}/agent/lap/v1/message"))
                .bearer_auth(&token_of_task)
                .json(&json!({"msg": {"type": "inc"}, "waitFor": "idle"}))
                .send()
                .await;
            match r {
                Ok(r) if r.status().as_u16() == 200 => {
                    answered += 1;
                    tx.send_replace(answered);
                }
                _ => return answered,
            }
        }
    });
    rx.wait_for(|n| *n >= stop).await.expect("the sender runs");
    server.kill();
    sender.await.expect("sender")
}

#[tokio::test]
async fn sigkill_mid_append_and_mid_compaction_loses_no_answered_commit() {
    let dir = TempDir::new("log");
    let db = dir.file("counter.db");
    let server = counter_server!()
        .args(["--db", &db, "--rate-limit", RATE])
        .start();
    let (token, session) = mint_one(&server.base).await;

    // Killed while appending, three times (past a snapshot each time).
    let mut total = 0;
    let mut server = server;
    for stop in [150, 90, 200] {
        let answered = incs_then_kill(server, &token, stop).await;
        total += answered;
        server = counter_server!()
            .args(["--db", &db, "--rate-limit", RATE])
            .start();
        let n = count(&server.base, &token).await;
        // The call in flight at the kill may have committed before its answer was sent.
        assert!(n == total || n == total + 1, "stored {n}, answered {total}");
        total = n;
    }
    let (rows, bytes, seq, snapshot_seq) = sqlite_log(&db, &session).await;
    assert_eq!(seq, total, "one commit per inc");
    assert!(
        rows as u64 <= 2 * K + 1 && (seq - snapshot_seq) as u64 <= K,
        "the log is compacted: {rows} rows ({bytes} bytes), seq {seq}, snapshot {snapshot_seq}"
    );
    assert!(snapshot_seq > 0, "snapshots were written");
    server.kill();

    // Killed while a compaction is held open: the commit that writes the snapshot never
    // answered and is not there; every answered one is.
    let held = counter_server!()
        .args(["--db", &db, "--rate-limit", RATE])
        .env("AGENT_TEST_HOLD_COMPACTION_MS", "30000")
        .start();
    let mut answered = 0;
    let mut caught = false;
    for _ in 0..=(2 * K) {
        match tokio::time::timeout(Duration::from_secs(2), inc(&held.base, &token)).await {
            Ok(()) => answered += 1,
            Err(_) => {
                caught = true;
                break;
            }
        }
    }
    assert!(caught, "a snapshot commit was held open");
    held.kill();
    let server = counter_server!()
        .args(["--db", &db, "--rate-limit", RATE])
        .start();
    assert_eq!(count(&server.base, &token).await, total + answered);
    // The log goes on from there: more commits, past another snapshot, survive a kill.
    for _ in 0..(K + 10) {
        inc(&server.base, &token).await;
    }
    let expected = total + answered + K as i64 + 10;
    assert_eq!(count(&server.base, &token).await, expected);
    server.kill();
    let server = counter_server!()
        .args(["--db", &db, "--rate-limit", RATE])
        .start();
    assert_eq!(count(&server.base, &token).await, expected);
    let (rows, _, seq, snapshot_seq) = sqlite_log(&db, &session).await;
    assert_eq!(seq, expected);
    assert!(rows as u64 <= 2 * K + 1 && (seq - snapshot_seq) as u64 <= K);
}

/// Polls `base` until the count is `want` (a replica applies other replicas' commits when
/// their notifications arrive).
async fn until_count(base: &str, token: &str, want: i64) {
    let mut n = 0;
    for _ in 0..200 {
        n = count(base, token).await;
        if n == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the replica shows {n}, not {want}");
}

#[tokio::test]
async fn a_replica_down_through_a_compaction_catches_up() {
    let pg = PgServer::start();
    let url = pg.url();
    let a = counter_server!()
        .args(["--db", &url, "--rate-limit", RATE])
        .start();
    let b = counter_server!()
        .args(["--db", &url, "--rate-limit", RATE])
        .start();
    let (token, session) = mint_one(&a.base).await;
    for _ in 0..5 {
        inc(&b.base, &token).await;
    }
    until_count(&a.base, &token, 5).await;

    // B is down while A commits past two snapshots: what B holds is compacted away.
    b.pause();
    for _ in 0..(2 * K + 20) {
        inc(&a.base, &token).await;
    }
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let (oldest,): (Option<i64>,) =
        sqlx::query_as("SELECT MIN(seq) FROM agent_session_log WHERE session_id = $1")
            .bind(&session)
            .fetch_one(&pool)
            .await
            .expect("log");
    assert!(oldest.unwrap_or(0) > 6, "B's commit is behind the horizon");
    b.resume();
    let want = 5 + 2 * K as i64 + 20;
    until_count(&b.base, &token, want).await;
    // And B commits on top of it.
    inc(&b.base, &token).await;
    until_count(&a.base, &token, want + 1).await;

    // Down for a few commits only: caught up from the patches.
    b.pause();
    for _ in 0..10 {
        inc(&a.base, &token).await;
    }
    b.resume();
    until_count(&b.base, &token, want + 11).await;
    inc(&b.base, &token).await;
    assert_eq!(count(&b.base, &token).await, want + 12);
    until_count(&a.base, &token, want + 12).await;
    let (rows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM agent_session_log WHERE session_id = $1")
            .bind(&session)
            .fetch_one(&pool)
            .await
            .expect("log");
    assert!(rows as u64 <= 2 * K + 1, "{rows} log rows");
    pool.close().await;
}

/// On `examples/todo` (a tracked vector, a redacted field, a tagged enum), a toggle in a big
/// list appends a small patch: no snapshot until the log's bounds, and the stored state
/// rebuilt from the log is the session's.
#[tokio::test]
async fn a_toggle_appends_a_small_patch_not_a_snapshot() {
    use agent_examples::todo::{Msg, NewTodo, TodoApp};
    use tea_agent_runtime::config::HostConfig;
    use tea_agent_runtime::session::DispatchOptions;
    use tea_agent_schema::protocol::WaitFor;

    let dir = TempDir::new("log");
    let db = dir.file("counter.db");
    let stores = tea_agent_runtime::store::Stores::open(&db)
        .await
        .expect("store");
    let app = TodoApp {
        save_delay: Duration::ZERO,
        ..TodoApp::default()
    };
    let host = agent_tests::host_on(app, &stores, HostConfig::default());
    let session = host.create_session(None).expect("session");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut idle = DispatchOptions::default();
    idle.wait_for = WaitFor::Idle;
    let todos = (0..3000)
        .map(|i| NewTodo {
            title: format!("todo {i}"),
            priority: None,
        })
        .collect();
    session
        .dispatch_msg(Msg::BulkAdd { todos }, idle)
        .await
        .expect("bulk add");
    // The save effect's `saved` commits too.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rows_before, _, seq_before, snapshot_before) = sqlite_log(&db, session.id()).await;
    for i in 0..20 {
        let id = format!("t{}", 10 + i * 7);
        session
            .dispatch_msg(Msg::Toggle { id }, idle)
            .await
            .expect("toggle");
    }
    let (rows, bytes, seq, snapshot_seq) = sqlite_log(&db, session.id()).await;
    assert_eq!(seq, seq_before + 20);
    assert_eq!(snapshot_seq, snapshot_before, "no snapshot for 20 toggles");
    assert_eq!(rows, rows_before + 20);
    let record = stores
        .sessions
        .load_session(session.id())
        .await
        .expect("load")
        .expect("stored");
    let stored: Value = serde_json::from_str(&record.state).expect("json");
    // `t10` is the tenth todo.
    assert_eq!(stored["todos"][9]["done"], json!(true));
    assert_eq!(stored["todos"][16]["done"], json!(true));
    assert_eq!(stored["todos"][10]["done"], json!(false));
    assert_eq!(
        stored,
        session.with_state(|s| serde_json::to_value(s).expect("json"))
    );
    assert_eq!(
        stored["apiKey"],
        json!("sk-demo-secret"),
        "the redacted field is stored"
    );
    assert_eq!(stored["todos"].as_array().map(Vec::len), Some(3002));
    let _ = bytes;
}
