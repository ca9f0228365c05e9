//! An app that does not override `App::bindings` offers agents every variant they may send
//! (`docs/semantics.md` §4): `list_actions` lists them in declaration order with synthesized
//! payload hints, MCP has a `do_*` tool for each, and a `@humanOnly` variant is never among
//! them. An app that names its bindings (`Bindings::only`, by `MsgKind`) narrows the list.

use agent_tests::mcp::{call, ok};
use agent_tests::TestServer;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_runtime::app::Bindings;
use tea_agent_runtime::AgentMsg;

#[derive(Clone, Default, Serialize, Deserialize, JsonSchema)]
struct Notes {
    notes: Vec<String>,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum NoteMsg {
    /// @intent("add a note")
    Add { text: String },
    /// @humanOnly
    Import,
    /// @intent("remove every note")
    Clear,
    /// @agentOnly @intent("summarize the notes")
    Summarize,
}

fn apply(state: &mut Notes, msg: NoteMsg) {
    match msg {
        NoteMsg::Add { text } => state.notes.push(text),
        NoteMsg::Import => state.notes.push("imported".into()),
        NoteMsg::Clear => state.notes.clear(),
        NoteMsg::Summarize => {}
    }
}

/// No `bindings` override.
struct Everything;

agent_tests::test_app! {
    Everything { name: "notes", version: "1", state: Notes = Notes::default(), msg: NoteMsg }
    update(state, msg) => apply(state, msg);
}

/// Bindings narrowed to what the UI shows; the bound `@humanOnly` `import` stays hidden.
struct Narrowed;

agent_tests::test_app! {
    Narrowed { name: "notes", version: "1", state: Notes = Notes::default(), msg: NoteMsg }
    update(state, msg) => apply(state, msg);
    fn bindings(&self, _state: &Notes) -> Bindings<NoteMsgKind> {
        Bindings::only([NoteMsgKind::Clear, NoteMsgKind::Import])
    }
}

/// `(variant, source, payloadHint)` of each action of `/actions`.
async fn actions<A: tea_agent_runtime::app::App>(t: &TestServer<A>, token: &str) -> Vec<Value> {
    let answer = t.lap(token, "/actions", &json!({})).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| json!([a["variant"], a["source"], a["payloadHint"]]))
        .collect()
}

/// The `do_*` tools an MCP client bound to `token` lists.
async fn action_tools<A: tea_agent_runtime::app::App>(
    t: &TestServer<A>,
    token: &str,
) -> Vec<String> {
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/agent/mcp", t.base));
    let client = ().serve(transport).await.expect("MCP initialize");
    let connected = ok(&call(client.peer(), "connect_session", json!({ "token": token })).await);
    assert_eq!(connected["status"], "connected", "{connected}");
    let tools = client.peer().list_all_tools().await.expect("tools/list");
    let _ = client.cancel().await;
    tools
        .iter()
        .map(|t| t.name.to_string())
        .filter(|n| n.starts_with("do_"))
        .collect()
}

#[tokio::test]
async fn an_app_without_bindings_offers_every_variant_an_agent_may_send() {
    let t = TestServer::builder(Everything).start().await;
    let m = t.mint("alice", None).await;
    assert_eq!(
        actions(&t, &m.token).await,
        [
            json!(["add", "schema", {"type": "add", "text": ""}]),
            json!(["clear", "schema", {"type": "clear"}]),
            json!(["summarize", "schema", {"type": "summarize"}]),
        ]
    );
    assert_eq!(
        action_tools(&t, &m.token).await,
        ["do_add", "do_clear", "do_summarize"]
    );
}

#[tokio::test]
async fn bindings_named_by_kind_narrow_the_list() {
    let t = TestServer::builder(Narrowed).start().await;
    let m = t.mint("alice", None).await;
    assert_eq!(
        actions(&t, &m.token).await,
        [
            json!(["clear", "binding", null]),
            json!(["summarize", "schema", {"type": "summarize"}]),
        ]
    );
    // The tool list does not move with the bindings (`docs/mcp.md` §Action tools): every
    // action an agent may ever send is a tool; one not offered now is refused when called.
    assert_eq!(
        action_tools(&t, &m.token).await,
        ["do_add", "do_clear", "do_summarize"]
    );
    let refused = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "add", "text": "x"}}),
        )
        .await;
    assert_eq!(refused.body["reason"], "unavailable", "{}", refused.body);
}
