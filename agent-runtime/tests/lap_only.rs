//! The runtime without its default features (`cargo test -p tea-agent-runtime
//! --no-default-features`): an app that embeds only LAP gets every LAP operation, its
//! OpenAPI document and the human routes, and no `/agent/mcp` or `/agent/console`.
//! With the default features on, this file is empty.
#![cfg(not(any(feature = "mcp", feature = "console")))]

use agent_examples::counter::Counter;
use agent_tests::start_app;
use serde_json::json;

#[tokio::test]
async fn lap_is_served_without_mcp_or_console() {
    let t = start_app(Counter).await;
    let m = t.mint("alice", None).await;
    let observe = t.lap(&m.token, "/observe", &json!({})).await;
    assert_eq!(observe.status, 200, "{:?}", observe.body);
    assert!(observe.body["actions"].is_array());
    let sent = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await;
    assert_eq!(sent.body["status"], "dispatched", "{:?}", sent.body);
    let doc = t.get("/agent/lap/v1/openapi.json", None).await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    assert_eq!(
        t.get("/agent/human/sessions", Some("alice")).await.status,
        200
    );
    // Not compiled in: the routes fall through to the app (404 here).
    assert_eq!(t.get("/agent/console", Some("alice")).await.status, 404);
    let mcp = t.post_json("/agent/mcp", None, None, &json!({})).await;
    assert_eq!(mcp.status, 404);
}
