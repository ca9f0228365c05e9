//! A fleet behind a real load balancer (issue 50, `docs/pairing.md` §A fleet of replicas):
//! Debian's `haproxy`, round robin and no stickiness, in front of three replicas of the relay
//! example on one PostgreSQL. A paired app's socket lands on one replica; the agent's calls
//! land on any, and every one is answered as on one process: the LLui-protocol app (frames
//! the test writes) and the Rust pairing client, LAP and MCP (both generations); a second
//! socket on another replica takes over; then the socket's replica is killed with SIGKILL
//! mid-run: waiting calls answer 503 `paused` within the ping interval, the app re-pairs
//! through the load balancer, the agent's calls go on, and no keyed message answered is lost
//! or applied twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tests::lb::{mint_paired, Haproxy, RelayFleet, FLEET_SECRET};
use agent_tests::mcp::{send_raw, stateless_tool_call, McpAgent};
use agent_tests::paired::AppProcess;
use agent_tests::tab::{ws_url, Tab};
use serde_json::{json, Value};

use super::fleet_calls::{holder_where, lap, spawn_lap, PAIRING};

const PING: Duration = Duration::from_secs(2);

/// The token's status in the store.
async fn token_status(fleet: &RelayFleet, tid: &str) -> String {
    let pool = sqlx::PgPool::connect(&fleet.pg.url()).await.expect("db");
    let (status,): (String,) = sqlx::query_as("SELECT status FROM agent_tokens WHERE tid = $1")
        .bind(tid)
        .fetch_one(&pool)
        .await
        .expect("token row");
    pool.close().await;
    status
}

/// The next `rpc` frame of `tool` (skipping `active`, `watch` and log frames).
async fn next_rpc(tab: &mut Tab, tool: &str) -> (String, Value) {
    loop {
        let frame = tab.next().await;
        if frame["t"] == "rpc" {
            assert_eq!(frame["tool"], tool, "{frame}");
            return (
                frame["id"].as_str().expect("id").to_owned(),
                frame["args"].clone(),
            );
        }
    }
}

/// The next frame of type `t`, skipping others.
async fn next_of(tab: &mut Tab, t: &str) -> Value {
    loop {
        let frame = tab.next().await;
        if frame["t"] == t {
            return frame;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_llui_app_is_driven_through_any_replica_behind_a_load_balancer() {
    let fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 3, PAIRING, "1s");
    let lb = Haproxy::start(&fleet.ports);
    let (token, tid) = mint_paired(&lb.base).await;

    // Unpaired: every replica answers 503 paused, pending.
    for i in 0..3 {
        let (status, reconnect, _) = lap(&fleet.base(i), &token, "/state", json!({})).await;
        assert_eq!((status, reconnect.as_deref()), (503, Some("pending")));
    }

    // The app pairs through the load balancer, landing on one replica.
    let mut tab = Tab::pair(&lb.base, &token).await;
    let held = holder_where(&fleet, &tid, Duration::from_secs(10), |_| true).await;
    for i in 0..3 {
        let ready: Value = reqwest::get(format!("{}/agent/readyz", fleet.base(i)))
            .await
            .expect("readyz")
            .json()
            .await
            .expect("json");
        assert_eq!(ready["checks"]["fleet"], "ok", "{ready}");
    }

    // Every replica, and the load balancer (round robin), answers each read as the app did.
    let bases: Vec<String> = (0..3)
        .map(|i| fleet.base(i))
        .chain((0..3).map(|_| lb.base.clone()))
        .collect();
    for (n, base) in bases.iter().enumerate() {
        let call = spawn_lap(base, &token, "/state", json!({"path": "/count"}));
        let (id, args) = next_rpc(&mut tab, "get_state").await;
        assert_eq!(args, json!({"path": "/count"}));
        tab.reply(&id, json!({"state": {"count": n}, "seq": n}))
            .await;
        let (status, _, body) = call.await.expect("call");
        assert_eq!(status, 200, "{base}: {body}");
        assert_eq!(body, json!({"state": {"count": n}, "seq": n}), "{base}");
    }
    let others: Vec<usize> = (0..3).filter(|i| *i != held).collect();
    let (b, c) = (fleet.base(others[0]), fleet.base(others[1]));

    // A confirmation through a replica without the socket: proposed, then decided.
    let call = spawn_lap(
        &b,
        &token,
        "/message",
        json!({"msg": {"type": "inc"}, "timeoutMs": 8000}),
    );
    let (id, args) = next_rpc(&mut tab, "send_message").await;
    assert_eq!(args["msg"], json!({"type": "inc"}));
    tab.reply(
        &id,
        json!({"status": "pending-confirmation", "confirmId": "c1"}),
    )
    .await;
    tab.send(
        json!({"t": "confirm-resolved", "confirmId": "c1", "outcome": "confirmed",
                    "stateAfter": {"count": 7}}),
    )
    .await;
    let (status, _, body) = call.await.expect("message");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"status": "confirmed", "stateAfter": {"count": 7}})
    );
    // Its outcome read through the third replica.
    let (status, _, body) = lap(&c, &token, "/confirm-result", json!({"confirmId": "c1"})).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "confirmed", "stateAfter": {"count": 7}})
        )
    );

    // `/wait` through a replica without the socket: the watch goes to the app, its update
    // answers.
    let call = spawn_lap(
        &c,
        &token,
        "/wait",
        json!({"path": "/count", "timeoutMs": 8000}),
    );
    let watch = next_of(&mut tab, "watch").await;
    assert_eq!(watch["path"], "/count");
    tab.send(
        json!({"t": "state-update", "id": watch["id"], "path": "/count",
                    "stateAfter": {"count": 8}}),
    )
    .await;
    let (status, _, body) = call.await.expect("wait");
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "changed", "stateAfter": {"count": 8}})
        )
    );

    // The app's error and its silence, with the statuses of one process.
    let call = spawn_lap(&b, &token, "/state", json!({}));
    let (id, _) = next_rpc(&mut tab, "get_state").await;
    tab.send(json!({"t": "rpc-error", "id": id, "code": "boom", "detail": "no state"}))
        .await;
    let (status, _, body) = call.await.expect("error");
    assert_eq!(
        (status, body),
        (
            500,
            json!({"error": {"code": "boom", "detail": "no state"}})
        )
    );
    let started = Instant::now();
    let call = spawn_lap(&b, &token, "/state", json!({}));
    let _ = next_rpc(&mut tab, "get_state").await;
    let (status, _, body) = call.await.expect("timeout");
    assert_eq!((status, body), (504, json!({"error": {"code": "timeout"}})));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(6),
        "{took:?}"
    );

    // A hop that is not signed with the fleet's key is refused.
    let forged = reqwest::Client::new()
        .post(format!("{}/agent/fleet/v1/call", fleet.base(held)))
        .header("x-agent-fleet-time", "1")
        .header("x-agent-fleet-signature", "00")
        .json(&json!({"hop": "h", "tid": tid, "tool": "get_state", "args": {}}))
        .send()
        .await
        .expect("forged hop");
    assert_eq!(forged.status().as_u16(), 403);
    assert_ne!(FLEET_SECRET, "");

    // A second socket for the token on another replica takes over, as on one replica: the
    // older one is closed (1000) and the calls go to the newer one, wherever they arrive.
    let mut newer = Tab::pair(&b, &token).await;
    assert_eq!(tab.close_code(Duration::from_secs(5)).await, Some(1000));
    assert_eq!(
        holder_where(&fleet, &tid, Duration::from_secs(10), |i| i != held).await,
        others[0]
    );
    for base in [fleet.base(held), c.clone(), lb.base.clone()] {
        let call = spawn_lap(&base, &token, "/state", json!({}));
        let (id, _) = next_rpc(&mut newer, "get_state").await;
        newer.reply(&id, json!({"state": {"count": 9}})).await;
        let (status, _, body) = call.await.expect("after takeover");
        assert_eq!(
            (status, body),
            (200, json!({"state": {"count": 9}})),
            "{base}"
        );
    }
    // The older socket's close left the token to the newer one.
    assert_eq!(token_status(&fleet, &tid).await, "active");

    // The app closes its socket: every replica answers paused, pending, within the grace.
    newer.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..3 {
        let (status, reconnect, _) = lap(&fleet.base(i), &token, "/state", json!({})).await;
        assert_eq!(
            (status, reconnect.as_deref()),
            (503, Some("pending")),
            "replica {i}"
        );
    }
    assert_eq!(token_status(&fleet, &tid).await, "pending-resume");
    let _ = ws_url(&lb.base, &token);
}

/// Sends `inc` keyed `key` through `base`: the status, and whether it was a replay.
async fn keyed_inc(http: &reqwest::Client, base: &str, token: &str, key: &str) -> (u16, bool) {
    let resp = http
        .post(format!("{base}/agent/lap/v1/message"))
        .bearer_auth(token)
        .json(&json!({"msg": {"type": "inc"}, "idempotencyKey": key, "waitFor": "idle"}))
        .timeout(Duration::from_secs(20))
        .send()
        .await;
    match resp {
        Ok(r) => (
            r.status().as_u16(),
            r.headers().get("idempotent-replayed").is_some(),
        ),
        // No answer at all: the outcome is unknown.
        Err(_) => (0, false),
    }
}

/// The app's count through `base` (retrying while the app re-pairs, 20 s at most).
async fn count(base: &str, token: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _, body) = lap(base, token, "/state", json!({})).await;
        if status == 200 {
            return body["state"]["count"].as_i64().expect("count");
        }
        assert!(
            Instant::now() < deadline,
            "no state within 20 s: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rust_app_survives_the_sigkill_of_its_sockets_replica_behind_a_load_balancer() {
    let mut fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 3, PAIRING, "1s");
    let lb = Haproxy::start(&fleet.ports);
    let (token, tid) = mint_paired(&lb.base).await;
    let mut app = AppProcess::start(env!("CARGO_BIN_EXE_paired-counter"), &lb.base, &token);
    app.expect("status Paired").await;
    let held = holder_where(&fleet, &tid, Duration::from_secs(10), |_| true).await;
    let http = reqwest::Client::new();

    // Keyed messages through the load balancer, each answered once; a repeat replays.
    for k in 0..9 {
        let (status, replayed) = keyed_inc(&http, &lb.base, &token, &format!("k{k}")).await;
        assert_eq!((status, replayed), (200, false), "k{k}");
    }
    assert_eq!(count(&lb.base, &token).await, 9);
    for k in 0..3 {
        let (status, replayed) = keyed_inc(&http, &fleet.base(k), &token, "k4").await;
        assert_eq!((status, replayed), (200, true), "replica {k}");
    }
    assert_eq!(count(&lb.base, &token).await, 9);

    // MCP: the stateless generation through the load balancer, then a session.
    for _ in 0..3 {
        let answer = send_raw(stateless_tool_call(
            &http,
            &lb.base,
            Some(&token),
            "lb-test",
            "get_state",
            json!({}),
        ))
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let content = &answer.body["result"]["structuredContent"];
        assert_eq!(content["state"]["count"], 9, "{}", answer.body);
    }
    // The session generation on a replica without the socket (its session registry is the
    // replica's own: through a load balancer without stickiness it needs the shared registry of
    // issue 50's second item).
    let elsewhere = (0..3).find(|i| *i != held).expect("another replica");
    let agent = McpAgent::connect(&fleet.base(elsewhere), &token).await;
    for _ in 0..3 {
        let read = agent.call("get_state", json!({})).await;
        assert_eq!(read["state"]["count"], 9, "{read}");
    }
    let sent = agent
        .call(
            "send_message",
            json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await;
    assert_eq!(sent["status"], "dispatched", "{sent}");
    agent.close().await;
    assert_eq!(count(&lb.base, &token).await, 10);

    // A `/wait` on a replica without the socket, and keyed messages through the load balancer
    // while the socket's replica is killed.
    let other = (0..3).find(|i| *i != held).expect("another replica");
    let waiting = spawn_lap(
        &fleet.base(other),
        &token,
        "/wait",
        json!({"path": "/view", "timeoutMs": 60000}),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (base, token, stop, http) =
            (lb.base.clone(), token.clone(), stop.clone(), http.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut k = 0;
            while !stop.load(Ordering::SeqCst) {
                let key = format!("f{k}");
                answers.push((key.clone(), keyed_inc(&http, &base, &token, &key).await));
                k += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            answers
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let killed_at = Instant::now();
    fleet.kill(held);
    let (status, reconnect, body) = waiting.await.expect("wait");
    let waited = killed_at.elapsed();
    assert_eq!(
        (status, reconnect.as_deref()),
        (503, Some("pending")),
        "{body}"
    );
    assert!(
        waited < PING + Duration::from_secs(1),
        "the wait answered after {waited:?}"
    );

    // The app re-pairs through the load balancer, on a live replica; the agent goes on.
    app.expect("status Paired").await;
    let repaired = holder_where(&fleet, &tid, Duration::from_secs(10), |i| i != held).await;
    assert_ne!(repaired, held);
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::SeqCst);
    let answers = sender.await.expect("sender");
    let ok: Vec<&String> = answers
        .iter()
        .filter(|(_, (s, _))| *s == 200)
        .map(|(k, _)| k)
        .collect();
    let unknown = answers.len() - ok.len();
    let after = count(&lb.base, &token).await - 10;
    eprintln!(
        "during the kill: {} keyed sends, {} answered 200, {unknown} without an answer of the \
         app (503/502/none); the app applied {after}",
        answers.len(),
        ok.len()
    );
    assert!(
        ok.len() >= 2,
        "messages answered after the re-pair: {answers:?}"
    );
    // Every key answered 200 applied once; a key without an answer at most once.
    assert!(
        after >= ok.len() as i64 && after <= answers.len() as i64,
        "applied {after}, answered {}, sent {}",
        ok.len(),
        answers.len()
    );
    // Repeats of the answered keys, through every live replica, replay: nothing applies twice.
    for key in &ok {
        for i in (0..3).filter(|i| *i != held) {
            let (status, replayed) = keyed_inc(&http, &fleet.base(i), &token, key).await;
            assert_eq!((status, replayed), (200, true), "{key} on replica {i}");
        }
    }
    assert_eq!(count(&lb.base, &token).await - 10, after);
    app.say("quit").await;
}
