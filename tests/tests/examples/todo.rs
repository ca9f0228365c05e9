//! `examples/todo` started as `cargo run --example todo --port 0` starts it, driven over LAP as
//! an agent would: the async save effect (`waitFor: drained`), route gates with reasons,
//! agent-only bulk edits, a confirmed destructive action, the nested tagged filter, redaction.

use agent_examples::todo::TodoApp;
use agent_tests::example::ExampleWorld;
use agent_tests::mcp::McpAgent;
use serde_json::{json, Value};

type World = ExampleWorld<TodoApp>;

fn find<'a>(actions: &'a [Value], variant: &str) -> &'a Value {
    actions
        .iter()
        .find(|a| a["variant"] == variant)
        .unwrap_or_else(|| panic!("{variant} is not listed"))
}

#[tokio::test]
async fn drained_dispatch_waits_for_the_save_round_trip() {
    let w = World::start(TodoApp::default()).await;
    let (status, idle) = w
        .lap(
            "/message",
            json!({"msg": {"type": "save"}, "waitFor": "idle"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        idle["stateDiff"],
        json!([{"op": "replace", "path": "/save", "value": "saving"}]),
        "idle answers before the save effect comes back: {idle}"
    );
    let (_, drained) = w
        .lap(
            "/message",
            json!({"msg": {"type": "bulkAdd", "todos": [{"title": "a"}, {"title": "b", "priority": "high"}]},
                   "waitFor": "drained", "drainQuietMs": 150, "includeState": true}),
        )
        .await;
    assert_eq!(drained["status"], "dispatched", "{drained}");
    assert_eq!(drained["drain"]["timedOut"], false, "{drained}");
    let after = &drained["stateAfter"];
    assert_eq!(after["save"], "saved", "the save finished: {drained}");
    assert_eq!(after["saves"], 2, "both saves fed back `saved`: {drained}");
    assert_eq!(after["todos"][3]["priority"], "high");
    assert_eq!(after["todos"][3]["id"], "t4");
}

#[tokio::test]
async fn route_gates_say_why_an_action_is_unavailable() {
    let w = World::start(TodoApp::default()).await;
    // Nothing is done: clearCompleted is not bound, completeAll (agent-only) is available.
    let actions = w.actions().await;
    assert!(actions.iter().all(|a| a["variant"] != "clearCompleted"));
    // An open gate adds no keys (`docs/semantics.md` §4).
    assert!(find(&actions, "completeAll").get("available").is_none());
    // Everything done: completeAll is listed as unavailable with its reason.
    w.send(json!({"type": "completeAll"})).await;
    let actions = w.actions().await;
    let complete_all = find(&actions, "completeAll");
    assert_eq!(complete_all["available"], false, "{complete_all}");
    assert_eq!(
        complete_all["unavailableReason"],
        "every todo is done already"
    );
    assert_eq!(find(&actions, "clearCompleted")["requiresConfirm"], true);
}

#[tokio::test]
async fn clear_completed_needs_the_human_and_saves_after() {
    let w = World::start(TodoApp::default()).await;
    w.send(json!({"type": "toggle", "id": "t1"})).await;
    let ask = w.lap(
        "/message",
        json!({"msg": {"type": "clearCompleted"}, "reason": "tidy", "timeoutMs": 10_000, "waitFor": "drained"}),
    );
    let ((status, answer), (entry, _)) = tokio::join!(ask, w.decide_next("approve"));
    assert_eq!(entry["variant"], "clearCompleted");
    assert_eq!(status, 200);
    assert_eq!(answer["status"], "confirmed", "{answer}");
    let todos = answer["stateAfter"]["todos"].as_array().unwrap();
    assert_eq!(todos.len(), 1);
    assert_eq!(todos[0]["id"], "t2");
}

#[tokio::test]
async fn nested_filter_redaction_and_human_only_key_rotation() {
    let w = World::start(TodoApp::default()).await;
    let answer = w
        .send(json!({"type": "setFilter", "filter": {"kind": "tagged", "tag": "home"}}))
        .await;
    assert_eq!(
        answer["stateDiff"],
        json!([
            {"op": "replace", "path": "/filter/kind", "value": "tagged"},
            {"op": "add", "path": "/filter/tag", "value": "home"}
        ])
    );
    let bad = w
        .send(json!({"type": "setFilter", "filter": {"kind": "tagged"}}))
        .await;
    assert_eq!(bad["status"], "rejected", "{bad}");
    assert!(bad["detail"].as_str().unwrap().contains("tag"), "{bad}");

    // The secret never reaches the agent; its owner sees it, marked as hidden from agents
    // (`docs/security.md` §The owner sees their own data).
    let state = w.state().await;
    assert!(state.get("apiKey").is_none(), "{state}");
    let human_view = w.human(reqwest::Method::GET, "", None).await;
    assert_eq!(human_view["state"]["apiKey"], "sk-demo-secret");
    assert_eq!(human_view["hiddenFromAgents"], json!(["/apiKey"]));

    let refused = w.send(json!({"type": "rotateKey"})).await;
    assert_eq!(refused["reason"], "human-only", "{refused}");
    let rotated = w
        .human(
            reqwest::Method::POST,
            "/dispatch",
            Some(json!({"msg": {"type": "rotateKey"}})),
        )
        .await;
    assert_eq!(rotated["status"], "dispatched", "{rotated}");
    assert_eq!(
        rotated["stateDiff"],
        json!([{"op": "replace", "path": "/apiKey", "value": "sk-rotated-0"}]),
        "the owner's answer shows the owner's change"
    );
    // The agent's view did not change: nothing it can read differs.
    let after = w.state().await;
    assert_eq!(after, state, "{after}");
}

#[tokio::test]
async fn empty_titles_fail_validates() {
    let w = World::start(TodoApp::default()).await;
    let answer = w.send(json!({"type": "add", "title": ""})).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("size(v) > 0 && size(v) <= 200"),
        "{answer}"
    );
    let ok = w
        .send(json!({"type": "add", "title": "water the plants"}))
        .await;
    assert_eq!(ok["status"], "dispatched");
    assert_eq!(w.state().await["todos"][2]["title"], "water the plants");
}

#[tokio::test]
async fn an_mcp_agent_adds_todos_and_waits_for_the_save() {
    let w = World::start(TodoApp::default()).await;
    let agent = McpAgent::connect(&w.example.base_url(), &w.token).await;
    let described = agent.call("describe_app", json!({})).await;
    assert_eq!(described["name"], "todo", "{described}");
    let sent = agent
        .call(
            "send_message",
            json!({"msg": {"type": "bulkAdd", "todos": [{"title": "call mum"}]},
                   "waitFor": "drained", "drainQuietMs": 150, "includeState": true}),
        )
        .await;
    assert_eq!(sent["status"], "dispatched", "{sent}");
    assert_eq!(sent["stateAfter"]["save"], "saved", "{sent}");
    assert_eq!(sent["stateAfter"]["todos"][2]["title"], "call mum");
    assert!(
        sent["stateAfter"].get("apiKey").is_none(),
        "redacted: {sent}"
    );
    let narrated = agent
        .call("narrate", json!({"text": "added the todo you asked for"}))
        .await;
    assert_eq!(narrated["ok"], true, "{narrated}");
    let log = w.human(reqwest::Method::GET, "", None).await["log"].clone();
    assert!(
        log.to_string().contains("added the todo you asked for"),
        "{log}"
    );
    agent.close().await;
}
