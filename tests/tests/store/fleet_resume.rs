//! Resuming on another replica (`docs/lap.md` §6.6, `docs/stores.md` §PostgreSQL: replicas):
//! two counter-server processes on one PostgreSQL (a real server the test starts). A human's
//! event stream read on one replica, reconnected with its `Last-Event-ID` on the other after
//! more commits, gets the missed commits (the state with the patch from what it saw), from
//! the store's commit log; `get_state {sinceSeq}` on the other replica gets the patch too; a
//! commit the log no longer holds gets a snapshot, as before.

use agent_tests::counter_server;
use agent_tests::postgres::PgServer;
use agent_tests::process::{lap, mint};
use serde_json::{json, Value};

/// The first `state` event of the human's event stream (`id`, `event`, `data`), opened with
/// `Last-Event-ID: last` when given (a replay's `log` events before it are skipped).
async fn first_event(
    human: &reqwest::Client,
    base: &str,
    session: &str,
    last: Option<u64>,
) -> (u64, String, Value) {
    use futures::StreamExt as _;
    let mut req = human.get(format!("{base}/agent/human/sessions/{session}/events"));
    if let Some(l) = last {
        req = req.header("last-event-id", l.to_string());
    }
    let resp = req.send().await.expect("events");
    assert_eq!(resp.status().as_u16(), 200);
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
            .await
            .expect("an event within 10 s")
            .expect("stream open")
            .expect("chunk");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let (mut id, mut event, mut data) = (None, String::new(), Value::Null);
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = serde_json::from_str(v.trim()).unwrap_or(Value::Null);
                }
            }
            if let (Some(id), "state") = (id, event.as_str()) {
                return (id, event, data);
            }
        }
    }
}

async fn incs(base: &str, token: &str, n: usize) {
    for _ in 0..n {
        let (status, body) = lap(
            base,
            token,
            "/message",
            json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// `state` patched by `diff` (RFC 6902).
fn patched(state: &Value, diff: &Value) -> Value {
    let mut state = state.clone();
    let patch: json_patch::Patch = serde_json::from_value(diff.clone()).expect("a JSON Patch");
    json_patch::patch(&mut state, &patch).expect("the patch applies to the state seen");
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_and_since_seq_resume_on_another_replica() {
    let pg = PgServer::start();
    let url = pg.url();
    let args = ["--db", url.as_str(), "--rate-limit", "100000/second"];
    let a = counter_server!().args(args).start();
    let b = counter_server!().args(args).start();
    let human = agent_tests::browser();
    let minted = mint(&human, &a.base, json!({})).await;
    let session = minted["sessionId"].as_str().expect("session").to_owned();
    let token = minted["token"].as_str().expect("token").to_owned();

    // On A: three commits, then the stream's opening snapshot.
    incs(&a.base, &token, 3).await;
    let (seen_id, event, seen) = first_event(&human, &a.base, &session, None).await;
    assert_eq!(event, "state");
    assert_eq!(seen["snapshot"], true, "{seen}");
    assert_eq!(seen["state"]["count"], 3, "{seen}");

    // Four more commits (two through each replica) while the client is away.
    incs(&a.base, &token, 2).await;
    incs(&b.base, &token, 2).await;

    // The client reconnects through B, which never sent it anything: the missed commits come
    // from the store's log, as the state now with the patch from the state it saw.
    let (id, event, resumed) = first_event(&human, &b.base, &session, Some(seen_id)).await;
    assert_eq!(event, "state");
    assert!(id > seen_id, "ids go on: {id} after {seen_id}");
    assert!(
        resumed.get("snapshot").is_none(),
        "not a snapshot: {resumed}"
    );
    assert_eq!(resumed["resumed"], true, "{resumed}");
    assert_eq!(resumed["state"]["count"], 7, "{resumed}");
    let diff = &resumed["stateDiff"];
    assert!(diff.is_array(), "{resumed}");
    assert_eq!(patched(&seen["state"], diff), resumed["state"]);

    // `get_state {sinceSeq}` through B (loaded after those commits) answers the patch too.
    let (status, body) = lap(&b.base, &token, "/state", json!({"sinceSeq": 3})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["seq"], 7, "{body}");
    assert!(body.get("full").is_none_or(|f| f == false), "{body}");
    assert_eq!(
        patched(&seen["state"], &body["stateDiff"]),
        resumed["state"]
    );

    // The same id on A, which sent it: A's own history or the log, the same answer (once A
    // caught up with B's commits: NOTIFY).
    for _ in 0..200 {
        let (_, body) = lap(&a.base, &token, "/state", json!({})).await;
        if body["state"]["count"] == 7 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (_, event, again) = first_event(&human, &a.base, &session, Some(seen_id)).await;
    assert_eq!(event, "state");
    assert_eq!(again["state"]["count"], 7, "{again}");
    assert!(again.get("snapshot").is_none(), "{again}");

    // Past what the log keeps (a snapshot every 128 commits; each compacts the log up to the
    // one before): the commit the client saw is gone, so a snapshot, as before.
    incs(&b.base, &token, 280).await;
    let (_, event, snapshot) = first_event(&human, &b.base, &session, Some(seen_id)).await;
    assert_eq!(event, "state");
    assert_eq!(snapshot["snapshot"], true, "{snapshot}");
    assert_eq!(snapshot["state"]["count"], 287, "{snapshot}");
    let (status, body) = lap(&b.base, &token, "/state", json!({"sinceSeq": 3})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["full"], true, "{body}");
}

/// `/wait {path, sinceSeq}` on a replica that did not make the commits since `sinceSeq` (it
/// loaded the session after them, or caught up with another replica's jump): whether they
/// touched the path is read from the store's commit log, so an untouched path waits (and
/// answers the next change) instead of answering `changed` at once (`docs/semantics.md` §8.5).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wait_since_seq_reads_the_commit_log_on_another_replica() {
    let pg = PgServer::start();
    let url = pg.url();
    let args = ["--db", url.as_str(), "--rate-limit", "100000/second"];
    let a = counter_server!().args(args).start();
    let b = counter_server!().args(args).start();
    let human = agent_tests::browser();
    let minted = mint(&human, &a.base, json!({})).await;
    let token = minted["token"].as_str().expect("token").to_owned();

    // Three commits on A; B has never loaded the session.
    incs(&a.base, &token, 3).await;

    // `/view` did not change since commit 1: B waits (its timeout), where it used to answer
    // `changed` at once for want of the patches.
    let started = std::time::Instant::now();
    let (status, body) = lap(
        &b.base,
        &token,
        "/wait",
        json!({"sinceSeq": 1, "path": "/view", "timeoutMs": 1500}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "timeout", "{body}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(1400));

    // `/count` did: at once, with the state at commit 3.
    let (status, body) = lap(
        &b.base,
        &token,
        "/wait",
        json!({"sinceSeq": 1, "path": "/count", "timeoutMs": 5000}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "changed", "{body}");
    assert_eq!(body["seq"], 3, "{body}");
    assert_eq!(body["stateAfter"]["count"], 3, "{body}");

    // Two more commits on A: B catches up in one jump (its ring holds no patch from 4).
    incs(&a.base, &token, 2).await;
    for _ in 0..200 {
        let (_, body) = lap(&b.base, &token, "/state", json!({})).await;
        if body["seq"] == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // A wait on `/view` since commit 4 waits, and answers the next change of the view,
    // made through A.
    let waiting = {
        let (base, token) = (b.base.clone(), token.clone());
        tokio::spawn(async move {
            lap(
                &base,
                &token,
                "/wait",
                json!({"sinceSeq": 4, "path": "/view", "timeoutMs": 10000}),
            )
            .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert!(
        !waiting.is_finished(),
        "the wait answered before the view changed"
    );
    let (status, body) = lap(
        &a.base,
        &token,
        "/message",
        json!({"msg": {"type": "nav", "to": "reports"}, "waitFor": "idle"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = waiting.await.expect("the wait");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "changed", "{body}");
    assert_eq!(body["seq"], 6, "{body}");
    assert_eq!(body["stateAfter"]["view"], "reports", "{body}");

    // A version B has not caught up with yet (A's commit, announced by NOTIFY): B reads the
    // store and waits from that version, never answering an older state as `changed`.
    for round in 0..10 {
        incs(&a.base, &token, 1).await;
        let seq = 7 + round;
        let (status, body) = lap(
            &b.base,
            &token,
            "/wait",
            json!({"sinceSeq": seq, "path": "/count", "timeoutMs": 200}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["status"], "timeout", "round {round}: {body}");
    }

    // Past what the log keeps: the commit since which is gone, so `changed` at once (the
    // caller's copy is too old to tell), as without the store.
    incs(&a.base, &token, 280).await;
    let (status, body) = lap(
        &b.base,
        &token,
        "/wait",
        json!({"sinceSeq": 2, "path": "/view", "timeoutMs": 5000}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "changed", "{body}");
}
