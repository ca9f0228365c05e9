//! The README's own app (`examples/notes`, no `bindings()` written) driven over `/agent/mcp`
//! by rmcp's client with its bearer, as a newcomer's agent would: its actions are `do_*`
//! tools; it adds, is refused on `@validates`, `@humanOnly` and a closed `@routeGated` gate
//! (with the gate's reason), has a delete approved by the human, and never sees the `@redact`
//! field.

use agent_tests::mcp::{call, ok};
use agent_tests::TestServer;
use notes_app::Notes;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Value};

const SECRET: &str = "s3cret-sync-key";

#[tokio::test]
async fn the_readme_app_works_for_its_agent_on_the_first_try() {
    let t = TestServer::builder(Notes)
        .rate_limit("100000/minute")
        .start()
        .await;
    let m = t.mint("ann", None).await;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", t.base))
        .auth_header(m.token.clone());
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize");
    let peer = client.peer().clone();

    // Every variant an agent may send is a tool; the `@humanOnly` one is not.
    let tool_names = || async {
        let tools = peer.list_all_tools().await.expect("tools/list");
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    };
    let names = tool_names().await;
    for tool in ["do_add", "do_delete", "do_clearAll"] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    assert!(!names.iter().any(|n| n == "do_setSyncKey"), "{names:?}");

    // A closed gate is a door: refused, with the gate's reason, nothing proposed.
    let refused = ok(&call(&peer, "send_message", json!({"msg": {"type": "clearAll"}})).await);
    assert_eq!(refused["status"], "rejected", "{refused}");
    assert_eq!(refused["reason"], "unavailable", "{refused}");
    let detail = refused["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("there are no notes to clear"), "{detail}");
    assert!(t.pending("ann", &m).await.is_empty());
    // Its tool is listed all the same (the list does not move with the state), and says so
    // when called: a tool error with the reason.
    let closed = call(&peer, "do_clearAll", json!({})).await;
    assert_eq!(closed.is_error, Some(true), "{closed:?}");
    let closed = closed.structured_content.expect("structured content");
    assert_eq!(closed["reason"], "unavailable", "{closed}");
    let detail = closed["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("there are no notes to clear"), "{detail}");
    assert_eq!(
        closed["availableNow"],
        json!(["do_add", "do_delete"]),
        "{closed}"
    );
    assert!(t.pending("ann", &m).await.is_empty());

    let added = ok(&call(&peer, "do_add", json!({"text": "buy milk"})).await);
    assert_eq!(added["status"], "dispatched", "{added}");
    assert_eq!(
        tool_names().await,
        names,
        "the tool list does not move with the state"
    );
    let empty = ok(&call(&peer, "do_add", json!({"text": ""})).await);
    assert_eq!(empty["status"], "rejected", "{empty}");
    assert_eq!(empty["reason"], "invalid", "{empty}");
    let key = json!({"msg": {"type": "setSyncKey", "key": "mine"}});
    let human_only = ok(&call(&peer, "send_message", key).await);
    assert_eq!(human_only["reason"], "human-only", "{human_only}");

    // The human sets the key the agent must never see.
    let set = t
        .human_dispatch("ann", &m, json!({"type": "setSyncKey", "key": SECRET}))
        .await;
    assert_eq!(set.status, 200, "{}", set.body);

    // A delete waits for the human, who approves it.
    let waiting = tokio::spawn({
        let peer = peer.clone();
        async move { call(&peer, "do_delete", json!({"id": 1})).await }
    });
    let id = t.next_confirm_id("ann", &m).await;
    let approve = json!({"decision": "approve"});
    assert_eq!(t.decide("ann", &m, &id, approve).await.0, 200);
    let answer = ok(&waiting.await.expect("join"));
    let confirmed = if answer["status"] == "pending-confirmation" {
        let poll = json!({"confirmId": answer["confirmId"], "timeoutMs": 5000});
        ok(&call(&peer, "get_confirm_result", poll).await)
    } else {
        answer
    };
    assert_eq!(confirmed["status"], "confirmed", "{confirmed}");
    assert_eq!(confirmed["stateAfter"]["notes"], json!([]), "{confirmed}");

    // Nothing the agent can read carries the key, nor its field.
    let mut seen: Vec<Value> = Vec::new();
    for (tool, args) in [
        ("observe", json!({})),
        ("get_state", json!({})),
        ("describe_app", json!({})),
        ("describe_recent_actions", json!({})),
        (
            "would_dispatch",
            json!({"msg": {"type": "add", "text": "x"}}),
        ),
    ] {
        seen.push(ok(&call(&peer, tool, args).await));
    }
    for read in &seen {
        let text = read.to_string();
        assert!(!text.contains(SECRET), "{text}");
        assert!(!text.contains("sync_key"), "{text}");
    }
    let _ = client.cancel().await;
}
