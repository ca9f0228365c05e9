//! A paired token outlives its server on a durable store: after the server is gone and a new
//! one opens the same SQLite file, the app pairs again with the same token and the agent's
//! calls reach it (the token record says the session is paired; nothing else is needed).

use agent_examples::counter::Counter;
use agent_tests::paired::{assert_paused, call, mint};
use agent_tests::tab::Tab;
use agent_tests::temp::TempDir;
use agent_tests::TestServer;
use serde_json::json;
use tea_agent_runtime::store::Stores;

async fn server_on(stores: &Stores) -> TestServer<Counter> {
    TestServer::builder(Counter)
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .stores(stores)
        .start()
        .await
}

#[tokio::test]
async fn a_paired_token_pairs_again_after_a_restart_on_the_same_store() {
    let dir = TempDir::new("pairing");
    let path = dir.file("p.db");

    let first = server_on(&Stores::open(&path).await.unwrap()).await;
    let m = mint(&first).await;
    assert!(m.session_id.starts_with("paired-"), "{}", m.session_id);
    drop(first);

    // Another server on the same file: the token is known and still paired.
    let second = server_on(&Stores::open(&path).await.unwrap()).await;
    let unpaired = second.lap(&m.token, "/state", &json!({})).await;
    assert_paused(&unpaired, "pending");
    let mut tab = Tab::pair(&second.base, &m.token).await;
    let pending = call(&second, &m.token, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.reply(&id, json!({"state": {"count": 7}})).await;
    let answer = pending.await.unwrap();
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["state"]["count"], 7);
}
