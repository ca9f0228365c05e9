//! The built `agent-bridge` binary as a child process, driven by rmcp's own client over stdio
//! (`docs/lap.md` §8, §11.6): the 19 tools, the `connect` prompt, the unbound text, and
//! `connect_session {url, token}` against a counter LAP server on a loopback port (observe,
//! send_message with a human-only rejection and a human-approved confirmation, wait_for_change,
//! narrate, disconnect), plus the schema-change note against a minimal LAP server of our own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agent_examples::counter::Counter;
use agent_tests::mcp::{call, confirmation_flows, err, ok, wait_for_change_flow};
use agent_tests::TestServer;
use axum::routing::post;
use axum::{Json, Router};
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt as _;
use serde_json::{json, Map, Value};

const NOT_CONNECTED: &str = "Not connected — ask the user for the app's LAP URL and an agent token, then call connect_session with both (or use the connect prompt).";

type Client = RunningService<RoleClient, ()>;

/// Starts `agent-bridge` and initializes an MCP client session with it over its stdio.
async fn bridge() -> Client {
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-bridge"));
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn agent-bridge");
    ().serve(transport).await.expect("initialize")
}

/// Starts `agent-bridge` with `args` and `env` (and none of the caller's `AGENT_*` variables).
async fn bridge_with(args: &[&str], env: &[(&str, &str)]) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-bridge"));
    command
        .args(args)
        .env_remove("AGENT_LAP_URL")
        .env_remove("AGENT_TOKEN")
        .env_remove("AGENT_TOKEN_FILE");
    for (k, v) in env {
        command.env(k, v);
    }
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn agent-bridge");
    ().serve(transport).await.expect("initialize")
}

async fn lap_server() -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .start()
        .await
}

fn lap_url(t: &TestServer<Counter>) -> String {
    format!("{}/agent/lap/v1", t.base)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn tools_prompt_and_unbound_calls() {
    let c = bridge().await;
    let info = c.peer_info().expect("server info");
    let server = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(server.name, "agent-bridge");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.prompts.is_some());

    let tools = c.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 19);
    let connect = tools
        .iter()
        .find(|t| t.name == "connect_session")
        .expect("connect_session");
    let schema = Value::Object((*connect.input_schema).clone());
    assert_eq!(schema["required"], json!(["url", "token"]));
    assert_eq!(schema["properties"]["url"]["type"], "string");
    assert_eq!(schema["properties"]["token"]["type"], "string");
    for name in [
        "observe",
        "describe_app",
        "get_state",
        "query_state",
        "describe_recent_actions",
        "would_dispatch",
        "list_actions",
        "send_message",
        "get_confirm_result",
        "wait_for_change",
        "narrate",
        "query_dom",
        "describe_visible_content",
        "describe_context",
        "disconnect_session",
    ] {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        assert!(tool.output_schema.is_none(), "{name}");
    }

    let prompts = c.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "connect");
    let args = prompts[0].arguments.as_ref().expect("arguments");
    let names: Vec<(&str, Option<bool>)> =
        args.iter().map(|a| (a.name.as_str(), a.required)).collect();
    assert_eq!(names, vec![("url", Some(true)), ("token", Some(true))]);
    let prompt = c
        .get_prompt(
            GetPromptRequestParams::new("connect").with_arguments(object(json!({
                "url": "http://127.0.0.1:8787/agent/lap/v1", "token": "agt_abc"
            }))),
        )
        .await
        .expect("prompts/get");
    assert_eq!(prompt.messages.len(), 1);
    let message = serde_json::to_value(&prompt.messages[0]).expect("serializes");
    assert_eq!(message["role"], "user");
    assert_eq!(
        message["content"]["text"],
        "Connect to the app: call the connect_session tool with url \"http://127.0.0.1:8787/agent/lap/v1\" and token \"agt_abc\". Then call observe to read the state and actions, use send_message to act, and use narrate to tell the user what you are doing during multi-step work."
    );

    assert_eq!(err(&call(&c, "observe", json!({})).await), NOT_CONNECTED);
    assert_eq!(
        err(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await),
        NOT_CONNECTED
    );
    // Invalid arguments are refused before any request.
    for (tool, args) in [
        (
            "send_message",
            json!({"msg": {"type": "inc"}, "waitFor": "bogus"}),
        ),
        ("send_message", json!({})),
        ("connect_session", json!({"url": 5, "token": "agt_x"})),
    ] {
        let r = c
            .call_tool(CallToolRequestParams::new(tool).with_arguments(object(args.clone())))
            .await;
        assert!(
            r.is_err() || r.as_ref().is_ok_and(|r| r.is_error == Some(true)),
            "{tool} {args} was accepted"
        );
    }
    // Nothing listens on port 9: the connect flow fails with status 0, code network.
    let failed = err(&call(
        &c,
        "connect_session",
        json!({"url": "http://127.0.0.1:9/agent/lap/v1", "token": "agt_x"}),
    )
    .await);
    assert!(
        failed.starts_with("connect_session failed: observe failed: status=0 code=network — "),
        "{failed}"
    );
    assert_eq!(err(&call(&c, "observe", json!({})).await), NOT_CONNECTED);
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn connect_and_drive_the_counter_through_the_bridge() {
    let t = lap_server().await;
    let m = t.mint("alice", None).await;
    let c = bridge().await;
    let url = lap_url(&t);

    // A bad token: the connect flow's observe fails, and nothing stays bound.
    assert_eq!(
        err(&call(
            &c,
            "connect_session",
            json!({"url": url, "token": "agt_nope"})
        )
        .await),
        "connect_session failed: observe failed: status=401 code=auth-failed"
    );
    assert_eq!(err(&call(&c, "observe", json!({})).await), NOT_CONNECTED);

    // A trailing slash on the URL is joined once.
    let connected = ok(&call(
        &c,
        "connect_session",
        json!({"url": format!("{url}/"), "token": m.token}),
    )
    .await);
    assert_eq!(connected["status"], "connected");
    assert_eq!(connected["appName"], "counter");
    assert_eq!(connected["state"]["count"], 0);
    assert!(connected["actions"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));

    let observed = ok(&call(&c, "observe", json!({})).await);
    assert_eq!(observed["description"]["name"], "counter");
    assert!(observed.get("schemaChanged").is_none());
    let described = ok(&call(&c, "describe_app", json!({})).await);
    assert_eq!(described["name"], "counter");

    let sent = ok(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(sent["status"], "dispatched");
    assert_eq!(
        t.lap(&m.token, "/state", &json!({})).await.body["state"]["count"],
        1
    );
    let rejected = ok(&call(&c, "send_message", json!({"msg": {"type": "signOut"}})).await);
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["reason"], "human-only");

    // @requiresConfirm: approved while the call waits, then parked and polled.
    confirmation_flows(c.peer(), &t, "alice", &m).await;

    // wait_for_change: nothing → timeout; a human dispatch meanwhile → changed.
    let changed = wait_for_change_flow(c.peer(), &t, "alice", &m, json!({"timeoutMs": 5000})).await;
    assert_eq!(changed["stateAfter"]["count"], 2);

    let narrated = ok(&call(&c, "narrate", json!({"text": "Tidying up"})).await);
    assert_eq!(narrated, json!({"ok": true}));
    let recent = ok(&call(
        &c,
        "describe_recent_actions",
        json!({"n": 1, "kind": "narrate"}),
    )
    .await);
    assert_eq!(recent["entries"][0]["intent"], "Agent narrated");
    // A LAP 400 is a tool error with the spec's text.
    assert_eq!(
        err(&call(&c, "wait_for_change", json!({"path": "count"})).await),
        "wait_for_change (/wait) failed: status=400 code=invalid — path must be empty or start with '/'"
    );

    let done = ok(&call(&c, "disconnect_session", json!({})).await);
    assert_eq!(done, json!({"status": "disconnected"}));
    assert_eq!(err(&call(&c, "observe", json!({})).await), NOT_CONNECTED);

    // Reconnect, then a revoke over HTTP fails the next forwarded call.
    ok(&call(&c, "connect_session", json!({"url": url, "token": m.token})).await);
    let revoke = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(revoke.status, 200);
    assert_eq!(
        err(&call(&c, "get_state", json!({})).await),
        "get_state (/state) failed: status=403 code=revoked"
    );
    c.cancel().await.expect("close");
}

/// A minimal LAP server of our own whose schema hash changes after the first `observe`, and
/// whose `/message` never answers.
async fn fake_lap_server() -> (String, Arc<AtomicUsize>) {
    let observes = Arc::new(AtomicUsize::new(0));
    let describes = Arc::new(AtomicUsize::new(0));
    let counted = describes.clone();
    let app = Router::new()
        .route(
            "/lap/describe",
            post(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async {
                    Json(json!({"name": "other", "version": "9", "annotations": {"inc": {}}, "schemaHash": "bbbb"}))
                }
            }),
        )
        .route(
            "/lap/observe",
            post(move || {
                let n = observes.fetch_add(1, Ordering::SeqCst);
                async move {
                    let hash = if n == 0 { "aaaa" } else { "bbbb" };
                    Json(json!({
                        "state": {"n": n},
                        "actions": [],
                        "description": {"name": "other", "version": "9", "schemaHash": hash},
                        "context": null
                    }))
                }
            }),
        )
        .route(
            "/lap/message",
            post(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Json(json!({"status": "dispatched"}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/lap"), describes)
}

#[tokio::test]
async fn a_changed_schema_hash_adds_the_note() {
    let (url, describes) = fake_lap_server().await;
    let c = bridge().await;
    let connected = ok(&call(&c, "connect_session", json!({"url": url, "token": "agt_t"})).await);
    assert_eq!(connected["appName"], "other");
    assert_eq!(connected["appVersion"], "9");
    let observed = ok(&call(&c, "observe", json!({})).await);
    assert_eq!(observed["schemaChanged"], true);
    assert_eq!(
        observed["schemaChangedNote"],
        "App schema changed (was aaaa, now bbbb). Descriptions, actions and examples read before this are stale; use the ones in this result."
    );
    // The cache now holds the new hash: the next observe has no note.
    let again = ok(&call(&c, "observe", json!({})).await);
    assert!(again.get("schemaChanged").is_none());
    // observe's description may be lean (no annotations), so describe_app asks once, then
    // answers from the cache while the hash stays the same.
    for _ in 0..2 {
        let described = ok(&call(&c, "describe_app", json!({})).await);
        assert_eq!(described["schemaHash"], "bbbb");
        assert_eq!(described["annotations"], json!({"inc": {}}));
    }
    assert_eq!(describes.load(Ordering::SeqCst), 1);
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn a_hanging_message_fails_after_its_budget() {
    let (url, _) = fake_lap_server().await;
    let c = bridge().await;
    ok(&call(&c, "connect_session", json!({"url": url, "token": "agt_t"})).await);
    let started = std::time::Instant::now();
    let failed = err(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(
        failed,
        "send_message (/message) failed: status=0 code=network — request to /message timed out after 7000ms"
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(7000));
    c.cancel().await.expect("close");
}

/// Started with `--url`/`--token`, or with `AGENT_LAP_URL`/`AGENT_TOKEN`, the bridge is bound
/// from the start (no token in the conversation) and `connect_session` still rebinds it.
#[tokio::test]
async fn a_preconfigured_bridge_starts_bound_and_rebinds() {
    let t = lap_server().await;
    let alice = t.mint("alice", None).await;
    let bob = t.mint("bob", None).await;
    let url = lap_url(&t);

    let c = bridge_with(&["--url", &url, "--token", &alice.token], &[]).await;
    let instructions = c
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default();
    assert!(instructions.contains("already connected"), "{instructions}");
    let sent = ok(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(sent["status"], "dispatched");
    let alice_state = t.lap(&alice.token, "/state", &json!({})).await;
    assert_eq!(alice_state.body["state"]["count"], 1);
    // connect_session rebinds to bob's session.
    let connected = ok(&call(
        &c,
        "connect_session",
        json!({"url": url, "token": bob.token}),
    )
    .await);
    assert_eq!(connected["status"], "connected");
    ok(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    ok(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(
        t.lap(&bob.token, "/state", &json!({})).await.body["state"]["count"],
        2
    );
    assert_eq!(
        t.lap(&alice.token, "/state", &json!({})).await.body["state"]["count"],
        1
    );
    c.cancel().await.expect("close");

    // The same from the environment.
    let c = bridge_with(
        &[],
        &[
            ("AGENT_LAP_URL", url.as_str()),
            ("AGENT_TOKEN", bob.token.as_str()),
        ],
    )
    .await;
    let observed = ok(&call(&c, "observe", json!({})).await);
    assert_eq!(observed["state"]["count"], 2);
    c.cancel().await.expect("close");

    // The token from a file (`AGENT_TOKEN_FILE`), so it is neither in argv nor in the
    // environment of the MCP client's configuration.
    let dir = std::env::temp_dir().join(format!("agent-bridge-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("token");
    std::fs::write(&file, format!("{}\n", bob.token)).expect("write");
    let c = bridge_with(
        &[],
        &[
            ("AGENT_LAP_URL", url.as_str()),
            ("AGENT_TOKEN_FILE", &file.display().to_string()),
        ],
    )
    .await;
    let observed = ok(&call(&c, "observe", json!({})).await);
    assert_eq!(observed["state"]["count"], 2);
    c.cancel().await.expect("close");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

/// `--help` and `--version` print and exit 0.
#[tokio::test]
async fn help_and_version_exit_zero() {
    for (flag, expected) in [
        ("--help", "AGENT_TOKEN_FILE"),
        ("--version", env!("CARGO_PKG_VERSION")),
    ] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-bridge"))
            .arg(flag)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("run agent-bridge");
        assert_eq!(output.status.code(), Some(0), "{flag}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(expected), "{flag}: {stdout}");
    }
}

/// A URL without a token, or a bad flag, is refused at start with the usage (exit 2).
#[tokio::test]
async fn a_half_configured_bridge_refuses_to_start() {
    for (args, env, expected) in [
        (
            vec!["--url", "http://127.0.0.1:9/agent/lap/v1"],
            vec![],
            "a LAP URL needs a token",
        ),
        (
            vec![],
            vec![("AGENT_TOKEN", "agt_x")],
            "a token needs a LAP URL",
        ),
        (vec!["--bogus"], vec![], "unexpected argument '--bogus'"),
    ] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-bridge"))
            .args(&args)
            .env_remove("AGENT_LAP_URL")
            .env_remove("AGENT_TOKEN")
            .env_remove("AGENT_TOKEN_FILE")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("run agent-bridge");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(stderr.lines().count() <= 5, "short: {stderr}");
    }
}
