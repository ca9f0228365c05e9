//! Paired sessions bounded in bytes and time (issue 25, `docs/pairing.md` §Bounds): a hostile
//! app or a vanished agent cannot pin the server's memory or hold a socket open. Real sockets
//! throughout (the raw [`Tab`] client stops reading, sends oversize or malformed frames, drops
//! calls); memory is the process's resident size, as in `hostile_memory.rs`. The tests of this
//! file run one at a time so their figures do not mix.

use std::io::Write;
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::resident::resident_mib;
use agent_tests::tab::{ws_url, Tab};
use agent_tests::{Minted, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::pairing::PairingOptions;
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

/// The tests of this file measure the whole process: one at a time.
static SERIAL: Mutex<()> = Mutex::const_new(());

/// The growth of the resident size each attack must stay under.
const CEILING_MIB: u64 = 96;

/// The close grace of [`server`].
const GRACE_MS: u64 = 300;

fn assert_bounded(label: &str, before: u64, ceiling: u64) -> u64 {
    let after = resident_mib();
    eprintln!("{label}: RSS {before} MiB -> {after} MiB");
    assert!(
        after <= before + ceiling,
        "{label}: RSS grew from {before} MiB to {after} MiB (ceiling +{ceiling} MiB)"
    );
    after
}

/// A counter server minting paired sessions, with short windows and `change` applied to the
/// pairing options.
async fn server(change: impl FnOnce(&mut PairingOptions)) -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("1000000/second")
        .anonymous()
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
            p.grace = std::time::Duration::from_millis(600);
            p.forward_timeout = std::time::Duration::from_millis(400);
            p.close_grace = std::time::Duration::from_millis(GRACE_MS);
            change(p);
        })
        .start()
        .await
}

async fn mint(t: &TestServer<Counter>, user: &str) -> Minted {
    let a = t
        .post_json("/agent/mint", Some(user), None, &json!({"paired": true}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    Minted {
        token: a.body["token"].as_str().unwrap().into(),
        tid: a.body["tid"].as_str().unwrap().into(),
        session_id: a.body["sessionId"].as_str().unwrap().into(),
    }
}

async fn revoke(t: &TestServer<Counter>, user: &str, tid: &str) {
    let a = t
        .post_json("/agent/revoke", Some(user), None, &json!({ "tid": tid }))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
}

/// Sixteen ~1 MB `/message` calls to `m`'s app: answers their statuses and error codes.
async fn flood(t: &TestServer<Counter>, m: &Minted) -> Vec<(u16, Value)> {
    let pad = "p".repeat(1_000_000);
    let calls: Vec<_> = (0..16)
        .map(|i| {
            t.spawn_lap(
                &m.token,
                "/message",
                json!({"msg": {"type": "inc", "i": i, "pad": pad}, "timeoutMs": 0}),
            )
        })
        .collect();
    let mut answers = Vec::new();
    for c in calls {
        let a = c.await.unwrap();
        answers.push((a.status, a.body["error"]["code"].clone()));
        if a.status == 503 {
            assert_eq!(a.body["error"]["code"], "app-not-reading", "{}", a.body);
            let detail = a.body["error"]["detail"].as_str().unwrap();
            assert!(detail.contains("not reading"), "{detail}");
            assert!(a.headers.get("retry-after").is_some());
            assert!(a.headers.get("x-llui-reconnect").is_none());
        }
    }
    answers
}

/// One attack on a fresh session of `t`: a socket that never reads gets sixteen 1 MB
/// messages, is superseded by a second socket that never reads either, which gets sixteen
/// more, then the session is revoked. Both sockets must end within the close grace.
async fn never_reading(t: &TestServer<Counter>, before: u64) {
    let m = mint(t, "alice").await;
    let mut stuck = Tab::pair(&t.base, &m.token).await;
    // The tab stops reading: the queue fills, later calls are refused with a distinct 503
    // while the app stays connected.
    let answers = flood(t, &m).await;
    assert!(answers.iter().any(|(s, _)| *s == 503), "{answers:?}");
    assert!(
        answers.iter().all(|(s, _)| *s == 503 || *s == 504),
        "{answers:?}"
    );
    assert_bounded(
        "16 x 1 MB to a socket that never reads",
        before,
        CEILING_MIB,
    );

    // A second socket supersedes it: the first is dropped within the close grace although
    // its writes are blocked (the write timeout is far away).
    let mut second = Tab::pair(&t.base, &m.token).await;
    tokio::time::sleep(Duration::from_millis(GRACE_MS + 400)).await;
    assert!(
        stuck.close_code(Duration::from_secs(5)).await.is_some(),
        "the superseded socket is still open"
    );
    drop(stuck);

    // The new socket is flooded too, then revoked: closed within the grace.
    let answers = flood(t, &m).await;
    assert!(answers.iter().any(|(s, _)| *s == 503), "{answers:?}");
    revoke(t, "alice", &m.tid).await;
    tokio::time::sleep(Duration::from_millis(GRACE_MS + 400)).await;
    assert!(
        second.close_code(Duration::from_secs(5)).await.is_some(),
        "the revoked socket is still open"
    );
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 403, "{}", a.body);
}

#[tokio::test]
async fn a_socket_that_never_reads_is_closed_by_supersede_and_revoke_and_freed() {
    let _serial = SERIAL.lock().await;
    // A write timeout far past the test: only the close grace can end the blocked writes.
    let t = server(|p| {
        p.write_timeout = std::time::Duration::from_millis(60_000);
        p.outbound_bytes = 2 * 1024 * 1024;
    })
    .await;
    let before = resident_mib();
    never_reading(&t, before).await;
    assert_bounded("after supersede and revoke", before, CEILING_MIB);
    never_reading(&t, before).await;
    let second = assert_bounded("a second round", before, CEILING_MIB);
    // Nothing of a round is kept (the allocator's high-water mark is reached by then): a
    // third round does not grow the process by what it queued (2 x 16 MB).
    never_reading(&t, before).await;
    assert_bounded("a third round", second, 16);
}

#[tokio::test]
async fn a_write_that_does_not_finish_in_time_drops_the_socket() {
    let _serial = SERIAL.lock().await;
    let t = server(|p| {
        p.write_timeout = std::time::Duration::from_millis(500);
        p.outbound_bytes = 2 * 1024 * 1024;
    })
    .await;
    let m = mint(&t, "alice").await;
    let mut stuck = Tab::pair(&t.base, &m.token).await;
    // Messages until the kernel's buffers are full and a write blocks (at most 4 x 16 MB).
    let pad = "p".repeat(1_000_000);
    let mut ended = None;
    for round in 0..4 {
        let calls: Vec<_> = (0..16)
            .map(|i| {
                t.spawn_lap(
                    &m.token,
                    "/message",
                    json!({"msg": {"type": "inc", "i": i, "pad": pad}, "timeoutMs": 0}),
                )
            })
            .collect();
        for c in calls {
            let status = c.await.unwrap().status;
            assert!([503, 504].contains(&status), "{status}");
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
        // Nobody superseded or revoked it: only the write timeout can end the pairing.
        let a = t.lap(&m.token, "/state", &json!({})).await;
        if a.body["error"]["code"] == "paused" {
            ended = Some(round);
            break;
        }
    }
    assert!(ended.is_some(), "the blocked socket is still paired");
    assert!(stuck.close_code(Duration::from_secs(5)).await.is_some());
}

#[tokio::test]
async fn dropped_waits_leave_no_watch_behind() {
    let _serial = SERIAL.lock().await;
    let t = server(|_| {}).await;
    let m = mint(&t, "alice").await;
    let before = resident_mib();
    let mut tab = Tab::pair(&t.base, &m.token).await;
    // Forty `/wait` calls whose HTTP requests the agent abandons after 300 ms.
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let waits: Vec<_> = (0..40)
        .map(|_| {
            let request = impatient
                .post(format!("{}/agent/lap/v1/wait", t.base))
                .header("content-type", "application/json")
                .bearer_auth(&m.token)
                .body(json!({"timeoutMs": 60_000}).to_string());
            tokio::spawn(async move { request.send().await.is_err() })
        })
        .collect();
    for w in waits {
        assert!(w.await.unwrap(), "the agent gave up");
    }
    // Each armed watch is disarmed as soon as its call is gone.
    let mut armed = std::collections::HashSet::new();
    let mut disarmed = std::collections::HashSet::new();
    while disarmed.len() < 40 {
        let f = tab
            .try_next(Duration::from_secs(5))
            .await
            .expect("watch frames");
        let id = f["id"].as_str().unwrap().to_string();
        match f["t"].as_str().unwrap() {
            "watch" => armed.insert(id),
            "unwatch" => disarmed.insert(id),
            other => panic!("unexpected {other}"),
        };
    }
    assert_eq!(armed, disarmed);
    // Updates of the dead watches (4 MiB each) are ignored and keep nothing.
    let big = json!({"s": "x".repeat(4 * 1024 * 1024 - 200)});
    for id in armed.iter().take(2) {
        tab.send(json!({"t": "state-update", "id": id, "path": "", "stateAfter": big}))
            .await;
    }
    // A new socket gets none of them again.
    let mut next = Tab::pair(&t.base, &m.token).await;
    assert_eq!(next.try_next(Duration::from_millis(500)).await, None);
    // A live wait still works on it.
    let pending = t.spawn_lap(&m.token, "/wait", json!({"timeoutMs": 3000}));
    let watch = next.try_next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(watch["t"], "watch");
    next.send(
        json!({"t": "state-update", "id": watch["id"], "path": "", "stateAfter": {"count": 2}}),
    )
    .await;
    let a = pending.await.unwrap();
    assert_eq!(
        a.body,
        json!({"status": "changed", "stateAfter": {"count": 2}})
    );
    next.close().await;
    revoke(&t, "alice", &m.tid).await;
    assert_bounded("40 dropped waits, 2 dead updates", before, 48);
}

/// Proposes on `tab` for a `/message` call and answers with `confirm-resolved` in the same
/// write as the `pending-confirmation` reply; answers the `/message` result.
async fn propose(
    t: &TestServer<Counter>,
    m: &Minted,
    tab: &mut Tab,
    id: &str,
    state: Value,
) -> Value {
    let call = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg": {"type": "reset"}, "timeoutMs": 0}),
    );
    // The first success of a session pushes `active` before the next rpc.
    let mut frame = tab.next().await;
    if frame["t"] == "active" {
        frame = tab.next().await;
    }
    assert_eq!(frame["tool"], "send_message", "{frame}");
    let rpc = frame["id"].as_str().unwrap().to_string();
    tab.send_together(
        json!({"t": "rpc-reply", "id": rpc, "result": {"status": "pending-confirmation", "confirmId": id}}),
        json!({"t": "confirm-resolved", "confirmId": id, "outcome": "confirmed", "stateAfter": state}),
    )
    .await;
    call.await.unwrap().body
}

#[tokio::test]
async fn an_outcome_sent_with_the_reply_is_delivered() {
    let _serial = SERIAL.lock().await;
    let t = server(|_| {}).await;
    let m = mint(&t, "alice").await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let first = propose(&t, &m, &mut tab, "c1", json!({"count": 0})).await;
    assert!(
        first["status"] == "pending-confirmation" || first["status"] == "confirmed",
        "{first}"
    );
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "c1", "timeoutMs": 0}),
        )
        .await;
    assert_eq!(
        a.body,
        json!({"status": "confirmed", "stateAfter": {"count": 0}})
    );
}

#[tokio::test]
async fn hello_and_outcomes_stay_within_their_budgets() {
    let _serial = SERIAL.lock().await;
    let t = server(|_| {}).await;
    let m = mint(&t, "alice").await;
    let before = resident_mib();

    // A 4 MiB hello is over the hello budget (1 MiB): closed with 1009, nothing kept.
    let mut tab = Tab::open(&ws_url(&t.base, &m.token), &[]).await.unwrap();
    let mut hello = json!({
        "t": "hello", "appName": "big", "appVersion": "1",
        "msgSchema": {"discriminant": "type", "variants": {}},
        "stateSchema": {"type": "object"},
        "docs": {"text": "d".repeat(4 * 1024 * 1024 - 400)},
        "schemaHash": "0123456789abcdef0123456789abcdef", "lapVersion": 2,
    });
    tab.send(hello.clone()).await;
    assert_eq!(tab.close_code(Duration::from_secs(5)).await, Some(1009));
    let a = t.lap(&m.token, "/describe", &json!({})).await;
    assert_eq!(a.status, 503, "{}", a.body);

    // A hello under the budget is kept as its text and described.
    let mut tab = Tab::open(&ws_url(&t.base, &m.token), &[]).await.unwrap();
    hello["docs"] = json!({"text": "d".repeat(900_000)});
    tab.send(hello).await;
    // Inside the grace window the server says `active` first.
    let mut first = tab.next().await;
    if first["t"] == "active" {
        first = tab.next().await;
    }
    assert_eq!(first["t"], "hello-ack");
    let a = t.lap(&m.token, "/describe", &json!({})).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["docs"]["text"].as_str().unwrap().len(), 900_000);

    // 64 outcomes with a 3.9 MiB stateAfter each (over the per-outcome budget: answered as
    // null) and 64 of 900 KB (the oldest dropped past the total).
    let huge = json!({"s": "h".repeat(3_900_000)});
    for i in 0..64 {
        propose(&t, &m, &mut tab, &format!("h{i}"), huge.clone()).await;
    }
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "h63", "timeoutMs": 0}),
        )
        .await;
    assert_eq!(a.body, json!({"status": "confirmed", "stateAfter": null}));
    let large = json!({"s": "l".repeat(900_000)});
    for i in 0..64 {
        propose(&t, &m, &mut tab, &format!("l{i}"), large.clone()).await;
    }
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "l63", "timeoutMs": 0}),
        )
        .await;
    assert_eq!(a.body["stateAfter"]["s"].as_str().unwrap().len(), 900_000);
    let a = t
        .lap(
            &m.token,
            "/confirm-result",
            &json!({"confirmId": "l0", "timeoutMs": 0}),
        )
        .await;
    assert_eq!(a.body, json!({"status": "still-pending"}));
    assert_bounded("a 4 MiB hello and 128 large outcomes", before, CEILING_MIB);
    tab.close().await;
}

/// Log lines written by the server, captured once for the whole test binary.
fn captured() -> Arc<StdMutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<StdMutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buffer = Arc::new(StdMutex::new(Vec::new()));
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || Capture(writer.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        buffer
    })
    .clone()
}

struct Capture(Arc<StdMutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn invalid_frames_are_logged_escaped_and_rate_limited() {
    let _serial = SERIAL.lock().await;
    let log = captured();
    let t = server(|_| {}).await;
    let m = mint(&t, "alice").await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let forged = "x\n2026-01-01T00:00:00.000000Z ERROR forged: \u{1b}[31mred";
    tab.send(json!({ "t": forged })).await;
    // A round trip: the frame was handled.
    let pending = t.spawn_lap(&m.token, "/context", json!({}));
    let (id, _) = tab.rpc("describe_context").await;
    tab.reply(&id, json!({})).await;
    pending.await.unwrap();
    assert_eq!(tab.next().await["t"], "active");
    let text = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&m.tid) || l.contains("forged"))
        .collect();
    let dropped: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("invalid frame dropped"))
        .collect();
    assert_eq!(dropped.len(), 1, "{lines:#?}");
    assert!(
        dropped[0].contains(r"x\\n2026") || dropped[0].contains(r"x\n2026"),
        "{}",
        dropped[0]
    );
    assert!(!text.contains('\u{1b}'), "a raw escape reached the log");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("2026-01-01T00:00:00.000000Z")),
        "a forged line reached the log"
    );
    // A flood of invalid frames: a handful of warnings per window.
    for i in 0..50 {
        tab.send(json!({ "t": format!("bad{i}") })).await;
    }
    let pending = t.spawn_lap(&m.token, "/context", json!({}));
    let (id, _) = tab.rpc("describe_context").await;
    tab.reply(&id, json!({})).await;
    pending.await.unwrap();
    let text = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    let warnings = text
        .lines()
        .filter(|l| l.contains(&m.tid) && l.contains("invalid frame dropped"))
        .count();
    assert!(warnings <= 5, "{warnings} warnings for 51 invalid frames");
    tab.close().await;
}

#[tokio::test]
async fn hello_deadline_pings_and_close_codes() {
    let _serial = SERIAL.lock().await;
    let t = server(|p| {
        p.hello_timeout = std::time::Duration::from_millis(300);
        p.ping_interval = std::time::Duration::from_millis(200);
    })
    .await;
    // A fresh session per socket: each opens outside any grace window.
    let m = mint(&t, "alice").await;
    let url = ws_url(&t.base, &m.token);

    // No hello: closed with 1008 after the deadline.
    let mut silent = Tab::open(&url, &[]).await.unwrap();
    assert_eq!(silent.close_code(Duration::from_secs(3)).await, Some(1008));

    // Paired but never answering pings (the tab does not read): closed with 1001.
    let m = mint(&t, "alice").await;
    let mut deaf = Tab::pair(&t.base, &m.token).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(deaf.close_code(Duration::from_secs(3)).await, Some(1001));

    // A tab that reads (and so answers pings) stays open past several intervals.
    let m = mint(&t, "alice").await;
    let mut alive = Tab::pair(&t.base, &m.token).await;
    let open = tokio::time::timeout(
        Duration::from_millis(1200),
        alive.close_code(Duration::from_secs(5)),
    )
    .await;
    assert!(open.is_err(), "closed: {open:?}");
    let a = t.lap(&m.token, "/describe", &json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);

    // A frame whose header announces more than the cap (5 MiB; only its first bytes follow,
    // so this side is not left blocked writing): 1009.
    let mut header = vec![0x81, 0x80 | 127];
    header.extend_from_slice(&(5u64 << 20).to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4, b'x' ^ 1, b'y' ^ 2]);
    alive.send_raw(&header).await;
    assert_eq!(alive.close_code(Duration::from_secs(5)).await, Some(1009));

    // Text that is not UTF-8: 1007.
    let m = mint(&t, "alice").await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let bad = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
    tab.send_message(Message::Frame(bad)).await.unwrap();
    assert_eq!(tab.close_code(Duration::from_secs(5)).await, Some(1007));

    // A reserved opcode: 1002.
    let m = mint(&t, "alice").await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let bad = Frame::message(vec![1, 2, 3], OpCode::Data(Data::Reserved(3)), true);
    tab.send_message(Message::Frame(bad)).await.unwrap();
    assert_eq!(tab.close_code(Duration::from_secs(5)).await, Some(1002));
}

#[tokio::test]
async fn paired_mints_are_capped_per_identity_and_for_anonymous_callers() {
    let _serial = SERIAL.lock().await;
    let t = server(|p| {
        p.max_sessions_per_identity = 3;
        p.anonymous_mints_per_minute = 2;
    })
    .await;
    let mut tids = Vec::new();
    for _ in 0..3 {
        tids.push(mint(&t, "carol").await.tid);
    }
    let a = t
        .post_json("/agent/mint", Some("carol"), None, &json!({"paired": true}))
        .await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "rate-limited");
    assert!(a.headers.get("retry-after").is_some());
    // A revoked one frees its slot; hosted mints are not counted.
    revoke(&t, "carol", &tids[0]).await;
    mint(&t, "carol").await;
    let a = t
        .post_json(
            "/agent/mint",
            Some("carol"),
            None,
            &json!({"paired": false}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);

    // Anonymous callers (no identity, a fresh cookie each time): two per minute in all.
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let a = t
            .post_json("/agent/mint", None, None, &json!({"paired": true}))
            .await;
        statuses.push(a.status);
        if a.status == 429 {
            assert!(a.headers.get("retry-after").is_some());
        }
    }
    assert_eq!(statuses, [200, 200, 429]);
}
