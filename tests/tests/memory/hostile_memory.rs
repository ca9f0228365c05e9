//! Memory under hostile load (issue 13, byte budgets and streaming replay): the attacks of the
//! issue against a real server on `127.0.0.1:0`, each followed by the process's resident size
//! (`VmRSS` of `/proc/self/status`; the server runs in this test process). The tests of this
//! file run one at a time so their figures do not mix.

use std::time::Duration;

use crate::SERIAL;
use agent_examples::counter::Counter;
use agent_tests::resident::resident_mib;
use agent_tests::{Minted, TestServer, USER_HEADER};
use serde_json::{json, Value};

/// The growth of the resident size every attack below must stay under.
const CEILING_MIB: u64 = 96;

/// A counter server with the default budgets and a rate limit out of the way.
async fn server() -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("1000000/second")
        .start()
        .await
}

fn assert_bounded(label: &str, before: u64) {
    let after = resident_mib();
    eprintln!("{label}: RSS {before} MiB -> {after} MiB");
    assert!(
        after <= before + CEILING_MIB,
        "{label}: RSS grew from {before} MiB to {after} MiB (ceiling +{CEILING_MIB} MiB)"
    );
}

async fn narrate(t: &TestServer<Counter>, m: &Minted, text: String) -> agent_tests::Answer {
    t.lap(&m.token, "/narrate", &json!({ "text": text })).await
}

#[tokio::test]
async fn narrations_are_bounded_and_replays_stream() {
    let _serial = SERIAL.lock().await;
    let t = server().await;
    let m = t.mint("alice", None).await;
    let before = resident_mib();

    // One narration of ~1 MiB: refused with the limit, nothing logged.
    let big = narrate(&t, &m, "x".repeat(1_000_000)).await;
    assert_eq!(big.status, 413, "{}", big.body);
    assert_eq!(big.body["error"]["code"], "payload-too-large");
    assert_eq!(
        big.body["error"]["detail"],
        "text is 1000000 bytes; the limit is 16384"
    );

    // Fill the history with narrations at the budget.
    for i in 0..300 {
        let a = narrate(&t, &m, format!("{i:05}{}", "n".repeat(16_000))).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let recent = t.lap(&m.token, "/recent-actions", &json!({"n": 100})).await;
    let bytes = recent.body.to_string().len();
    assert!(bytes <= 1024 * 1024 + 64 * 1024, "recent-actions: {bytes}");

    // Subscribers that never read: a replay from the start, and replays within the history.
    let session = t.server.host().session(&m.session_id).unwrap();
    let newest = session.last_event_id();
    let mut idle = Vec::new();
    for i in 0..20u64 {
        let last = if i % 2 == 0 { 1 } else { newest - 200 };
        let resp = t
            .request(
                reqwest::Method::GET,
                &format!("/agent/human/sessions/{}/events", m.session_id),
            )
            .header(USER_HEADER, "alice")
            .header("last-event-id", last.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        idle.push(resp);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_bounded("20 idle SSE subscribers", before);

    // More events while they sit: the live buffer stays bounded and laggards are dropped.
    for i in 0..300 {
        let a = narrate(&t, &m, format!("{i:05}{}", "m".repeat(16_000))).await;
        assert_eq!(a.status, 200);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_bounded("300 more narrations with idle subscribers", before);
    drop(idle);

    // A reader replaying within the history gets consecutive ids.
    let newest = session.last_event_id();
    let resp = t
        .request(
            reqwest::Method::GET,
            &format!("/agent/human/sessions/{}/events", m.session_id),
        )
        .header(USER_HEADER, "alice")
        .header("last-event-id", (newest - 3).to_string())
        .send()
        .await
        .unwrap();
    let mut body = String::new();
    let mut resp = resp;
    while body.matches("\n\n").count() < 3 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), resp.chunk())
            .await
            .expect("replay in time")
            .unwrap()
            .expect("more replay");
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    let ids: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert_eq!(ids[..3], [newest - 2, newest - 1, newest]);
}

#[tokio::test]
async fn parked_confirmations_are_bounded() {
    let _serial = SERIAL.lock().await;
    let t = server().await;
    let m = t.mint("alice", None).await;
    let before = resident_mib();
    let delete = |id: String| json!({"msg": {"type": "delete", "id": id}, "timeoutMs": 0});

    // A proposal with a ~1 MiB id: refused with the limit.
    let a = t
        .lap(&m.token, "/message", &delete("i".repeat(1_000_000)))
        .await;
    assert_eq!(a.status, 413, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "payload-too-large");
    let detail = a.body["error"]["detail"].as_str().unwrap();
    assert!(detail.ends_with("; the limit is 32768"), "{detail}");

    // 300 proposals with ids just under the budget: the pending total fills, then 429.
    let (mut parked, mut refused) = (0, 0);
    for i in 0..300 {
        let a = t
            .lap(
                &m.token,
                "/message",
                &delete(format!("{i:05}{}", "i".repeat(32_000))),
            )
            .await;
        match a.status {
            200 => parked += 1,
            429 => {
                refused += 1;
                let detail = a.body["error"]["detail"].as_str().unwrap();
                assert!(detail.contains("the limit is"), "{detail}");
                assert!(a.body["error"]["retryAfterMs"].as_u64().is_some());
            }
            s => panic!("unexpected {s}: {}", a.body),
        }
    }
    assert!(parked > 0 && parked <= 64, "{parked} parked");
    assert_eq!(parked + refused, 300);
    // The owner's view stays small.
    let view = t
        .get(
            &format!("/agent/human/sessions/{}", m.session_id),
            Some("alice"),
        )
        .await;
    let bytes = view.body.to_string().len();
    assert!(bytes <= 4 * 1024 * 1024, "session view: {bytes} bytes");
    // Small proposals still count against the number.
    let many = t.mint("bob", None).await;
    let mut statuses = Vec::new();
    for i in 0..70 {
        statuses.push(
            t.lap(&many.token, "/message", &delete(i.to_string()))
                .await
                .status,
        );
    }
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 64);
    assert_eq!(statuses[64..], [429; 6]);
    assert_bounded("300 parked confirmations with big ids", before);
}

#[tokio::test]
async fn idempotency_records_are_bounded() {
    let _serial = SERIAL.lock().await;
    let t = server().await;
    let m = t.mint("alice", None).await;
    let before = resident_mib();
    let keyed = |key: String, pad: usize| -> Value {
        json!({"msg": {"type": "inc", "pad": "p".repeat(pad)}, "idempotencyKey": key})
    };

    let a = t
        .lap(&m.token, "/message", &keyed("big".into(), 1_000_000))
        .await;
    assert_eq!(a.status, 413, "{}", a.body);
    let detail = a.body["error"]["detail"].as_str().unwrap();
    assert!(detail.ends_with("; the limit is 262144"), "{detail}");
    // Unkeyed, the same message is dispatched.
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "inc", "pad": "p".repeat(1_000_000)}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);

    let (mut stored, mut refused) = (0, 0);
    for i in 0..100 {
        let a = t
            .lap(&m.token, "/message", &keyed(format!("k{i}"), 200_000))
            .await;
        match a.status {
            200 => stored += 1,
            429 => {
                refused += 1;
                let detail = a.body["error"]["detail"].as_str().unwrap();
                assert!(detail.ends_with("; the limit is 4194304"), "{detail}");
            }
            s => panic!("unexpected {s}: {}", a.body),
        }
    }
    assert!((15..=21).contains(&stored), "{stored} stored");
    assert_eq!(stored + refused, 100);
    // A stored record still replays.
    let a = t
        .lap(&m.token, "/message", &keyed("k0".into(), 200_000))
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.headers["idempotent-replayed"], "true");
    assert_bounded("100 keyed messages of 200 KB", before);
}
