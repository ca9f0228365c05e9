//! The session view, an MCP App (`docs/mcp.md` §The session view in the chat): the resource
//! `ui://agent/session` for every client, the tools tied to it only for a client that declared
//! the extension `io.modelcontextprotocol/ui` (at initialize, or per request on 2026-07-28),
//! and a view that decides nothing (`docs/security.md` §The session view decides nothing).

use agent_examples::todo::TodoApp;
use agent_tests::TestServer;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ListToolsResult, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{json, Value};
use tea_agent_runtime::app::App;

use super::actions::{config, legacy, server, server_of, stateless};

const VIEW: &str = "ui://agent/session";
const MIME: &str = "text/html;profile=mcp-app";
/// The document's budget: it is sent to every host that renders it.
const VIEW_BUDGET_BYTES: usize = 32 * 1024;
/// The tools/list budget per tool (`tool_list.rs`).
const MAX_BYTES_PER_TOOL: usize = 924;

/// A client that renders MCP Apps: it declares the extension.
#[derive(Clone)]
struct AppsHost;

impl ClientHandler for AppsHost {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [MIME]}}
        }))
        .expect("capabilities");
        let mut config = ClientConfig::default();
        config.capabilities = capabilities;
        config
    }
}

async fn apps_stateless<A: App>(
    t: &TestServer<A>,
    bearer: &str,
) -> RunningService<RoleClient, AppsHost> {
    AppsHost
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config(t, Some(bearer))),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover")
}

async fn apps_legacy<A: App>(
    t: &TestServer<A>,
    bearer: &str,
) -> RunningService<RoleClient, AppsHost> {
    AppsHost
        .serve(StreamableHttpClientTransport::from_config(config(
            t,
            Some(bearer),
        )))
        .await
        .expect("initialize")
}

/// The tools `client` lists.
async fn tools<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<Tool> {
    client.peer().list_all_tools().await.expect("tools/list")
}

/// Bytes of the `tools/list` result of `listed`.
fn bytes(listed: &[Tool]) -> usize {
    serde_json::to_vec(&ListToolsResult::with_all_items(listed.to_vec()))
        .expect("serializes")
        .len()
}

/// The names of the tools carrying `_meta.ui.resourceUri` = the view.
fn tied(listed: &[Tool]) -> Vec<String> {
    listed
        .iter()
        .filter(|t| {
            t.meta.as_ref().and_then(|m| m.0.get("ui")) == Some(&json!({"resourceUri": VIEW}))
        })
        .map(|t| t.name.to_string())
        .collect()
}

/// `listed` without any `_meta.ui`.
fn untied(listed: &[Tool]) -> Vec<Tool> {
    let mut listed = listed.to_vec();
    for tool in &mut listed {
        if let Some(meta) = tool.meta.as_mut() {
            meta.0.remove("ui");
            if meta.0.is_empty() {
                tool.meta = None;
            }
        }
    }
    listed
}

#[tokio::test]
async fn only_a_client_that_declared_the_extension_sees_the_tools_tied_to_the_view() {
    let t = server(TodoApp::default()).await;
    let m = t.mint("alice", None).await;
    let plain = tools(&stateless(&t, Some(&m.token)).await).await;
    let apps = tools(&apps_stateless(&t, &m.token).await).await;
    let (plain_bytes, apps_bytes) = (bytes(&plain), bytes(&apps));
    println!(
        "todo: tools/list {plain_bytes} bytes without the extension, {apps_bytes} with it, {} tools",
        plain.len()
    );
    // Without the extension: no tool names the view, and the list is the one with it, `_meta.ui`
    // aside, byte for byte.
    assert!(tied(&plain).is_empty());
    assert!(plain.iter().all(|t| t.meta.is_none()), "no _meta at all");
    assert_eq!(
        serde_json::to_vec(&ListToolsResult::with_all_items(plain.clone())).unwrap(),
        serde_json::to_vec(&ListToolsResult::with_all_items(untied(&apps))).unwrap()
    );
    // With it: observe, send_message, wait_for_change and every action tool, nothing else.
    let mut expected: Vec<String> = apps
        .iter()
        .map(|t| t.name.to_string())
        .filter(|n| {
            matches!(n.as_str(), "observe" | "send_message" | "wait_for_change")
                || n.starts_with("do_")
        })
        .collect();
    assert!(expected.len() > 3, "the todo app has action tools");
    expected.sort();
    let mut got = tied(&apps);
    got.sort();
    assert_eq!(got, expected);
    // No app-only tool, with or without the extension: the view decides nothing.
    for tool in plain.iter().chain(&apps) {
        let visibility = tool
            .meta
            .as_ref()
            .and_then(|m| m.0.get("ui"))
            .and_then(|ui| ui.get("visibility"));
        assert_eq!(visibility, None, "{}", tool.name);
    }
    assert!(apps_bytes / apps.len() <= MAX_BYTES_PER_TOOL);

    // A legacy session declares it at initialize.
    let (legacy_plain, _) = legacy(&t, Some(&m.token)).await;
    assert!(tied(&tools(&legacy_plain).await).is_empty());
    let legacy_apps = apps_legacy(&t, &m.token).await;
    let mut got = tied(&tools(&legacy_apps).await);
    got.sort();
    assert_eq!(got, expected);
}

/// The view's text and `_meta` as `resources/read` answers them.
async fn read_view(client: &rmcp::service::Peer<RoleClient>) -> (String, Value) {
    let result = client
        .read_resource(ReadResourceRequestParams::new(VIEW))
        .await
        .expect("resources/read");
    assert_eq!(result.contents.len(), 1);
    match &result.contents[0] {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta,
        } => {
            assert_eq!(uri, VIEW);
            assert_eq!(mime_type.as_deref(), Some(MIME));
            (text.clone(), serde_json::to_value(meta).unwrap())
        }
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn the_view_is_a_resource_for_every_client_within_its_budget() {
    let t = server(TodoApp::default()).await;
    let m = t.mint("alice", None).await;
    // A client without the extension lists it and reads it anyway: it is a resource.
    let plain = stateless(&t, Some(&m.token)).await;
    let listed = plain
        .peer()
        .list_all_resources()
        .await
        .expect("resources/list");
    let view = listed
        .iter()
        .find(|r| r.uri == VIEW)
        .expect("the view is listed");
    assert_eq!(view.mime_type.as_deref(), Some(MIME));
    let meta = serde_json::to_value(&view.meta).unwrap();
    assert_eq!(meta["ui"]["csp"], json!({}), "no external origin");
    let (text, meta) = read_view(plain.peer()).await;
    assert_eq!(meta["ui"]["csp"], json!({}));
    println!("the view: {} bytes", text.len());
    assert!(text.len() <= VIEW_BUDGET_BYTES, "{} bytes", text.len());
    assert!(text.starts_with("<!DOCTYPE html>"));
    // The console of the reader's session, where the human decides.
    let console = format!("{}/agent/console#{}", t.base, m.session_id);
    assert!(
        text.contains(&format!(r#""console":"{console}""#)),
        "{console}"
    );
    // Its calls take a third of the token's rate limit (100,000 a minute here).
    assert!(text.contains(r#""callsPerMinute":33333"#));
    // Nothing loaded from elsewhere; text written as text.
    for external in [
        "src=\"http",
        "href=\"http",
        "@import",
        "url(",
        ".innerHTML",
        "insertAdjacentHTML",
        "eval(",
    ] {
        assert!(!text.contains(external), "{external}");
    }

    // A legacy session that has not connected reads it too, without a session block.
    let (unbound, _) = legacy(&t, None).await;
    let (text, _) = read_view(unbound.peer()).await;
    assert!(text.contains(r#""console":null"#));
    // It does not change: a subscription to it is refused, saying so (the legacy generation's
    // subscription; a 2026-07-28 `subscriptions/listen` filter leaves unknown URIs out).
    #[allow(deprecated)]
    let refused = unbound
        .peer()
        .subscribe(rmcp::model::SubscribeRequestParams::new(VIEW))
        .await
        .expect_err("nothing to subscribe to");
    assert!(refused.to_string().contains("does not change"), "{refused}");

    // A token revoked: its requests are refused before any read (a view already shown says so
    // at its next call and stops: `console_browser/app_view.rs`).
    let revoked = t.mint("alice", None).await;
    let client = legacy(&t, Some(&revoked.token)).await.0;
    let r = t
        .post_json(
            "/agent/revoke",
            Some("alice"),
            None,
            &json!({"tid": revoked.tid}),
        )
        .await;
    assert_eq!(r.status, 200);
    let refused = client
        .peer()
        .read_resource(ReadResourceRequestParams::new(VIEW))
        .await
        .expect_err("a revoked token reads nothing");
    assert!(refused.to_string().contains("revoked"), "{refused}");
}

#[tokio::test]
async fn the_view_only_calls_tools_that_read() {
    let t = server(TodoApp::default()).await;
    let m = t.mint("alice", None).await;
    let client = apps_stateless(&t, &m.token).await;
    let (text, _) = read_view(client.peer()).await;
    let listed = tools(&client).await;
    // Every tool the script names (`tool('<name>'`) is listed and only reads.
    let called: Vec<&str> = text
        .split("tool('")
        .skip(1)
        .filter_map(|rest| rest.split('\'').next())
        .collect();
    assert!(
        called.contains(&"observe") && called.contains(&"wait_for_change"),
        "{called:?}"
    );
    for name in called {
        let tool = listed
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(read_only, Some(true), "{name} does not only read");
    }
    // The decisions open the console (`ui/open-link`), never a tool.
    assert!(text.contains("'ui/open-link'"));
    for deciding in [
        "withdraw_proposal",
        "send_message",
        "do_",
        "/confirms/",
        "/undo",
    ] {
        assert!(!text.contains(deciding), "{deciding}");
    }
}

/// The deciding tools an app-only surface could offer: none is declared, so an agent token
/// calling one, from the view's host or anywhere, decides nothing.
const DECIDING: &[&str] = &[
    "approve_proposal",
    "reject_proposal",
    "decide_proposal",
    "undo_commit",
    "cancel_work_as_human",
];

#[tokio::test]
async fn no_app_only_tool_exists_whether_the_app_opted_in_to_client_confirmation_or_not() {
    for confirm_in_client in [false, true] {
        let t = server_of(TodoApp::default())
            .options(|o| o.mcp.confirm_in_client = confirm_in_client)
            .start()
            .await;
        let m = t.mint("alice", None).await;
        let client = apps_stateless(&t, &m.token).await;
        let listed = tools(&client).await;
        for tool in &listed {
            let ui = tool.meta.as_ref().and_then(|m| m.0.get("ui"));
            assert!(
                ui.is_none_or(|ui| ui.get("visibility").is_none()),
                "{}: {ui:?}",
                tool.name
            );
        }
        for name in DECIDING {
            assert!(listed.iter().all(|t| t.name != *name), "{name} is listed");
            let refused = client
                .peer()
                .call_tool(rmcp::model::CallToolRequestParams::new(*name))
                .await
                .expect_err("an undeclared tool is refused");
            let text = refused.to_string();
            assert!(
                text.contains(name) || text.to_lowercase().contains("tool"),
                "{name}: {text}"
            );
        }
        // Nothing was decided or dispatched: the log holds no commit.
        let (_, log) =
            agent_tests::process::lap(&t.base, &m.token, "/recent-actions", json!({})).await;
        let kinds: Vec<&str> = log["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .collect();
        assert!(
            kinds.iter().all(
                |k| !["dispatched", "confirmed", "rejected", "undone", "cancelled"].contains(k)
            ),
            "{kinds:?}"
        );
    }
}
