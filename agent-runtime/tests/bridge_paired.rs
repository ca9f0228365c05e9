//! The `agent-bridge` binary against a paired session: the counter runs in this process behind
//! the Rust pairing client (the app side), the server relays, and rmcp's client drives the
//! bridge over stdio. The same tools answer as for a hosted session: observe, a dispatch, a
//! human-only refusal, a confirmation approved in the app, `wait_for_change` woken by the app.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::{call, ok};
use agent_tests::{TestServer, USER_HEADER};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt as _;
use serde_json::json;
use tea_agent_runtime::pairing::client::{mint, PairingClient, PairingStatus};
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::Host;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_drives_a_paired_app() {
    let t = TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .options(|o| {
            o.pairing.native_apps = true;
            o.pairing.mint_paired = true;
        })
        .start()
        .await;
    let minted = mint(&t.base, &[(USER_HEADER.to_string(), "alice".to_string())])
        .await
        .expect("mint");

    // The app: a counter session in this process, paired with the server.
    let app_host = Host::new(Counter).unwrap();
    let app = app_host.create_session(None).unwrap();
    let pairing = PairingClient::new(&app_host, app.clone(), minted.config(&t.base)).spawn();
    let status = pairing
        .wait_for(Duration::from_secs(10), |s| *s == PairingStatus::Paired)
        .await;
    assert_eq!(status, PairingStatus::Paired);

    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-bridge"));
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn agent-bridge");
    let bridge = ().serve(transport).await.expect("initialize");
    let peer = bridge.peer().clone();
    let connected = ok(&call(
        &peer,
        "connect_session",
        json!({"url": minted.lap_url, "token": minted.token}),
    )
    .await);
    assert_eq!(connected["status"], "connected", "{connected}");
    assert_eq!(connected["description"]["name"], "counter", "{connected}");

    let observed = ok(&call(&peer, "observe", json!({})).await);
    assert_eq!(observed["state"]["count"], 0, "{observed}");
    let sent = ok(&call(&peer, "send_message", json!({"msg": {"type": "inc"}})).await);
    assert_eq!(sent["status"], "dispatched", "{sent}");
    assert_eq!(app.published().state()["count"], 1);
    let refused = ok(&call(&peer, "send_message", json!({"msg": {"type": "signOut"}})).await);
    assert_eq!(refused["reason"], "human-only", "{refused}");

    // A confirmation decided in the app while the agent waits.
    let waiting = {
        let peer = peer.clone();
        tokio::spawn(async move {
            let msg = json!({"msg": {"type": "delete", "id": "7"}, "timeoutMs": 10000});
            call(&peer, "send_message", msg).await
        })
    };
    let entry = loop {
        if let Some(p) = app.pending().into_iter().next() {
            break p;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    app.approve(&entry.id, None).await.unwrap();
    let confirmed = ok(&waiting.await.unwrap());
    assert_eq!(confirmed["status"], "confirmed", "{confirmed}");
    assert_eq!(confirmed["stateAfter"]["lastDelete"], "7");

    // wait_for_change woken by a change the app makes itself.
    let waiting = {
        let peer = peer.clone();
        tokio::spawn(
            async move { call(&peer, "wait_for_change", json!({"timeoutMs": 10000})).await },
        )
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.dispatch_as_human(&json!({"type": "inc"}), DispatchOptions::default())
        .await
        .unwrap();
    let changed = ok(&waiting.await.unwrap());
    assert_eq!(changed["status"], "changed", "{changed}");
    assert_eq!(changed["stateAfter"]["count"], 2);

    let _ = bridge.cancel().await;
    pairing.stop().await;
}
