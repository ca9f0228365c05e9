//! `agt_` tokens minted with scopes (`docs/lap.md` §4.1, `docs/authorization.md` §Scopes): a
//! read-only token lists only the tools that read, on both protocol generations, and is refused
//! what acts on LAP and MCP alike; the console's agent list says what each token may do.

use agent_examples::todo::TodoApp;
use agent_tests::mcp::{call, ok, text};
use serde_json::json;

use super::actions::{action_names, legacy, server, stateless, tools};

/// The tools the operation table marks `app:act` (and so the ones a reader does not list).
const ACTS: &[&str] = &[
    "send_message",
    "narrate",
    "withdraw_proposal",
    "cancel_work",
];

#[tokio::test]
async fn a_read_only_token_lists_and_runs_only_what_reads() {
    let t = server(TodoApp::default()).await;
    let minted = t
        .post_json(
            "/agent/mint",
            Some("alice"),
            None,
            &json!({"scope": "app:read", "label": "reader"}),
        )
        .await;
    assert_eq!(minted.status, 200, "{:?}", minted.body);
    assert_eq!(minted.body["scope"], "app:read");
    let reader = minted.body["token"].as_str().unwrap().to_owned();
    let everything = t.mint("alice", None).await;

    for client in [
        stateless(&t, Some(&reader)).await,
        legacy(&t, Some(&reader)).await.0,
    ] {
        let listed = tools(&client).await;
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
        for acting in ACTS {
            assert!(!names.contains(acting), "{acting} listed for a reader");
        }
        assert!(action_names(&listed).is_empty(), "action tools listed");
        for reading in ["observe", "get_state", "list_actions", "connect_session"] {
            assert!(names.contains(&reading), "{reading} not listed: {names:?}");
        }
        // Observing works; acting is refused by the gate, whatever the list said.
        ok(&call(client.peer(), "observe", json!({})).await);
        let refused = call(
            client.peer(),
            "send_message",
            json!({"msg": {"type": "add", "text": "no"}}),
        )
        .await;
        assert_eq!(refused.is_error, Some(true));
        assert!(
            text(&refused).contains("insufficient_scope"),
            "{}",
            text(&refused)
        );
        let _ = client.cancel().await;
    }

    // A token with every scope still lists everything.
    let full = stateless(&t, Some(&everything.token)).await;
    let listed = tools(&full).await;
    assert!(listed.iter().any(|t| t.name == "send_message"));
    assert!(!action_names(&listed).is_empty());

    // LAP: the reader observes, and is refused a message.
    let observed = t
        .post_json("/agent/lap/v1/observe", None, Some(&reader), &json!({}))
        .await;
    assert_eq!(observed.status, 200, "{:?}", observed.body);
    let sent = t
        .post_json(
            "/agent/lap/v1/message",
            None,
            Some(&reader),
            &json!({"msg": {"type": "add", "text": "no"}}),
        )
        .await;
    assert_eq!(sent.status, 403, "{:?}", sent.body);
    assert!(
        sent.body.to_string().contains("insufficient_scope"),
        "{:?}",
        sent.body
    );
}

#[tokio::test]
async fn a_mint_scope_is_checked_and_normalized() {
    let t = server(TodoApp::default()).await;
    for (scope, expected) in [
        (json!("app:act"), json!("app:read app:act")),
        (json!("app:act app:read app:act"), json!("app:read app:act")),
    ] {
        let a = t
            .post_json("/agent/mint", Some("alice"), None, &json!({"scope": scope}))
            .await;
        assert_eq!(a.status, 200, "{:?}", a.body);
        assert_eq!(a.body["scope"], expected);
    }
    let unlimited = t
        .post_json("/agent/mint", Some("alice"), None, &json!({"scope": null}))
        .await;
    assert_eq!(unlimited.status, 200);
    assert!(
        unlimited.body.get("scope").is_none(),
        "{:?}",
        unlimited.body
    );
    for bad in [json!("app:write"), json!(""), json!(["app:read"]), json!(7)] {
        let a = t
            .post_json("/agent/mint", Some("alice"), None, &json!({"scope": bad}))
            .await;
        assert_eq!(a.status, 400, "{bad}: {:?}", a.body);
        let detail = a.body["error"]["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with("scope must be"), "{bad}: {detail}");
    }
    // The owner's agent list says what each token may do.
    let session = t.mint("alice", None).await.session_id;
    let scoped = t
        .post_json(
            "/agent/mint",
            Some("alice"),
            None,
            &json!({"session": session, "scope": "app:read"}),
        )
        .await;
    assert_eq!(scoped.status, 200);
    // Listed once active: its first call activates it.
    let reader = scoped.body["token"].as_str().unwrap();
    let observed = t
        .post_json("/agent/lap/v1/observe", None, Some(reader), &json!({}))
        .await;
    assert_eq!(observed.status, 200, "{:?}", observed.body);
    let listed = t.get("/agent/sessions", Some("alice")).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    let rows = listed.body.to_string();
    assert!(rows.contains(r#""scope":"app:read""#), "{rows}");
}
