//! `/agent/mcp` on both protocol generations with rmcp's own client (`docs/mcp.md`): the
//! sessionless 2026-07-28 revision with the bearer on every request, the app's actions as
//! `do_<name>` tools (schemas, annotations, dispatch through the same gate as `send_message`,
//! confirmation, `@validates`, a stable list whatever the route gates, paired apps), `agent://state` and `agent://describe`
//! as resources, and the list-changed and resource-updated notifications of both generations.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_examples::todo::TodoApp;
use agent_tests::mcp::{call, err, ok, text};
use agent_tests::paired::AppProcess;
use agent_tests::{ServerBuilder, TestServer};
use rmcp::model::{
    ClientConfig, ProtocolVersion, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, ServerNotification, SubscribeRequestParams,
    SubscriptionFilter, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{json, Value};
use tea_agent_runtime::app::App;
use tokio::sync::mpsc;

/// A server of `app` with the rate limit out of the way.
pub(super) fn server_of<A: App>(app: A) -> ServerBuilder<A> {
    TestServer::builder(app).rate_limit("100000/minute")
}

pub(super) async fn server<A: App>(app: A) -> TestServer<A> {
    server_of(app).start().await
}

/// What a client heard without asking: `tools` or the URI of an updated resource.
#[derive(Clone)]
pub(super) struct Ears(pub(super) mpsc::UnboundedSender<String>);

impl ClientHandler for Ears {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send("tools".into());
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

pub(super) type Listener = RunningService<RoleClient, Ears>;

pub(super) fn config<A: App>(
    t: &TestServer<A>,
    bearer: Option<&str>,
) -> StreamableHttpClientTransportConfig {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", t.base));
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    config
}

/// A 2026-07-28 client: `server/discover`, then every request on its own, with the bearer.
pub(super) async fn stateless<A: App>(t: &TestServer<A>, bearer: Option<&str>) -> Listener {
    let (tx, _rx) = mpsc::unbounded_channel();
    Ears(tx)
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config(t, bearer)),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover")
}

/// A 2025-11-25 client (an MCP session) and what it hears.
pub(super) async fn legacy<A: App>(
    t: &TestServer<A>,
    bearer: Option<&str>,
) -> (Listener, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Ears(tx)
        .serve(StreamableHttpClientTransport::from_config(config(
            t, bearer,
        )))
        .await
        .expect("initialize");
    (client, rx)
}

/// Waits (10 s at most) until the client heard each of `what`, in any order.
pub(super) async fn heard(rx: &mut mpsc::UnboundedReceiver<String>, what: &[&str]) {
    let mut missing: Vec<&str> = what.to_vec();
    let wait = async {
        while let Some(got) = rx.recv().await {
            missing.retain(|w| *w != got);
            if missing.is_empty() {
                return;
            }
        }
        panic!("the client went away");
    };
    if tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .is_err()
    {
        panic!("no {what:?} notifications within 10 s");
    }
}

pub(super) async fn tools(client: &Listener) -> Vec<Tool> {
    client.peer().list_all_tools().await.expect("tools/list")
}

pub(super) fn action_names(tools: &[Tool]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t.name.to_string())
        .filter(|n| n.starts_with("do_"))
        .collect()
}

pub(super) fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

pub(super) async fn read(client: &Listener, uri: &str) -> Value {
    let result = client
        .peer()
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect("resources/read");
    match &result.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => {
            serde_json::from_str(text).expect("JSON")
        }
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn sessionless_clients_act_through_action_tools_with_their_bearer() {
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;
    let client = stateless(&t, Some(&m.token)).await;

    // The 19 tools, then one per available action: never the @humanOnly `signOut`.
    let listed = tools(&client).await;
    assert_eq!(listed.len(), 19 + 7, "{:?}", action_names(&listed));
    let names = action_names(&listed);
    for name in [
        "do_inc",
        "do_dec",
        "do_reset",
        "do_delete",
        "do_nav",
        "do_setCount",
        "do_bulkAdd",
    ] {
        assert!(names.contains(&name.to_string()), "{name} in {names:?}");
    }
    let delete = find(&listed, "do_delete");
    let annotations = delete.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.destructive_hint, Some(true));
    assert_eq!(annotations.read_only_hint, Some(false));
    let schema = Value::Object((*delete.input_schema).clone());
    assert_eq!(schema["required"], json!(["id"]));
    assert!(schema["properties"].get("type").is_none(), "{schema}");
    assert_eq!(schema["properties"]["_reason"]["type"], "string");
    assert!(delete
        .description
        .as_deref()
        .unwrap()
        .contains("deleting cannot be undone"));
    let set = find(&listed, "do_setCount");
    let schema = Value::Object((*set.input_schema).clone());
    assert_eq!(schema["properties"]["value"]["type"], "integer");
    assert_eq!(
        schema["properties"]["value"]["description"],
        "a value between 0 and 1000"
    );
    assert!(schema["properties"].get("_reason").is_none());
    assert!(set.output_schema.is_some());
    let inc = find(&listed, "do_inc");
    assert_eq!(inc.title.as_deref(), Some("increment the counter"));
    assert_eq!(
        inc.annotations.as_ref().unwrap().destructive_hint,
        Some(false)
    );

    // Calling one sends the message as send_message does.
    let done = ok(&call(client.peer(), "do_inc", json!({})).await);
    assert_eq!(done["status"], "dispatched", "{done}");
    assert_eq!(
        done["stateDiff"],
        json!([{"op": "replace", "path": "/count", "value": 1}])
    );
    let by_tool = ok(&call(client.peer(), "do_setCount", json!({"value": 5000})).await);
    let by_send = ok(&call(
        client.peer(),
        "send_message",
        json!({"msg": {"type": "setCount", "value": 5000}}),
    )
    .await);
    assert_eq!(by_tool["status"], "rejected", "{by_tool}");
    assert_eq!(by_tool["reason"], "invalid");
    assert_eq!(by_tool, by_send);
    assert_eq!(
        t.lap(&m.token, "/state", &json!({})).await.body["state"]["count"],
        1
    );

    // The state and the description as resources.
    assert_eq!(read(&client, "agent://state").await["state"]["count"], 1);
    assert_eq!(read(&client, "agent://describe").await["name"], "counter");

    // A listen stream hears the commits of another client.
    let mut listen = client
        .peer()
        .listen(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resource_subscriptions(["agent://state".to_string()])
                .build(),
        )
        .await
        .expect("subscriptions/listen");
    assert_eq!(
        listen.acknowledged().resource_subscriptions,
        Some(vec!["agent://state".to_string()])
    );
    let other = stateless(&t, Some(&m.token)).await;
    ok(&call(other.peer(), "do_inc", json!({})).await);
    let next = tokio::time::timeout(Duration::from_secs(10), listen.next())
        .await
        .expect("a notification within 10 s")
        .expect("listen stream");
    match next {
        Some(ServerNotification::ResourceUpdatedNotification(n)) => {
            assert_eq!(n.params.uri, "agent://state")
        }
        other => panic!("expected resources/updated, got {other:?}"),
    }
}

#[tokio::test]
async fn sessionless_clients_without_a_bearer_are_told_how_to_send_it() {
    let t = server(Counter).await;
    let client = stateless(&t, None).await;
    let listed = tools(&client).await;
    assert_eq!(listed.len(), 19);
    let text = err(&call(client.peer(), "connect_session", json!({"token": "agt_x"})).await);
    assert!(text.contains("Authorization: Bearer agt_"), "{text}");
    assert!(text.contains("claude mcp add --transport http"), "{text}");
    let text = err(&call(client.peer(), "observe", json!({})).await);
    assert!(text.contains("Authorization: Bearer"), "{text}");
    // A bad bearer is refused before anything runs.
    let bad = stateless(&t, Some("agt_nope")).await;
    assert!(bad.peer().list_all_tools().await.is_err());
}

#[tokio::test]
#[allow(deprecated)] // resources/subscribe is the legacy revisions' subscription
async fn a_legacy_sessions_tool_list_stays_put_when_a_gate_opens() {
    let t = server(TodoApp::default()).await;
    let m = t.mint("alice", None).await;
    let (client, mut rx) = legacy(&t, None).await;
    assert_eq!(tools(&client).await.len(), 19);
    let connected = ok(&call(client.peer(), "connect_session", json!({"token": m.token})).await);
    assert_eq!(connected["status"], "connected");
    // Binding is a real change of the list: announced at once.
    heard(&mut rx, &["tools"]).await;
    let before = tools(&client).await;
    // Every variant an agent may send, in declaration order, whatever the state: the
    // route-gated `clearCompleted` too (shut: nothing done yet); never the @humanOnly ones.
    assert_eq!(
        action_names(&before),
        [
            "do_add",
            "do_toggle",
            "do_rename",
            "do_delete",
            "do_setFilter",
            "do_clearCompleted",
            "do_bulkAdd",
            "do_completeAll",
            "do_save",
            "do_import"
        ]
    );
    let clear = find(&before, "do_clearCompleted");
    assert!(
        clear
            .description
            .as_deref()
            .unwrap()
            .contains("otherwise refused: no todo is completed yet."),
        "{:?}",
        clear.description
    );

    // Closed now: a tool error with the reason and what is available; nothing dispatched.
    let refused = call(client.peer(), "do_clearCompleted", json!({})).await;
    assert_eq!(refused.is_error, Some(true));
    let body = refused
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(body["status"], "rejected", "{body}");
    assert_eq!(body["reason"], "unavailable", "{body}");
    // The engine's detail: the view does not bind it yet (nothing completed).
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("\"delete every completed todo\" is not offered"),
        "{body}"
    );
    let now = body["availableNow"].as_array().expect("availableNow");
    assert!(now.contains(&json!("do_add")), "{body}");
    assert!(!now.contains(&json!("do_clearCompleted")), "{body}");
    assert!(text(&refused).contains("do_clearCompleted is not available now"));
    // `send_message`'s own refusal stays an answer, not an error.
    let answer = ok(&call(
        client.peer(),
        "send_message",
        json!({"msg": {"type": "clearCompleted"}}),
    )
    .await);
    assert_eq!(answer["reason"], "unavailable", "{answer}");

    client
        .peer()
        .subscribe(SubscribeRequestParams::new("agent://state"))
        .await
        .expect("resources/subscribe");
    let state = read(&client, "agent://state").await;
    let id = state["state"]["todos"][0]["id"]
        .as_str()
        .expect("a todo")
        .to_string();
    let done = ok(&call(client.peer(), "do_toggle", json!({"id": id})).await);
    assert_eq!(done["status"], "dispatched", "{done}");
    // The gate opened: the state is updated, the tool list is not.
    heard(&mut rx, &["agent://state"]).await;
    let after = tools(&client).await;
    assert_eq!(after, before);
    tokio::time::sleep(Duration::from_millis(300)).await;
    while let Ok(got) = rx.try_recv() {
        assert_ne!(got, "tools", "no list_changed for a gate that moved");
    }
}

#[tokio::test]
async fn a_requires_confirm_tool_waits_for_the_human() {
    let t = server(Counter).await;
    let m = t.mint("alice", None).await;
    let (client, _rx) = legacy(&t, Some(&m.token)).await;
    let waiting = {
        let peer = client.peer().clone();
        tokio::spawn(async move {
            call(
                &peer,
                "do_delete",
                json!({"id": "7", "_reason": "the user asked"}),
            )
            .await
        })
    };
    let pending = t.wait_for_pending("alice", &m, 1).await;
    assert_eq!(pending[0]["reason"], "the user asked", "{pending:?}");
    let id = t.next_confirm_id("alice", &m).await;
    // The message has not been applied while the human decides.
    assert_eq!(
        t.lap(&m.token, "/state", &json!({})).await.body["state"]["lastDelete"],
        Value::Null
    );
    assert_eq!(
        t.decide("alice", &m, &id, json!({"decision": "approve"}))
            .await
            .0,
        200
    );
    let result = waiting.await.expect("join");
    let answer = ok(&result);
    // The default wait of `send_message` may end before the decision: then it is polled.
    let confirmed = if answer["status"] == "pending-confirmation" {
        ok(&call(
            client.peer(),
            "get_confirm_result",
            json!({"confirmId": answer["confirmId"], "timeoutMs": 5000}),
        )
        .await)
    } else {
        answer
    };
    assert_eq!(confirmed["status"], "confirmed", "{confirmed}");
    assert_eq!(confirmed["stateAfter"]["lastDelete"], "7");
}

#[tokio::test]
async fn a_paired_apps_actions_are_tools_too() {
    let t = server_of(Counter)
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .start()
        .await;
    let (token, _app) = AppProcess::paired(&t, env!("CARGO_BIN_EXE_paired-counter")).await;

    let client = stateless(&t, Some(&token)).await;
    let listed = tools(&client).await;
    let names = action_names(&listed);
    assert!(names.contains(&"do_inc".to_string()), "{names:?}");
    assert!(!names.contains(&"do_signOut".to_string()), "{names:?}");
    // The schema comes from the app's own description.
    let set = find(&listed, "do_setCount");
    assert_eq!(set.input_schema["required"], json!(["value"]));
    let done = ok(&call(client.peer(), "do_inc", json!({})).await);
    assert_eq!(done["status"], "dispatched", "{done}");
    assert_eq!(read(&client, "agent://state").await["state"]["count"], 1);
}

#[tokio::test]
async fn action_tools_can_be_turned_off() {
    let t = server_of(Counter)
        .options(|o| o.mcp.action_tools = false)
        .start()
        .await;
    let m = t.mint("alice", None).await;
    let client = stateless(&t, Some(&m.token)).await;
    assert_eq!(tools(&client).await.len(), 19);
    assert!(client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new("do_inc"))
        .await
        .is_err());
}
