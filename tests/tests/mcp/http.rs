//! `/agent/mcp` with rmcp's own client over Streamable HTTP (`docs/lap.md` §7): the 19 tools and
//! their schemas, the unbound texts, `connect_session`, forwarded tools through the LAP gate,
//! the confirmation flow with a human approval, long polls, narration and disconnect.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::{call, confirmation_flows, err, ok, wait_for_change_flow};
use agent_tests::TestServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, ServiceExt as _};
use serde_json::{json, Value};

const NOT_CONNECTED: &str = "Not connected — ask the user to copy the token from the app connect panel and call connect_session with it.";

type Client = RunningService<RoleClient, ()>;

async fn server() -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .start()
        .await
}

/// An rmcp client on `/agent/mcp`, optionally sending a bearer on every request.
async fn client(t: &TestServer<Counter>, bearer: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", t.base));
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.expect("initialize")
}

async fn try_call(
    peer: &Peer<RoleClient>,
    name: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let name = name.to_string();
    peer.call_tool(CallToolRequestParams::new(name).with_arguments(args))
        .await
}

fn schema(tool: &Tool) -> Value {
    Value::Object((*tool.input_schema).clone())
}

/// `(name, properties with their JSON types, required)` of a tool in `docs/lap.md` §7.1.
type ExpectedTool = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    Vec<&'static str>,
);

/// The 19 tools of `docs/lap.md` §7.1.
fn expected_tools() -> Vec<ExpectedTool> {
    vec![
        ("connect_session", vec![("token", "string")], vec!["token"]),
        ("observe", vec![], vec![]),
        ("describe_app", vec![], vec![]),
        (
            "get_state",
            vec![("path", "string"), ("sinceSeq", "integer")],
            vec![],
        ),
        (
            "query_state",
            // Beyond the reference: a page of the value (`docs/mcp.md` §Answers within a budget).
            vec![
                ("path", "string"),
                ("offset", "integer"),
                ("limit", "integer"),
            ],
            vec!["path"],
        ),
        (
            "describe_recent_actions",
            vec![("n", "integer"), ("kind", "string")],
            vec![],
        ),
        ("would_dispatch", vec![("msg", "object")], vec!["msg"]),
        ("list_actions", vec![], vec![]),
        (
            "send_message",
            vec![
                ("msg", "object"),
                ("reason", "string"),
                ("waitFor", "string"),
                ("drainQuietMs", "number"),
                ("timeoutMs", "number"),
                ("includeState", "boolean"),
                // Beyond the reference: the MCP tool carries the LAP key too (issue 10).
                ("idempotencyKey", "string"),
            ],
            vec!["msg"],
        ),
        (
            "get_confirm_result",
            vec![("confirmId", "string"), ("timeoutMs", "number")],
            vec!["confirmId"],
        ),
        (
            "wait_for_change",
            vec![
                ("path", "string"),
                ("sinceSeq", "integer"),
                ("timeoutMs", "number"),
                ("progress", "boolean"),
            ],
            vec![],
        ),
        (
            "narrate",
            vec![("text", "string"), ("intent", "string")],
            vec!["text"],
        ),
        (
            "query_dom",
            vec![("name", "string"), ("multiple", "boolean")],
            vec!["name"],
        ),
        ("describe_visible_content", vec![], vec![]),
        ("describe_context", vec![], vec![]),
        ("list_pending", vec![], vec![]),
        (
            "withdraw_proposal",
            vec![("confirmId", "string")],
            vec!["confirmId"],
        ),
        (
            "cancel_work",
            vec![
                ("seq", "integer"),
                ("idempotencyKey", "string"),
                ("work", "integer"),
                ("all", "boolean"),
                ("reason", "string"),
            ],
            vec![],
        ),
        ("disconnect_session", vec![], vec![]),
    ]
}

#[tokio::test]
async fn initialize_and_the_nineteen_tools() {
    let t = server().await;
    let c = client(&t, None).await;
    let info = c.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("agent")
    );
    assert_eq!(
        info.server_info.as_ref().map(|i| i.version.as_str()),
        Some("1")
    );
    assert!(info.capabilities.tools.is_some());
    assert_eq!(t.server.mcp_sessions().live(), 1);

    let tools = c.list_all_tools().await.expect("tools/list");
    let expected = expected_tools();
    assert_eq!(tools.len(), 19);
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = expected.iter().map(|e| e.0).collect();
    want.sort_unstable();
    assert_eq!(names, want);
    for (name, props, required) in expected {
        let tool = tools.iter().find(|t| t.name == name).expect("declared");
        let s = schema(tool);
        assert_eq!(s["type"], "object", "{name}");
        assert!(s.get("additionalProperties").is_none(), "{name}");
        assert!(
            tool.output_schema.is_none(),
            "{name} declares an outputSchema"
        );
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 40),
            "{name} needs a description"
        );
        let declared = s["properties"].as_object().expect("properties");
        assert_eq!(declared.len(), props.len(), "{name}: {s}");
        for (prop, ty) in props {
            assert_eq!(declared[prop]["type"], ty, "{name}.{prop}");
        }
        let got_required: Vec<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(got_required, required, "{name}");
    }
    let send = tools.iter().find(|t| t.name == "send_message").unwrap();
    assert_eq!(
        schema(send)["properties"]["waitFor"]["enum"],
        json!(["drained", "idle", "none"])
    );
    assert_eq!(
        schema(send)["properties"]["msg"]["required"],
        json!(["type"])
    );
    let recent = tools
        .iter()
        .find(|t| t.name == "describe_recent_actions")
        .unwrap();
    assert_eq!(schema(recent)["properties"]["n"]["minimum"], 1);
    // The observe + send_message fast path is spelled out for the model.
    let observe = tools.iter().find(|t| t.name == "observe").unwrap();
    assert!(observe
        .description
        .as_deref()
        .unwrap()
        .contains("send_message"));

    c.cancel().await.expect("close");
}

#[tokio::test]
async fn unbound_calls_and_bad_tokens_fail_with_the_spec_text() {
    let t = server().await;
    let c = client(&t, None).await;
    for (tool, args) in [
        ("observe", json!({})),
        ("get_state", json!({"path": "/count"})),
        ("send_message", json!({"msg": {"type": "inc"}})),
        ("narrate", json!({"text": "hello"})),
    ] {
        assert_eq!(err(&call(&c, tool, args).await), NOT_CONNECTED, "{tool}");
    }
    // Invalid arguments are refused before any LAP request.
    for (tool, args) in [
        ("send_message", json!({})),
        (
            "send_message",
            json!({"msg": {"type": "inc"}, "waitFor": "bogus"}),
        ),
        ("connect_session", json!({"token": 5})),
    ] {
        match try_call(&c, tool, args.clone()).await {
            Ok(r) => assert_eq!(r.is_error, Some(true), "{tool} {args}"),
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS)
            }
            Err(e) => panic!("{tool}: unexpected {e}"),
        }
    }
    assert_eq!(
        err(&call(&c, "connect_session", json!({"token": "agt_nope"})).await),
        "Token is invalid or expired. Ask the user to copy a fresh token from the app."
    );
    let m = t.mint("alice", None).await;
    let revoke = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(revoke.status, 200);
    assert_eq!(
        err(&call(&c, "connect_session", json!({"token": m.token})).await),
        "Auth failed: revoked"
    );
    // Still not connected.
    assert_eq!(err(&call(&c, "observe", json!({})).await), NOT_CONNECTED);
    assert!(!t
        .server
        .mcp_sessions()
        .is_authenticated(&session_id(&t).await));
    c.cancel().await.expect("close");
}

/// The id of the only live MCP session.
async fn session_id(t: &TestServer<Counter>) -> String {
    let ids = t.server.mcp_sessions().live_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

#[tokio::test]
async fn connect_observe_act_confirm_wait_narrate_disconnect() {
    let t = server().await;
    let m = t.mint("alice", None).await;
    let c = client(&t, None).await;

    // connect_session binds the session and answers the connect flow.
    let connected = ok(&call(&c, "connect_session", json!({"token": m.token})).await);
    assert_eq!(connected["status"], "connected");
    assert_eq!(connected["appName"], "counter");
    assert_eq!(connected["appVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        connected["state"],
        json!({"count":0,"lastDelete":null,"view":"home"})
    );
    assert!(connected["actions"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    assert_eq!(connected["description"]["name"], "counter");
    assert!(connected.get("context").is_some());
    let id = session_id(&t).await;
    assert!(t.server.mcp_sessions().is_authenticated(&id));

    // observe: the same hash as at connect → no schema-change note.
    let observed = ok(&call(&c, "observe", json!({})).await);
    assert_eq!(observed["state"]["count"], 0);
    assert_eq!(
        observed["description"]["schemaHash"],
        connected["description"]["schemaHash"]
    );
    assert!(observed.get("schemaChanged").is_none());
    assert!(observed.get("schemaChangedNote").is_none());
    // observe's description is lean; describe_app still has the annotations (it is not served
    // from the lean description observe and connect saw).
    assert!(observed["description"].get("annotations").is_none());
    assert!(connected["description"].get("annotations").is_none());
    let described = ok(&call(&c, "describe_app", json!({})).await);
    assert_eq!(described["name"], "counter");
    assert_eq!(
        described["annotations"]["inc"]["intent"],
        "increment the counter"
    );
    assert_eq!(
        described["schemaHash"],
        observed["description"]["schemaHash"]
    );
    assert!(described["docs"]["purpose"]
        .as_str()
        .is_some_and(|p| !p.is_empty()));

    // send_message inc → dispatched, and the state changed (the token's record is active).
    let sent = ok(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(sent["status"], "dispatched");
    let state = ok(&call(&c, "get_state", json!({"path": "/count"})).await);
    assert_eq!(state, json!({"state": 1, "seq": 1}));
    let lap = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(lap.body["state"]["count"], 1);
    // Unknown top-level keys are dropped; msg keeps all its keys.
    let sent = ok(&call(
        &c,
        "send_message",
        json!({"msg": {"type": "setCount", "value": 5}, "idempotencyKey": "k", "bogus": 1}),
    )
    .await);
    assert_eq!(sent["status"], "dispatched");
    let q = ok(&call(&c, "query_state", json!({"path": "/count"})).await);
    assert_eq!(q, json!({"found": true, "value": 5}));

    // @humanOnly → a rejection, which is an answer, not an error.
    let rejected = call(&c, "send_message", json!({"msg": {"type": "signOut"}})).await;
    let rejected = ok(&rejected);
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["reason"], "human-only");

    // @requiresConfirm: approved while the call waits, then parked and polled.
    confirmation_flows(c.peer(), &t, "alice", &m).await;
    // A rejection by the human → rejected / user-cancelled.
    let parked = ok(&call(
        &c,
        "send_message",
        json!({"msg": {"type": "delete", "id": "7"}, "timeoutMs": 50}),
    )
    .await);
    let confirm_id = parked["confirmId"].as_str().expect("confirmId").to_string();
    assert_eq!(
        t.decide("alice", &m, &confirm_id, json!({"decision": "reject"}))
            .await
            .0,
        200
    );
    let result = ok(&call(&c, "get_confirm_result", json!({"confirmId": confirm_id})).await);
    assert_eq!(
        result,
        json!({"status": "rejected", "reason": "user-cancelled"})
    );
    // A LAP 400 becomes a tool error with the spec's text.
    assert_eq!(
        err(&call(&c, "get_confirm_result", json!({"confirmId": "nope"})).await),
        "get_confirm_result (/confirm-result) failed: status=400 code=invalid — unknown confirmId: nope"
    );

    // wait_for_change: nothing → timeout; a human dispatch meanwhile → changed.
    let changed = wait_for_change_flow(
        c.peer(),
        &t,
        "alice",
        &m,
        json!({"path": "/count", "timeoutMs": 5000}),
    )
    .await;
    assert_eq!(changed["stateAfter"]["count"], 6);

    // narrate → an entry in the log.
    let narrated = ok(&call(
        &c,
        "narrate",
        json!({"text": "Cleaning up", "intent": "Tidy"}),
    )
    .await);
    assert_eq!(narrated, json!({"ok": true}));
    let recent = ok(&call(
        &c,
        "describe_recent_actions",
        json!({"n": 1, "kind": "narrate"}),
    )
    .await);
    assert_eq!(recent["entries"][0]["intent"], "Tidy");
    // The read surfaces answer too.
    let dom = ok(&call(&c, "query_dom", json!({"name": "inc"})).await);
    assert_eq!(dom["elements"][0]["text"], "+");
    let visible = ok(&call(&c, "describe_visible_content", json!({})).await);
    assert!(visible["outline"].is_array());
    assert!(ok(&call(&c, "describe_context", json!({})).await)
        .get("context")
        .is_some());
    let actions = ok(&call(&c, "list_actions", json!({})).await);
    assert!(actions["actions"].as_array().is_some_and(|a| !a.is_empty()));
    let predicted = ok(&call(&c, "would_dispatch", json!({"msg": {"type": "reset"}})).await);
    assert!(predicted.get("stateDiff").is_some());

    // disconnect_session drops the binding; the session stays.
    let done = ok(&call(&c, "disconnect_session", json!({})).await);
    assert_eq!(done, json!({"status": "disconnected"}));
    assert_eq!(err(&call(&c, "observe", json!({})).await), NOT_CONNECTED);
    assert!(t.server.mcp_sessions().bound_token(&id).is_none());
    assert_eq!(t.server.mcp_sessions().live(), 1);

    // Ending the client deletes the session (DELETE → 200, then the id is gone).
    c.cancel().await.expect("close");
    for _ in 0..100 {
        if t.server.mcp_sessions().live() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(t.server.mcp_sessions().live(), 0);
}

#[tokio::test]
async fn a_bearer_at_initialize_binds_and_a_revoke_fails_forwarded_calls() {
    let t = server().await;
    let m = t.mint("alice", None).await;
    let c = client(&t, Some(&m.token)).await;
    let id = session_id(&t).await;
    assert!(t.server.mcp_sessions().is_authenticated(&id));
    // Tools work without connect_session.
    let observed = ok(&call(&c, "observe", json!({})).await);
    assert_eq!(observed["description"]["name"], "counter");
    let sent = ok(&call(&c, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(sent["status"], "dispatched");

    let revoke = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(revoke.status, 200);
    // The revoke ended the MCP session the token authenticated (its slot is free): the next
    // request of this client finds no session.
    let after = c
        .call_tool(CallToolRequestParams::new("get_state".to_owned()))
        .await;
    assert!(after.is_err(), "{after:?}");
    assert!(!t.server.mcp_sessions().is_authenticated(&id));
    let _ = c.cancel().await;
}
