//! The `tools/list` of `/agent/mcp` as hosts need it (`docs/mcp.md` §Action tools, §Tool
//! annotations): its size per tool, the hints every tool carries, and `list_changed` only for
//! a real change (a client that caches the list: `host_quirks.rs`).

use agent_examples::counter::Counter;
use agent_examples::todo::TodoApp;
use std::time::Duration;
use tea_agent_runtime::app::App;

use agent_tests::mcp::{call, ok};
use agent_tests::paired::AppProcess;
use rmcp::model::{ListToolsResult, ServerNotification, SubscriptionFilter, Tool};
use serde_json::{json, Value};

use super::actions::{action_names, read, server, server_of, stateless, tools};

/// The reference lists 16 tools in 9,851 bytes (616 bytes per tool); the list may take 1.5×.
const MAX_BYTES_PER_TOOL: usize = 924;

/// Bytes of the serialized `tools/list` result of a bound 2026-07-28 client, per tool.
async fn bytes_per_tool<A: App>(app: A) -> (usize, usize, Vec<Tool>) {
    let t = server(app).await;
    let m = t.mint("alice", None).await;
    let client = stateless(&t, Some(&m.token)).await;
    let listed = tools(&client).await;
    let bytes = serde_json::to_vec(&ListToolsResult::with_all_items(listed.clone()))
        .expect("serializes")
        .len();
    (bytes, listed.len(), listed)
}

#[tokio::test]
async fn the_tool_list_stays_light() {
    for (name, (bytes, count, _)) in [
        ("counter", bytes_per_tool(Counter).await),
        ("todo", bytes_per_tool(TodoApp::default()).await),
    ] {
        let per_tool = bytes / count;
        println!("{name}: tools/list {bytes} bytes, {count} tools, {per_tool} bytes/tool");
        assert!(
            per_tool <= MAX_BYTES_PER_TOOL,
            "{name}: {per_tool} bytes per tool ({bytes} bytes, {count} tools)"
        );
    }
}

/// The tools that only read: read-only, not destructive, idempotent, closed world.
const READS: &[&str] = &[
    "observe",
    "describe_app",
    "get_state",
    "query_state",
    "describe_recent_actions",
    "would_dispatch",
    "list_actions",
    "get_confirm_result",
    "wait_for_change",
    "query_dom",
    "describe_visible_content",
    "describe_context",
    "list_pending",
];

/// `(readOnly, destructive, idempotent, openWorld)` of a tool.
fn hints(tool: &Tool) -> (bool, bool, bool, bool) {
    let a = tool
        .annotations
        .as_ref()
        .unwrap_or_else(|| panic!("{} has no annotations", tool.name));
    let set = |hint: Option<bool>, name: &str| {
        hint.unwrap_or_else(|| panic!("{}: {name} not set", tool.name))
    };
    (
        set(a.read_only_hint, "readOnlyHint"),
        set(a.destructive_hint, "destructiveHint"),
        set(a.idempotent_hint, "idempotentHint"),
        set(a.open_world_hint, "openWorldHint"),
    )
}

/// The rule of `docs/mcp.md` §Tool annotations for `tool`, the app's annotations at hand.
fn expected(tool: &Tool, annotations: &Value) -> (bool, bool, bool, bool) {
    let name = tool.name.as_ref();
    if READS.contains(&name) {
        return (true, false, true, false);
    }
    match name {
        // May send any message, the destructive and effectful ones too.
        "send_message" => (false, true, false, true),
        "narrate" => (false, false, false, false),
        // Stops work, again and again to the same end.
        "cancel_work" => (false, true, true, false),
        "withdraw_proposal" | "connect_session" | "disconnect_session" => {
            (false, false, true, false)
        }
        _ => {
            let wire = name.strip_prefix("do_").expect("an action tool");
            let a = &annotations[wire];
            assert!(a.is_object(), "{wire} has annotations");
            let confirm = a["requiresConfirm"] == json!(true);
            let emits = a["emits"].as_array().is_some_and(|e| !e.is_empty());
            (false, confirm, false, emits)
        }
    }
}

#[tokio::test]
async fn every_tool_carries_its_hints_by_the_rule() {
    async fn check<A: App>(app: A, actions: usize) {
        let t = server(app).await;
        let m = t.mint("alice", None).await;
        let client = stateless(&t, Some(&m.token)).await;
        let listed = tools(&client).await;
        assert_eq!(listed.len(), 19 + actions, "{:?}", action_names(&listed));
        let description = read(&client, "agent://describe").await;
        for tool in &listed {
            assert!(tool.title.is_some(), "{} has a title", tool.name);
            let a = tool.annotations.as_ref().expect("annotations");
            assert_eq!(a.title, tool.title, "{}", tool.name);
            assert_eq!(
                hints(tool),
                expected(tool, &description["annotations"]),
                "{}",
                tool.name
            );
        }
    }
    check(Counter, 7).await;
    check(TodoApp::default(), 10).await;
}

#[tokio::test]
async fn a_listen_stream_hears_the_list_change_only_when_a_paired_app_leaves() {
    let t = server_of(Counter)
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .start()
        .await;
    let (token, app) = AppProcess::paired(&t, env!("CARGO_BIN_EXE_paired-counter")).await;
    let client = stateless(&t, Some(&token)).await;
    // A paired app may pair again with another version: its list is not kept.
    let first = client.peer().list_tools(None).await.expect("tools/list");
    assert_eq!(first.ttl_ms, Some(0));
    let mut listen = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen");

    // A commit changes no list.
    ok(&call(client.peer(), "do_inc", json!({})).await);
    let quiet = tokio::time::timeout(Duration::from_millis(500), listen.next()).await;
    assert!(quiet.is_err(), "a commit sent {quiet:?}");

    // The app going away takes its actions off the list.
    drop(app);
    let next = tokio::time::timeout(Duration::from_secs(40), listen.next())
        .await
        .expect("a notification within 40 s")
        .expect("listen stream");
    assert!(
        matches!(
            next,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{next:?}"
    );
}
