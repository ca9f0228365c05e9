//! The human's undo reaches an MCP agent like any commit (`docs/semantics.md` §12, step 7):
//! an agent subscribed to the session's state resource hears `notifications/resources/updated`
//! after the human undoes its commit (through the human route), and reads the reverted state.

use std::time::Duration;

use agent_examples::todo::TodoApp;
use agent_tests::mcp::{call, ok};
use rmcp::model::SubscribeRequestParams;
use serde_json::json;
use tea_agent_runtime::store::Stores;

use super::actions::{heard, legacy, read, server_of};

#[tokio::test]
#[allow(deprecated)] // resources/subscribe is the legacy revisions' subscription
async fn a_subscribed_agent_hears_the_humans_undo_and_reads_the_reverted_state() {
    let stores = Stores::open("memory").await.expect("stores");
    let t = server_of(TodoApp::default()).stores(&stores).start().await;
    let m = t.mint("alice", None).await;
    let (client, mut rx) = legacy(&t, Some(&m.token)).await;
    client
        .peer()
        .subscribe(SubscribeRequestParams::new("agent://state"))
        .await
        .expect("resources/subscribe");
    let first = read(&client, "agent://state").await;
    assert_eq!(first["state"]["todos"][0]["done"], json!(false), "{first}");
    let id = first["state"]["todos"][0]["id"]
        .as_str()
        .expect("a todo")
        .to_string();

    let done = ok(&call(client.peer(), "do_toggle", json!({"id": id})).await);
    assert_eq!(done["status"], "dispatched", "{done}");
    heard(&mut rx, &["agent://state"]).await;
    let log = t
        .lap(
            &m.token,
            "/recent-actions",
            &json!({"n": 1, "kind": "dispatched"}),
        )
        .await;
    let toggle = log.body["entries"][0]["seq"]
        .as_u64()
        .expect("the entry names its commit");
    // The toggle's own updates (its save effect's commits too) are heard before the undo, so
    // the one heard after it is the undo's.
    tokio::time::sleep(Duration::from_millis(500)).await;
    while rx.try_recv().is_ok() {}
    let toggled = read(&client, "agent://state").await;
    assert_eq!(
        toggled["state"]["todos"][0]["done"],
        json!(true),
        "{toggled}"
    );

    let path = format!("/agent/human/sessions/{}/undo", m.session_id);
    let undone = t
        .post_json(&path, Some("alice"), None, &json!({"seq": toggle}))
        .await;
    assert_eq!(undone.status, 200, "{}", undone.body);
    let undo_seq = undone.body["seq"].as_u64().expect("the undo's commit");
    assert_eq!(undone.body["undid"], json!([toggle]));

    heard(&mut rx, &["agent://state"]).await;
    let after = read(&client, "agent://state").await;
    assert_eq!(after["state"]["todos"][0]["done"], json!(false), "{after}");
    assert_eq!(after["seq"], json!(undo_seq), "{after}");
}
