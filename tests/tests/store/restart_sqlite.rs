//! Restart survival on SQLite: the counter example runs as its own process on a SQLite file,
//! is killed with SIGKILL, and is started again on the same file.

use agent_tests::browser;
use agent_tests::counter_server;
use agent_tests::process::{self, lap};
use agent_tests::temp::TempDir;
use serde_json::{json, Value};

async fn send(base: &str, token: &str, msg: Value) -> Value {
    let (status, body) = lap(
        base,
        token,
        "/message",
        json!({"msg": msg, "waitFor": "idle"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The owner's view of `session` (`GET /agent/human/sessions/{id}`).
async fn session_detail(human: &reqwest::Client, base: &str, session: &str) -> Value {
    human
        .get(format!("{base}/agent/human/sessions/{session}"))
        .send()
        .await
        .expect("detail")
        .json()
        .await
        .expect("json")
}

async fn count(base: &str, token: &str) -> i64 {
    let (status, body) = lap(base, token, "/state", json!({})).await;
    assert_eq!(status, 200, "{body}");
    body["state"]["count"].as_i64().expect("count")
}

#[tokio::test]
async fn token_state_and_identity_survive_sigkill() {
    let dir = TempDir::new("restart");
    let db = dir.file("counter.db");
    let first = counter_server!().args(["--db", &db]).start();
    let human = browser();
    let minted: Value = human
        .post(format!("{}/agent/mint", first.base))
        .json(&json!({}))
        .send()
        .await
        .expect("mint")
        .json()
        .await
        .expect("mint answer");
    let token = minted["token"].as_str().expect("token").to_owned();
    let session = minted["sessionId"].as_str().expect("session").to_owned();
    for _ in 0..3 {
        send(&first.base, &token, json!({"type": "inc"})).await;
    }
    send(&first.base, &token, json!({"type": "nav", "to": "reports"})).await;
    assert_eq!(count(&first.base, &token).await, 3);
    // The log tail is written shortly after the entries (at most one write per half second).
    let stores = tea_agent_runtime::store::Stores::open(&db)
        .await
        .expect("store");
    let mut stored_log = String::new();
    for _ in 0..100 {
        let record = stores.sessions.load_session(&session).await.expect("load");
        stored_log = record.map(|r| r.log_tail).unwrap_or_default();
        if stored_log.contains("\"nav\"") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(stored_log.contains("\"nav\""), "{stored_log}");
    drop(stores);
    first.kill();

    let second = counter_server!().args(["--db", &db]).start();
    // The same token, the state exactly as committed.
    let (status, body) = lap(&second.base, &token, "/state", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"]["count"], 3, "{body}");
    assert_eq!(body["state"]["view"], "reports", "{body}");
    // And it goes on from there.
    send(&second.base, &token, json!({"type": "inc"})).await;
    assert_eq!(count(&second.base, &token).await, 4);
    // The human's identity cookie still names the owner of the session.
    let resp = human
        .get(format!("{}/agent/human/sessions", second.base))
        .send()
        .await
        .expect("human sessions");
    assert_eq!(resp.status().as_u16(), 200);
    let listed: Value = resp.json().await.expect("json");
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [session.as_str()], "{listed}");
    // The activity log's tail came back with the session.
    let detail = session_detail(&human, &second.base, &session).await;
    let variants: Vec<&str> = detail["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter(|e| e["kind"] == "dispatched")
        .filter_map(|e| e["variant"].as_str())
        .collect();
    assert_eq!(variants, ["inc", "nav", "inc", "inc", "inc"], "{detail}");
    // A new anonymous client is someone else: the session is not theirs.
    let stranger = browser();
    let resp = stranger
        .post(format!("{}/agent/mint", second.base))
        .json(&json!({"session": session}))
        .send()
        .await
        .expect("mint");
    assert_eq!(resp.status().as_u16(), 403);
    second.kill();

    // A third start still finds the newest commit.
    let third = counter_server!().args(["--db", &db]).start();
    assert_eq!(count(&third.base, &token).await, 4);
}

async fn mint(base: &str, human: &reqwest::Client) -> (String, String) {
    let minted = mint_answer(base, human).await;
    (
        minted["token"].as_str().expect("token").to_owned(),
        minted["sessionId"].as_str().expect("session").to_owned(),
    )
}

/// The answer of `POST /agent/mint` for `human`.
async fn mint_answer(base: &str, human: &reqwest::Client) -> Value {
    process::mint(human, base, json!({})).await
}

#[tokio::test]
async fn pending_confirmation_and_idempotency_survive_sigkill() {
    let dir = TempDir::new("restart");
    let db = dir.file("counter.db");
    let first = counter_server!().args(["--db", &db]).start();
    let human = browser();
    let (token, session) = mint(&first.base, &human).await;
    let keyed = json!({"msg": {"type": "inc"}, "idempotencyKey": "k1", "waitFor": "idle"});
    let (status, answered) = lap(&first.base, &token, "/message", keyed.clone()).await;
    assert_eq!(status, 200, "{answered}");
    // A proposal the human has not decided when the agent's wait ends.
    let (status, parked) = lap(
        &first.base,
        &token,
        "/message",
        json!({"msg": {"type": "delete", "id": "7"}, "timeoutMs": 100, "reason": "cleanup"}),
    )
    .await;
    assert_eq!(status, 200, "{parked}");
    assert_eq!(parked["status"], "pending-confirmation", "{parked}");
    let confirm_id = parked["confirmId"].as_str().expect("confirmId").to_owned();
    first.kill();

    let second = counter_server!().args(["--db", &db]).start();
    // The retried message gets the first answer and is not applied again.
    let resp = reqwest::Client::new()
        .post(format!("{}/agent/lap/v1/message", second.base))
        .bearer_auth(&token)
        .json(&keyed)
        .send()
        .await
        .expect("retry");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let replayed: Value = resp.json().await.expect("json");
    assert_eq!(replayed, answered);
    assert_eq!(count(&second.base, &token).await, 1);
    let other = json!({"msg": {"type": "dec"}, "idempotencyKey": "k1", "waitFor": "idle"});
    let (status, conflict) = lap(&second.base, &token, "/message", other).await;
    assert_eq!(status, 409, "{conflict}");

    // The owner still sees the proposal and approves it on the new process.
    let detail = session_detail(&human, &second.base, &session).await;
    let pending: Vec<&str> = detail["pending"]
        .as_array()
        .expect("pending")
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(pending, [confirm_id.as_str()], "{detail}");
    let resp = human
        .post(format!(
            "{}/agent/human/sessions/{session}/confirms/{confirm_id}",
            second.base
        ))
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .expect("approve");
    assert_eq!(resp.status().as_u16(), 200);
    // The parked agent's confirm-result reports it.
    let (status, result) = lap(
        &second.base,
        &token,
        "/confirm-result",
        json!({"confirmId": confirm_id, "timeoutMs": 5000}),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["status"], "confirmed", "{result}");
    assert_eq!(result["stateAfter"]["lastDelete"], "7", "{result}");
}

/// A raw MCP POST (JSON-RPC `body`) with the bearer and, when given, the session id.
async fn mcp_post(
    base: &str,
    token: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/agent/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    req.send().await.expect("MCP POST")
}

#[tokio::test]
async fn an_mcp_client_goes_on_after_sigkill_and_a_deleted_id_stays_dead() {
    use agent_tests::mcp::{call, ok};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt as _;

    let dir = TempDir::new("restart");
    let db = dir.file("counter.db");
    let first = counter_server!().args(["--db", &db]).start();
    let human = browser();
    let (token, _) = mint(&first.base, &human).await;

    // rmcp's client with the bearer on every request; re-initializing after a 404 is off,
    // so a lost session would fail the calls below.
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", first.base))
            .auth_header(token.clone());
    config.reinit_on_expired_session = false;
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize");
    let sent = ok(&call(
        client.peer(),
        "send_message",
        json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
    )
    .await);
    assert_eq!(sent["status"], "dispatched", "{sent}");

    // A second MCP session, ended with DELETE before the restart.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = mcp_post(&first.base, &token, None, init).await;
    assert_eq!(resp.status().as_u16(), 200);
    let deleted_id = resp.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let resp = reqwest::Client::new()
        .delete(format!("{}/agent/mcp", first.base))
        .bearer_auth(&token)
        .header("mcp-session-id", &deleted_id)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(resp.status().as_u16(), 200);
    let second = first.restart();
    let sent = ok(&call(
        client.peer(),
        "send_message",
        json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
    )
    .await);
    assert_eq!(sent["status"], "dispatched", "{sent}");
    let state = ok(&call(client.peer(), "get_state", json!({})).await);
    assert_eq!(state["state"]["count"], 2, "{state}");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let resp = mcp_post(&second.base, &token, Some(&deleted_id), list.clone()).await;
    assert_eq!(resp.status().as_u16(), 404, "a DELETEd id stays dead");
    // An id that was never issued is not found either, bearer or not.
    let resp = mcp_post(&second.base, &token, Some("never-issued"), list).await;
    assert_eq!(resp.status().as_u16(), 404);
    let _ = client.cancel().await;
}

/// An rmcp client on `<base>/agent/mcp` that initialized without a bearer and bound `token`
/// with `connect_session`; re-initializing after a 404 is off, so a lost session fails.
async fn connect_session_client(
    base: &str,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use agent_tests::mcp::{call, ok};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt as _;

    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/agent/mcp"));
    config.reinit_on_expired_session = false;
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize");
    let connected = ok(&call(client.peer(), "connect_session", json!({ "token": token })).await);
    assert_eq!(connected["status"], "connected", "{connected}");
    client
}

#[tokio::test]
async fn a_connect_session_binding_survives_sigkill_and_a_revoked_one_does_not() {
    use agent_tests::mcp::{call, ok};
    use rmcp::model::CallToolRequestParams;

    let dir = TempDir::new("restart");
    let db = dir.file("counter.db");
    let first = counter_server!().args(["--db", &db]).start();
    let human = browser();
    let (token, _) = mint(&first.base, &human).await;
    let minted = mint_answer(&first.base, &human).await;
    let doomed_token = minted["token"].as_str().expect("token").to_owned();
    let doomed_tid = minted["tid"].as_str().expect("tid").to_owned();
    let kept = connect_session_client(&first.base, &token).await;
    let doomed = connect_session_client(&first.base, &doomed_token).await;
    let inc = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
    let sent = ok(&call(kept.peer(), "send_message", inc.clone()).await);
    assert_eq!(sent["status"], "dispatched", "{sent}");
    let sent = ok(&call(doomed.peer(), "send_message", inc.clone()).await);
    assert_eq!(sent["status"], "dispatched", "{sent}");
    // The owner revokes the second token before the crash.
    let resp = human
        .post(format!("{}/agent/revoke", first.base))
        .json(&json!({ "tid": doomed_tid }))
        .send()
        .await
        .expect("revoke");
    assert_eq!(resp.status().as_u16(), 200);
    let second = first.restart();
    // No bearer on any request: the session id and the stored binding (by tid) suffice.
    let sent = ok(&call(kept.peer(), "send_message", inc).await);
    assert_eq!(sent["status"], "dispatched", "{sent}");
    let state = ok(&call(kept.peer(), "get_state", json!({})).await);
    assert_eq!(state["state"]["count"], 2, "{state}");
    // The revoked token's MCP session is not rebuilt: 404, which the client reports.
    let refused = doomed
        .peer()
        .call_tool(CallToolRequestParams::new("get_state").with_arguments(Default::default()))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let _ = kept.cancel().await;
    let _ = doomed.cancel().await;
    drop(second);
}

/// The first numbered event of the human's event stream (`id`, `event`, `data`), opened with
/// `Last-Event-ID: last` when given.
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
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
            .await
            .expect("an event within 5 s")
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
            if let Some(id) = id {
                return (id, event, data);
            }
        }
    }
}

#[tokio::test]
async fn the_console_event_stream_resumes_after_sigkill() {
    let dir = TempDir::new("restart");
    let db = dir.file("counter.db");
    let first = counter_server!().args(["--db", &db]).start();
    let human = browser();
    let (token, session) = mint(&first.base, &human).await;
    for _ in 0..3 {
        send(&first.base, &token, json!({"type": "inc"})).await;
    }
    let (seen, event, data) = first_event(&human, &first.base, &session, None).await;
    assert_eq!(
        (event.as_str(), &data["state"]["count"]),
        ("state", &json!(3))
    );
    first.kill();

    let second = counter_server!().args(["--db", &db]).start();
    // The new process has events of its own before the console reconnects.
    for _ in 0..5 {
        send(&second.base, &token, json!({"type": "inc"})).await;
    }
    // Reconnecting with the last id it saw: a snapshot of the current state, numbered
    // after every id of the process before.
    let (id, event, data) = first_event(&human, &second.base, &session, Some(seen)).await;
    assert_eq!(event, "state");
    assert_eq!(data["snapshot"], true, "{data}");
    assert_eq!(data["state"]["count"], 8, "{data}");
    assert!(
        id > seen,
        "event ids go on after a restart ({id} after {seen})"
    );
}
