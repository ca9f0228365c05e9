//! The human event stream: numbered events, snapshot, and replay after `Last-Event-ID`
//! (`docs/lap.md` §6.6).

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::{start_app, Minted, TestServer, USER_HEADER};
use futures::StreamExt;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
struct Sse {
    id: u64,
    event: String,
    data: Value,
}

struct Stream {
    inner: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: String,
}

impl Stream {
    async fn open(t: &TestServer<Counter>, m: &Minted, last: Option<&str>) -> Stream {
        let mut req = t
            .request(
                reqwest::Method::GET,
                &format!("/agent/human/sessions/{}/events", m.session_id),
            )
            .header(USER_HEADER, "alice");
        if let Some(l) = last {
            req = req.header("last-event-id", l);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        Stream {
            inner: Box::pin(resp.bytes_stream()),
            buf: String::new(),
        }
    }

    async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut ev = Sse {
                    id: 0,
                    event: String::new(),
                    data: Value::Null,
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        ev.id = v.trim().parse().unwrap();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        ev.event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        ev.data = serde_json::from_str(v.trim()).unwrap();
                    }
                }
                if any {
                    return Some(ev);
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.inner.next())
                .await
                .ok()??
                .ok()?;
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next event within `ms`, or `None`.
    async fn next_within(&mut self, ms: u64) -> Option<Sse> {
        tokio::time::timeout(Duration::from_millis(ms), self.next())
            .await
            .ok()
            .flatten()
    }
}

#[tokio::test]
async fn stream_opens_with_a_snapshot_and_follows_the_agent() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let mut s = Stream::open(&t, &m, None).await;
    let first = s.next().await.unwrap();
    assert_eq!(first.event, "state");
    assert_eq!(first.data["snapshot"], true);
    assert_eq!(first.data["state"]["count"], 0);
    t.lap(&m.token, "/message", &json!({"msg":{"type":"inc"}}))
        .await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(s.next().await.unwrap());
    }
    let names: Vec<&str> = seen.iter().map(|e| e.event.as_str()).collect();
    assert!(
        names.contains(&"state") && names.contains(&"log"),
        "{names:?}"
    );
    assert!(seen[0].id < seen[1].id);
    let state = seen.iter().find(|e| e.event == "state").unwrap();
    assert_eq!(
        state.data["stateDiff"],
        json!([{"op":"replace","path":"/count","value":1}])
    );
    // A proposal produces a confirm event.
    let _proposal = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg":{"type":"delete","id":"1"},"timeoutMs":50}),
    );
    let mut kinds = Vec::new();
    while !kinds.contains(&"confirm".to_string()) {
        kinds.push(s.next().await.unwrap().event);
    }
    // Closing the session ends the stream.
    t.server
        .host()
        .close_session(&m.session_id)
        .await
        .expect("closed");
    loop {
        if s.next().await.is_none() {
            break;
        }
    }
}

#[tokio::test]
async fn reconnecting_replays_what_was_missed() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    t.lap(&m.token, "/narrate", &json!({"text":"zero"})).await;
    let view = t
        .get(
            &format!("/agent/human/sessions/{}", m.session_id),
            Some("alice"),
        )
        .await;
    let n = view.body["lastEventId"].as_u64().unwrap();
    assert!(n >= 1);
    for text in ["one", "two", "three"] {
        t.lap(&m.token, "/narrate", &json!({ "text": text })).await;
    }
    for _ in 0..2 {
        t.human_dispatch("alice", &m, json!({"type":"inc"})).await;
    }
    let mut s = Stream::open(&t, &m, Some(&n.to_string())).await;
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(s.next().await.unwrap());
    }
    let names: Vec<&str> = got.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, vec!["log", "log", "log", "state"]);
    let ids: Vec<u64> = got.iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![n + 1, n + 2, n + 3, n + 5]);
    assert_eq!(
        got[3].data,
        json!({"state":{"count":2,"lastDelete":null,"view":"home"}})
    );
    assert!(
        s.next_within(300).await.is_none(),
        "nothing else was missed"
    );
    // The newest id → nothing until the next event; a bad id → a snapshot.
    let newest = n + 5;
    let mut s = Stream::open(&t, &m, Some(&newest.to_string())).await;
    assert!(s.next_within(200).await.is_none());
    let mut s = Stream::open(&t, &m, Some("abc")).await;
    let e = s.next().await.unwrap();
    assert_eq!(
        (e.event.as_str(), e.id, e.data["snapshot"].clone()),
        ("state", newest, json!(true))
    );
    let mut s = Stream::open(&t, &m, Some("9999")).await;
    assert_eq!(s.next().await.unwrap().data["snapshot"], true);
}
