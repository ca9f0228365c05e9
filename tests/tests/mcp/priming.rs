//! The SSE priming event (an id, a `retry` and empty data; SEP-1699) only for clients of
//! 2025-11-25 and later (`docs/mcp.md` §Event streams), read as raw bytes off the wire: a client
//! that negotiated an earlier revision (Gemini CLI's SDK asks for 2025-06-18 and parses every
//! event's data as JSON) never gets an event with empty data, on the `initialize` answer, a
//! request's stream or the GET stream; one of 2025-11-25 gets the priming event first on each.

use std::time::Duration;

use agent_examples::counter::Counter;
use futures::StreamExt as _;
use serde_json::{json, Value};

use super::actions::server;
use super::host_quirks::post;

/// The events of an SSE text, each as its lines (comments, such as keep-alives, left out).
fn events(text: &str) -> Vec<Vec<String>> {
    text.split("\n\n")
        .map(|event| {
            event
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with(':'))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|lines| !lines.is_empty())
        .collect()
}

/// Whether an event's data is empty (a priming event, or a `retry` alone).
fn has_empty_data(event: &[String]) -> bool {
    let data: Vec<&str> = event
        .iter()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .collect();
    !data.is_empty() && data.iter().all(|d| d.is_empty())
}

/// Every event with data carries JSON (what Gemini CLI's SDK parses).
fn assert_json_data(text: &str, what: &str) {
    for event in events(text) {
        for data in event.iter().filter_map(|l| l.strip_prefix("data:")) {
            if !data.trim().is_empty() {
                serde_json::from_str::<Value>(data.trim())
                    .unwrap_or_else(|e| panic!("{what}: data is not JSON ({e}): {text:?}"));
            }
        }
    }
}

/// Asserts what `text`, a stream of a client of `version`, opens with.
fn assert_primed_as(version: &str, text: &str, what: &str) {
    let events = events(text);
    assert!(!events.is_empty(), "{what} ({version}): no event: {text:?}");
    assert_json_data(text, what);
    if version >= "2025-11-25" {
        let first = &events[0];
        assert!(
            has_empty_data(first) && first.iter().any(|l| l.starts_with("retry:")),
            "{what} ({version}): the stream opens with a priming event: {text:?}"
        );
        assert!(
            first.iter().any(|l| l.starts_with("id:")),
            "{what} ({version}): the priming event has an id: {text:?}"
        );
    } else {
        assert!(
            !events.iter().any(|e| has_empty_data(e)),
            "{what} ({version}): no event with empty data below 2025-11-25: {text:?}"
        );
    }
}

/// Status, `mcp-session-id` and the whole body as text.
async fn raw(req: reqwest::RequestBuilder) -> (u16, Option<String>, String) {
    let resp = req.send().await.expect("request");
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let status = resp.status().as_u16();
    let body = tokio::time::timeout(Duration::from_secs(10), resp.text())
        .await
        .expect("the answer ends")
        .expect("body");
    (status, session, body)
}

/// The first bytes of a stream that stays open: what arrives within `window` after the
/// first event (or after the head, when nothing does).
async fn first_bytes(resp: reqwest::Response, window: Duration) -> String {
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + window;
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, stream.next()).await {
        text.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
    }
    text
}

#[tokio::test]
async fn only_clients_of_2025_11_25_and_later_get_the_priming_event() {
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;
    let bearer = format!("Bearer {}", m.token);
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        // `initialize`: its answer is a stream.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "priming", "version": "1"}}});
        let (status, session, text) = raw(post(&t, &init, &[("authorization", &bearer)])).await;
        assert_eq!(status, 200, "{version}: {text}");
        assert_primed_as(version, &text, "initialize");
        assert!(
            text.contains(&format!("\"protocolVersion\":\"{version}\"")),
            "{text}"
        );
        let session = session.expect("mcp-session-id");
        // Below 2025-06-18 a client sends no `MCP-Protocol-Version` header.
        let mut headers = vec![("mcp-session-id", session.as_str())];
        if version >= "2025-06-18" {
            headers.push(("mcp-protocol-version", version));
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = raw(post(&t, &initialized, &headers)).await;
        assert_eq!(status, 202, "{version}");

        // A request rmcp answers with a stream of its own.
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let (status, _, text) = raw(post(&t, &list, &headers)).await;
        assert_eq!(status, 200, "{version}: {text}");
        assert_primed_as(version, &text, "tools/list");
        assert!(text.contains("\"tools\""), "{version}: {text}");

        // The GET stream for notifications stays open: its first bytes.
        let mut get = t
            .request(reqwest::Method::GET, "/agent/mcp")
            .header("accept", "text/event-stream");
        for (name, value) in &headers {
            get = get.header(*name, *value);
        }
        let resp = get.send().await.expect("GET");
        assert_eq!(resp.status(), 200, "{version}: GET");
        let text = first_bytes(resp, Duration::from_millis(500)).await;
        if version >= "2025-11-25" {
            assert_primed_as(version, &text, "GET");
        } else {
            assert!(
                !events(&text).iter().any(|e| has_empty_data(e)),
                "GET ({version}): no event with empty data: {text:?}"
            );
        }
    }
}

/// 2026-07-28 (sessionless): a `subscriptions/listen` stream, the one that stays open, has
/// nothing to resume without a session (no event store), so rmcp opens it with the
/// acknowledgement and no priming event; every event's data is JSON.
#[tokio::test]
async fn a_sessionless_listen_stream_is_served_as_2026_07_28_says() {
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "priming", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}},
        "notifications": {"toolsListChanged": true}}});
    let resp = post(
        &t,
        &listen,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ],
    )
    .bearer_auth(&m.token)
    .send()
    .await
    .expect("listen");
    assert_eq!(resp.status(), 200);
    let text = first_bytes(resp, Duration::from_millis(500)).await;
    assert_json_data(&text, "subscriptions/listen");
    let events = events(&text);
    let first = events.first().map(|e| e.join("\n")).unwrap_or_default();
    assert!(
        first.contains("notifications/subscriptions/acknowledged"),
        "the stream opens with its acknowledgement: {text:?}"
    );
}
