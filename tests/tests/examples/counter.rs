//! `examples/counter` started the way `cargo run --example counter --port 0` starts it (anonymous
//! minting, the example's own options), then driven over LAP as an agent would, with a
//! cookie-carrying client as the human. Each tag of the counter (`docs/lap.md` §11.8) has a test that
//! shows its effect on the wire.

use agent_examples::counter::Counter;
use agent_tests::example::ExampleWorld;
use agent_tests::mcp::McpAgent;
use serde_json::{json, Value};

type World = ExampleWorld<Counter>;

fn variants(actions: &[Value]) -> Vec<&str> {
    actions
        .iter()
        .map(|a| a["variant"].as_str().expect("variant"))
        .collect()
}

fn action<'a>(actions: &'a [Value], variant: &str) -> &'a Value {
    actions
        .iter()
        .find(|a| a["variant"] == variant)
        .unwrap_or_else(|| panic!("{variant} is not listed"))
}

#[tokio::test]
async fn starts_on_a_free_port_and_announces_it() {
    let w = World::start(Counter).await;
    assert_ne!(w.example.addr.port(), 0);
    let banner = w.example.banner();
    assert!(
        banner.contains(&format!("http://127.0.0.1:{}", w.example.addr.port())),
        "{banner}"
    );
    assert!(banner.contains("/agent/console"), "{banner}");
    assert!(w.token.starts_with("agt_"));
    assert_eq!(
        w.state().await,
        json!({"count": 0, "lastDelete": null, "view": "home"})
    );
    let console = w
        .human
        .get(format!("{}/agent/console", w.example.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(console.status().as_u16(), 200);
}

#[tokio::test]
async fn observe_is_lean_and_describe_is_whole() {
    let w = World::start(Counter).await;
    let (status, observed) = w.lap("/observe", json!({})).await;
    assert_eq!(status, 200);
    let describe = w.describe().await;
    let lean = &observed["description"];
    // The annotations are in describe only; every listed action carries its own.
    assert!(lean.get("annotations").is_none(), "{lean}");
    assert_eq!(
        describe["annotations"]["inc"]["intent"],
        "increment the counter"
    );
    let mut whole = describe.clone();
    whole.as_object_mut().unwrap().shift_remove("annotations");
    assert_eq!(lean, &whole);
    // The state schema is compact: no dialect URL, no titles repeating a type or property.
    let schema = describe["stateSchema"].to_string();
    assert!(
        !schema.contains("$schema") && !schema.contains("\"title\""),
        "{schema}"
    );
    assert_eq!(
        describe["stateSchema"]["required"],
        json!(["count", "view"])
    );
    // Bytes an agent reads on every observe (3,224 when this was written; 5,264 before).
    let bytes = serde_json::to_vec(&observed).unwrap().len();
    assert!(bytes < 3_600, "observe is {bytes} bytes");
}

#[tokio::test]
async fn intent_names_the_action_in_listing_and_describe() {
    let w = World::start(Counter).await;
    let actions = w.actions().await;
    assert_eq!(action(&actions, "inc")["intent"], "increment the counter");
    assert_eq!(action(&actions, "dec")["intent"], "decrement the counter");
    assert_eq!(
        action(&actions, "reset")["intent"],
        "reset the counter to zero"
    );
    let describe = w.describe().await;
    assert_eq!(describe["name"], "counter");
    assert_eq!(
        describe["annotations"]["setCount"]["intent"],
        "set the counter to a value"
    );
    assert!(describe["docs"]["purpose"].as_str().unwrap().len() > 10);
    // Bindings first in the app's order, then nav (always affordable), then bulkAdd (agent-only
    // from the schema); never signOut.
    assert_eq!(
        variants(&actions),
        ["inc", "dec", "reset", "setCount", "delete", "nav", "bulkAdd"]
    );
    let sources: Vec<&str> = actions
        .iter()
        .map(|a| a["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        [
            "binding",
            "binding",
            "binding",
            "binding",
            "binding",
            "always-affordable",
            "schema"
        ]
    );
    // The plain intents dispatch and change the count.
    for msg in ["inc", "inc", "inc", "dec"] {
        assert_eq!(w.send(json!({"type": msg})).await["status"], "dispatched");
    }
    assert_eq!(w.state().await["count"], 2);
    let reset = w.send(json!({"type": "reset"})).await;
    assert_eq!(
        reset["stateDiff"],
        json!([{"op": "replace", "path": "/count", "value": 0}])
    );
}

#[tokio::test]
async fn warning_and_example_travel_with_delete() {
    let w = World::start(Counter).await;
    let actions = w.actions().await;
    let delete = action(&actions, "delete");
    assert_eq!(delete["warning"], "deleting cannot be undone");
    // Examples travel as the author wrote them: strings (`docs/annotations.md` §5).
    assert_eq!(
        delete["examples"],
        json!([r#"{"type":"delete","id":"42"}"#])
    );
    assert_eq!(delete["requiresConfirm"], true);
    let annotations = &w.describe().await["annotations"]["delete"];
    assert_eq!(annotations["warning"], "deleting cannot be undone");
    assert_eq!(
        annotations["examples"],
        json!([r#"{"type":"delete","id":"42"}"#])
    );
}

#[tokio::test]
async fn requires_confirm_parks_until_the_human_approves_or_rejects() {
    let w = World::start(Counter).await;
    // Rejected by the human → rejected / user-cancelled, state unchanged.
    let agent = {
        let lap = w.lap(
            "/message",
            json!({"msg": {"type": "delete", "id": "7"}, "reason": "tidy up", "timeoutMs": 10_000}),
        );
        let ((_, answer), (entry, decided)) = tokio::join!(lap, w.decide_next("reject"));
        assert_eq!(entry["variant"], "delete");
        assert_eq!(entry["payload"], json!({"id": "7"}));
        assert_eq!(decided, json!({"status": "rejected"}));
        answer
    };
    assert_eq!(agent["status"], "rejected", "{agent}");
    assert_eq!(agent["reason"], "user-cancelled", "{agent}");
    assert_eq!(w.state().await["lastDelete"], Value::Null);

    // Approved → confirmed with the state after, and the app applied it.
    let lap = w.lap(
        "/message",
        json!({"msg": {"type": "delete", "id": "42"}, "reason": "tidy up", "timeoutMs": 10_000}),
    );
    let ((status, answer), (_, approved)) = tokio::join!(lap, w.decide_next("approve"));
    assert_eq!(approved, json!({"status": "approved"}));
    assert_eq!(status, 200);
    assert_eq!(answer["status"], "confirmed", "{answer}");
    assert_eq!(answer["stateAfter"]["lastDelete"], "42");
    assert_eq!(w.state().await["lastDelete"], "42");
}

#[tokio::test]
async fn human_only_is_refused_to_the_agent_and_never_listed() {
    let w = World::start(Counter).await;
    let answer = w.send(json!({"type": "signOut"})).await;
    assert_eq!(answer["status"], "rejected");
    assert_eq!(answer["reason"], "human-only");
    assert!(!variants(&w.actions().await).contains(&"signOut"));
    assert_eq!(
        w.describe().await["annotations"]["signOut"]["dispatchMode"],
        "human-only"
    );
    // The human may send it.
    let human = w
        .human(
            reqwest::Method::POST,
            "/dispatch",
            Some(json!({"msg": {"type": "signOut"}})),
        )
        .await;
    assert_eq!(human["status"], "dispatched", "{human}");
}

#[tokio::test]
async fn always_affordable_nav_is_listed_with_its_example_and_dispatches() {
    let w = World::start(Counter).await;
    let actions = w.actions().await;
    let nav = action(&actions, "nav");
    assert_eq!(nav["source"], "always-affordable");
    assert_eq!(nav["examples"], json!([r#"{"type":"nav","to":"reports"}"#]));
    let answer = w.send(json!({"type": "nav", "to": "reports"})).await;
    assert_eq!(
        answer["stateDiff"],
        json!([{"op": "replace", "path": "/view", "value": "reports"}])
    );
    // The enum is closed: another page is invalid.
    let bad = w.send(json!({"type": "nav", "to": "settings"})).await;
    assert_eq!(bad["status"], "rejected", "{bad}");
    assert_eq!(bad["reason"], "invalid", "{bad}");
}

#[tokio::test]
async fn validates_keeps_set_count_in_range_and_should_hints_it() {
    let w = World::start(Counter).await;
    let actions = w.actions().await;
    let hints = action(&actions, "setCount")["fieldHints"].clone();
    let hints = hints.as_array().expect("fieldHints");
    let hint_texts: Vec<&str> = hints.iter().filter_map(|h| h["hint"].as_str()).collect();
    assert!(
        hint_texts.contains(&"a value between 0 and 1000"),
        "{hints:?}"
    );
    assert!(
        hint_texts.iter().any(|h| h.contains("v >= 0 && v <= 1000")),
        "{hints:?}"
    );
    let ok = w.send(json!({"type": "setCount", "value": 1000})).await;
    assert_eq!(ok["status"], "dispatched");
    let too_big = w.send(json!({"type": "setCount", "value": 1001})).await;
    assert_eq!(too_big["status"], "rejected", "{too_big}");
    assert_eq!(too_big["reason"], "invalid", "{too_big}");
    assert!(
        too_big["detail"]
            .as_str()
            .unwrap()
            .contains("v >= 0 && v <= 1000"),
        "{too_big}"
    );
    let negative = w.send(json!({"type": "setCount", "value": -1})).await;
    assert_eq!(negative["status"], "rejected", "{negative}");
    assert_eq!(w.state().await["count"], 1000);
}

#[tokio::test]
async fn agent_only_bulk_add_is_offered_from_the_schema_and_emits_its_effect() {
    let w = World::start(Counter).await;
    let actions = w.actions().await;
    let bulk = action(&actions, "bulkAdd");
    assert_eq!(bulk["dispatchMode"], "agent-only");
    assert_eq!(bulk["source"], "schema");
    assert_eq!(
        bulk["payloadHint"],
        json!({"type": "bulkAdd", "amounts": [0]})
    );
    assert_eq!(bulk["emits"], json!(["audit/write"]));
    // Predicted without running: the effect the annotation names.
    let (status, predicted) = w
        .lap(
            "/would-dispatch",
            json!({"msg": {"type": "bulkAdd", "amounts": [2, 3]}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(predicted["status"], "predicted", "{predicted}");
    assert_eq!(
        predicted["effects"],
        json!([{"type": "audit/write", "amounts": [2, 3]}])
    );
    assert_eq!(w.state().await["count"], 0, "a prediction commits nothing");
    // Sent for real, drained: the count moves and the effect was observed.
    let (_, answer) = w
        .lap(
            "/message",
            json!({"msg": {"type": "bulkAdd", "amounts": [2, 3]}, "waitFor": "drained"}),
        )
        .await;
    assert_eq!(answer["status"], "dispatched", "{answer}");
    assert_eq!(
        answer["stateDiff"],
        json!([{"op": "replace", "path": "/count", "value": 5}])
    );
    assert_eq!(answer["drain"]["timedOut"], false, "{answer}");
}

#[tokio::test]
async fn context_docs_and_visible_content_hooks_answer() {
    let w = World::start(Counter).await;
    w.send(json!({"type": "inc"})).await;
    let (_, context) = w.lap("/context", json!({})).await;
    assert_eq!(
        context["context"]["summary"], "viewing home, count is 1",
        "{context}"
    );
    let (_, dom) = w.lap("/query-dom", json!({"name": "inc"})).await;
    assert_eq!(dom["elements"][0]["text"], "+", "{dom}");
    let (_, visible) = w.lap("/describe-visible", json!({})).await;
    assert_eq!(visible["source"], "data-agent", "{visible}");
}

#[tokio::test]
async fn the_same_tags_hold_over_mcp() {
    let w = World::start(Counter).await;
    let agent = McpAgent::connect(&w.example.base_url(), &w.token).await;
    let observed = agent.call("observe", json!({})).await;
    assert_eq!(observed["state"]["count"], 0, "{observed}");
    let listed: Vec<&str> = observed["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["variant"].as_str().unwrap())
        .collect();
    assert!(!listed.contains(&"signOut"), "{listed:?}");
    assert!(listed.contains(&"bulkAdd"), "{listed:?}");

    let sent = agent
        .call("send_message", json!({"msg": {"type": "inc"}}))
        .await;
    assert_eq!(sent["status"], "dispatched", "{sent}");
    let refused = agent
        .call("send_message", json!({"msg": {"type": "signOut"}}))
        .await;
    assert_eq!(refused["reason"], "human-only", "{refused}");
    let invalid = agent
        .call(
            "send_message",
            json!({"msg": {"type": "setCount", "value": 5000}}),
        )
        .await;
    assert_eq!(invalid["status"], "rejected", "{invalid}");

    // @requiresConfirm through MCP: parks, the human approves in the console's route.
    let ask = agent.call(
        "send_message",
        json!({"msg": {"type": "delete", "id": "9"}, "reason": "cleanup", "timeoutMs": 10_000}),
    );
    let (confirmed, _) = tokio::join!(ask, w.decide_next("approve"));
    assert_eq!(confirmed["status"], "confirmed", "{confirmed}");
    assert_eq!(confirmed["stateAfter"]["lastDelete"], "9");
    agent.close().await;
}
