//! What hosts do that the happy path does not (`docs/mcp.md` §Host behaviours), each on both
//! protocol generations: a `server/discover` followed by `initialize` on the same endpoint; a
//! reconnect that sends only `server/discover` and goes on; a client that caches `tools/list`
//! and calls a tool the state has closed; a client that never opens a stream for
//! notifications (no `subscriptions/listen`, no GET) and still is answered, and learns what
//! changed from the `seq` of its answers.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_examples::todo::TodoApp;
use agent_tests::mcp::{call, ok, send_raw, RawAnswer};
use agent_tests::TestServer;
use serde_json::{json, Value};
use tea_agent_runtime::app::App;

use super::actions::{action_names, legacy, read, server, stateless, tools};

const JSON_AND_SSE: &str = "application/json, text/event-stream";

/// A raw POST to `/agent/mcp` with `headers`.
pub(super) fn post<A: App>(
    t: &TestServer<A>,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    let mut req = t
        .request(reqwest::Method::POST, "/agent/mcp")
        .header("accept", JSON_AND_SSE)
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req
}

/// The `_meta` a request of `version` carries on 2026-07-28.
fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "host-quirks", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `server/discover` as a host sends it, naming `version`, without a session.
async fn discover<A: App>(t: &TestServer<A>, version: &str) -> RawAnswer {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": meta(version)}});
    send_raw(post(
        t,
        &body,
        &[
            ("mcp-protocol-version", version),
            ("mcp-method", "server/discover"),
        ],
    ))
    .await
}

/// A discover answered as the one endpoint serves both generations: every version, no session.
fn assert_discovered(r: &RawAnswer) {
    assert_eq!(r.status, 200, "{r:?}");
    let versions = r.body["result"]["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("supportedVersions: {r:?}"));
    assert!(versions.contains(&json!("2025-11-25")), "{r:?}");
    assert!(versions.contains(&json!("2026-07-28")), "{r:?}");
    assert!(r.session.is_none(), "a discover opens no session: {r:?}");
}

/// A raw legacy `initialize` (2025-11-25) with a bearer, then `notifications/initialized`: the
/// session id.
async fn initialize<A: App>(t: &TestServer<A>, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "host-quirks", "version": "1"}}});
    let r = send_raw(post(t, &body, &[("authorization", &bearer)])).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["result"]["protocolVersion"], "2025-11-25", "{r:?}");
    let session = r.session.expect("mcp-session-id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = send_raw(post(
        t,
        &initialized,
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    ))
    .await;
    assert_eq!(r.status, 202, "{r:?}");
    session
}

/// A raw `tools/call` on a legacy session.
async fn legacy_call<A: App>(t: &TestServer<A>, session: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let r = send_raw(post(
        t,
        &body,
        &[
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    ))
    .await;
    assert_eq!(r.status, 200, "{tool}: {r:?}");
    tool_result(tool, r)
}

/// A raw sessionless 2026-07-28 `tools/call` with the bearer.
async fn stateless_call<A: App>(t: &TestServer<A>, token: &str, tool: &str, args: Value) -> Value {
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": meta("2026-07-28")}});
    let r = send_raw(post(
        t,
        &body,
        &[
            ("authorization", &bearer),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ],
    ))
    .await;
    assert_eq!(r.status, 200, "{tool}: {r:?}");
    tool_result(tool, r)
}

/// The `structuredContent` of a successful tool result in a raw answer.
fn tool_result(tool: &str, r: RawAnswer) -> Value {
    let result = &r.body["result"];
    assert_ne!(result["isError"], json!(true), "{tool}: {r:?}");
    result["structuredContent"].clone()
}

fn count(answer: &Value) -> i64 {
    answer["state"]["count"]
        .as_i64()
        .unwrap_or_else(|| panic!("no count: {answer}"))
}

#[tokio::test]
async fn a_discover_then_initialize_on_the_same_endpoint_opens_one_working_session() {
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;
    let sessions = t.server.mcp_sessions();
    // Hosts probe with `server/discover` naming either generation, then some of them
    // `initialize` anyway (an SDK that prefers sessions, or one that fell back).
    for version in ["2025-11-25", "2026-07-28"] {
        let live = sessions.live();
        assert_discovered(&discover(&t, version).await);
        assert_eq!(sessions.live(), live, "discover naming {version}");
        let session = initialize(&t, &m.token).await;
        assert_eq!(sessions.live(), live + 1, "after discover naming {version}");
        let before = count(&legacy_call(&t, &session, "get_state", json!({})).await);
        let sent = legacy_call(&t, &session, "do_inc", json!({})).await;
        assert_eq!(sent["status"], "dispatched", "{sent}");
        let after = count(&legacy_call(&t, &session, "get_state", json!({})).await);
        assert_eq!(after, before + 1, "after discover naming {version}");
    }
    // The same with rmcp's client: its list after `initialize` is the sessionless one.
    assert_discovered(&discover(&t, "2026-07-28").await);
    let (session_client, _rx) = legacy(&t, Some(&m.token)).await;
    let sessionless = stateless(&t, Some(&m.token)).await;
    assert_eq!(tools(&session_client).await, tools(&sessionless).await);
}

#[tokio::test]
async fn a_reconnect_that_sends_only_discover_goes_on_where_it_was() {
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;
    let session = initialize(&t, &m.token).await;
    let first = legacy_call(&t, &session, "do_inc", json!({})).await;
    assert_eq!(first["status"], "dispatched", "{first}");

    // The connection drops; the host comes back with only `server/discover` (of either
    // generation) and sends its next call with the session id it had: the session is the
    // same, bound to the same token, its state where it was.
    for version in ["2025-11-25", "2026-07-28"] {
        assert_discovered(&discover(&t, version).await);
        let sent = legacy_call(&t, &session, "do_inc", json!({})).await;
        assert_eq!(sent["status"], "dispatched", "{sent}");
    }
    let state = legacy_call(&t, &session, "get_state", json!({})).await;
    assert_eq!(count(&state), 3, "{state}");

    // Or it goes on sessionless, with the bearer on each request and nothing else sent first.
    let sent = stateless_call(&t, &m.token, "do_inc", json!({})).await;
    assert_eq!(sent["status"], "dispatched", "{sent}");
    let state = stateless_call(&t, &m.token, "get_state", json!({})).await;
    assert_eq!(count(&state), 4, "{state}");

    // rmcp's 2026-07-28 client after a restart of its own: discover only, same tools.
    let before = tools(&stateless(&t, Some(&m.token)).await).await;
    assert_discovered(&discover(&t, "2026-07-28").await);
    let again = stateless(&t, Some(&m.token)).await;
    assert_eq!(tools(&again).await, before);
    assert_eq!(
        t.server.mcp_sessions().live(),
        1,
        "only the one legacy session"
    );
}

#[tokio::test]
async fn a_client_that_caches_the_list_calls_a_tool_the_state_closed_on_both_generations() {
    for generation in ["2025-11-25", "2026-07-28"] {
        let t = server(TodoApp::default()).await;
        let m = t.mint("alice", None).await;
        let client = match generation {
            "2025-11-25" => legacy(&t, Some(&m.token)).await.0,
            _ => {
                let client = stateless(&t, Some(&m.token)).await;
                // rmcp's client caches `tools/list` for its `ttlMs`.
                let first = client.peer().list_tools(None).await.expect("tools/list");
                assert!(
                    first.ttl_ms.is_some_and(|ttl| ttl > 0),
                    "{:?}",
                    first.ttl_ms
                );
                client
            }
        };
        let cached = tools(&client).await;
        assert!(action_names(&cached).contains(&"do_completeAll".to_string()));

        // Every todo done: `completeAll`'s gate closes; the list a client holds is still right.
        ok(&call(client.peer(), "do_completeAll", json!({})).await);
        assert_eq!(tools(&client).await, cached, "{generation}");

        let refused = call(client.peer(), "do_completeAll", json!({})).await;
        assert_eq!(refused.is_error, Some(true), "{generation}");
        let body = refused.structured_content.expect("structuredContent");
        assert_eq!(body["reason"], "unavailable", "{generation}: {body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("every todo is done already"),
            "{generation}: {body}"
        );
        let now = body["availableNow"].as_array().expect("availableNow");
        assert!(
            now.contains(&json!("do_clearCompleted")),
            "{generation}: {body}"
        );
        assert!(
            !now.contains(&json!("do_completeAll")),
            "{generation}: {body}"
        );
        // Nothing was dispatched: every todo stays done.
        let state = read(&client, "agent://state").await;
        assert!(state["state"]["todos"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["done"] == json!(true)));
    }
}

/// A raw legacy request on `session`, answered within 10 s (`send_raw`'s bound).
async fn legacy_request<A: App>(
    t: &TestServer<A>,
    session: &str,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
    let r = send_raw(post(
        t,
        &body,
        &[
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    ))
    .await;
    assert_eq!(r.status, 200, "{method}: {r:?}");
    assert!(r.body.get("error").is_none(), "{method}: {r:?}");
    r.body["result"].clone()
}

#[tokio::test]
async fn a_client_that_never_listens_is_answered_and_reads_changes_by_seq() {
    const COMMITS: u64 = 300;
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;

    // A legacy session that subscribes to the state but never opens its GET stream: every
    // `resources/updated` the server would tell it has nowhere to go. Its calls, on the fast
    // path and through the session's own worker (`observe`, `resources/read`), still answer.
    let session = initialize(&t, &m.token).await;
    legacy_request(
        &t,
        &session,
        "resources/subscribe",
        json!({"uri": "agent://state"}),
    )
    .await;
    let seen = legacy_call(&t, &session, "observe", json!({})).await;
    let since = seen["seq"].as_u64().expect("observe carries seq");
    for _ in 0..COMMITS {
        let sent = legacy_call(&t, &session, "do_inc", json!({})).await;
        assert_eq!(sent["status"], "dispatched", "{sent}");
    }
    let now = legacy_call(&t, &session, "observe", json!({})).await;
    assert_eq!(now["seq"].as_u64(), Some(since + COMMITS), "{now}");
    let since_seq = legacy_call(&t, &session, "get_state", json!({"sinceSeq": since})).await;
    assert_eq!(
        since_seq["seq"].as_u64(),
        Some(since + COMMITS),
        "{since_seq}"
    );
    let resource = legacy_request(
        &t,
        &session,
        "resources/read",
        json!({"uri": "agent://state"}),
    )
    .await;
    let text = resource["contents"][0]["text"].as_str().expect("text");
    let state: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(state["seq"].as_u64(), Some(since + COMMITS), "{state}");

    // A 2026-07-28 client that never opens `subscriptions/listen`: the same.
    let client = stateless(&t, Some(&m.token)).await;
    let seen = ok(&call(client.peer(), "observe", json!({})).await);
    let since = seen["seq"].as_u64().expect("observe carries seq");
    for _ in 0..COMMITS {
        let sent = ok(&call(client.peer(), "do_inc", json!({})).await);
        assert_eq!(sent["status"], "dispatched", "{sent}");
    }
    let since_seq = tokio::time::timeout(
        Duration::from_secs(10),
        call(client.peer(), "get_state", json!({"sinceSeq": since})),
    )
    .await
    .expect("get_state within 10 s");
    let patch = ok(&since_seq);
    assert_eq!(patch["seq"].as_u64(), Some(since + COMMITS), "{patch}");
    let state = read(&client, "agent://state").await;
    assert_eq!(state["seq"].as_u64(), Some(since + COMMITS), "{state}");
}
