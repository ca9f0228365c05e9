//! End to end: the counter hosted in a separate process by the Rust pairing client
//! (`paired-counter`), paired with a server, driven by an agent over LAP and MCP. The process
//! plays the human (approvals, its own dispatches) and is killed with SIGKILL and restarted.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::McpAgent;
use agent_tests::paired::AppProcess;
use agent_tests::{Answer, TestServer};
use serde_json::{json, Value};
use tea_agent_runtime::Host;

async fn lap(t: &TestServer<Counter>, token: &str, tail: &str, body: Value) -> Answer {
    t.lap(token, tail, &body).await
}

#[tokio::test]
async fn a_paired_app_process_is_driven_killed_and_resumed() {
    let t = TestServer::builder(Counter)
        .rate_limit("10000/minute")
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
            p.grace = std::time::Duration::from_millis(20_000);
        })
        .start()
        .await;
    let (token, mut app) = AppProcess::paired(&t, env!("CARGO_BIN_EXE_paired-counter")).await;

    // observe: the client's state and actions, the description from its hello.
    let a = lap(&t, &token, "/observe", json!({})).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["state"]["count"], 0);
    assert_eq!(a.body["description"]["name"], "counter");
    assert_eq!(
        a.body["description"]["schemaHash"],
        t.server.host().describe()["schemaHash"]
    );
    let variants: Vec<&str> = a.body["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["variant"].as_str().unwrap())
        .collect();
    assert!(variants.contains(&"inc") && !variants.contains(&"signOut"));
    app.expect("status Active").await;

    // dispatch, validation and human-only are the app's own gates.
    let a = lap(&t, &token, "/message", json!({"msg": {"type": "inc"}})).await;
    assert_eq!(a.body["status"], "dispatched", "{:?}", a.body);
    assert_eq!(
        a.body["stateDiff"],
        json!([{"op": "replace", "path": "/count", "value": 1}])
    );
    let a = lap(&t, &token, "/message", json!({"msg": {"type": "signOut"}})).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["status"], "rejected");
    assert_eq!(a.body["reason"], "human-only");
    let a = lap(
        &t,
        &token,
        "/message",
        json!({"msg": {"type": "setCount", "value": -5}}),
    )
    .await;
    assert_eq!(a.body["reason"], "invalid", "{:?}", a.body);

    // A confirmation approved in the app process.
    let pending = t.spawn_lap(
        &token,
        "/message",
        json!({"msg": {"type": "delete", "id": "7"}, "timeoutMs": 8000}),
    );
    loop {
        app.say("approve").await;
        if app.expect("approve ").await == "approve delete true" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let a = pending.await.unwrap();
    assert_eq!(a.body["status"], "confirmed", "{:?}", a.body);
    assert_eq!(a.body["stateAfter"]["lastDelete"], "7");

    // /wait woken by the app's own change.
    let waiting = t.spawn_lap(
        &token,
        "/wait",
        json!({"path": "/count", "timeoutMs": 8000}),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    app.say("inc").await;
    app.expect("inc true").await;
    let a = waiting.await.unwrap();
    assert_eq!(a.body["status"], "changed", "{:?}", a.body);
    assert_eq!(a.body["stateAfter"]["count"], 2);

    // The log the app streams back, and a narration echoed into it.
    assert_eq!(
        lap(&t, &token, "/narrate", json!({"text": "checking"}))
            .await
            .body,
        json!({"ok": true})
    );
    let entries = loop {
        let a = lap(&t, &token, "/recent-actions", json!({"n": 50})).await;
        let entries = a.body["entries"].as_array().unwrap().clone();
        if entries.iter().any(|e| e["kind"] == "narrate") {
            break entries;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(entries
        .iter()
        .any(|e| e["kind"] == "dispatched" && e["variant"] == "inc"));

    // MCP drives the same paired session.
    let agent = McpAgent::connect(&t.base, &token).await;
    let observed = agent.call("observe", json!({})).await;
    assert_eq!(observed["state"]["count"], 2);
    let sent = agent
        .call("send_message", json!({"msg": {"type": "inc"}}))
        .await;
    assert_eq!(sent["status"], "dispatched", "{sent}");
    agent.close().await;

    // Killed: the agent hears 503 paused; restarted with the token: resumes.
    app.child.start_kill().unwrap();
    app.child.wait().await.unwrap();
    let paused = loop {
        let a = lap(&t, &token, "/state", json!({})).await;
        if a.status == 503 {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(paused.body["error"]["code"], "paused");
    assert_eq!(paused.headers["x-llui-reconnect"], "pending");
    let mut app = AppProcess::start(env!("CARGO_BIN_EXE_paired-counter"), &t.base, &token);
    app.expect("status Active").await;
    let a = lap(&t, &token, "/message", json!({"msg": {"type": "inc"}})).await;
    assert_eq!(a.body["status"], "dispatched", "{:?}", a.body);
    app.say("quit").await;
    app.child.wait().await.unwrap();
}

#[tokio::test]
async fn a_client_without_a_valid_token_claims_its_session_again() {
    use agent_tests::tab::Tab;
    use agent_tests::USER_HEADER;
    use tea_agent_runtime::pairing::client::{Claim, PairingClient, PairingConfig, PairingStatus};

    let t = TestServer::builder(Counter)
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .start()
        .await;
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    let token = minted.body["token"].as_str().unwrap().to_string();
    let tid = minted.body["tid"].as_str().unwrap().to_string();
    // The app paired once, then went away (pending-resume).
    Tab::pair(&t.base, &token).await.close().await;
    tokio::time::sleep(Duration::from_millis(50)).await;

    let host = Host::new(Counter).unwrap();
    let session = host.create_session(None).unwrap();
    let mut config = PairingConfig::new(&t.base, "agt_lost-with-the-old-process");
    config.claim = Some(Claim {
        tid: tid.clone(),
        headers: vec![(USER_HEADER.to_string(), "alice".to_string())],
    });
    let client = PairingClient::new(&host, session, config).spawn();
    let status = client
        .wait_for(Duration::from_secs(10), |s| *s == PairingStatus::Paired)
        .await;
    assert_eq!(status, PairingStatus::Paired);
    // The claim rotated the bearer: the old one is gone.
    assert_eq!(lap(&t, &token, "/state", json!({})).await.status, 401);
    let record = t.server.tokens().find_by_tid(&tid).await.unwrap().unwrap();
    assert_eq!(record.status.as_str(), "awaiting-claude");
    client.stop().await;

    // Without a claim, a refused token stops the client with the reason.
    let session = host.create_session(None).unwrap();
    let client = PairingClient::new(&host, session, PairingConfig::new(&t.base, &token)).spawn();
    let status = client
        .wait_for(Duration::from_secs(10), |s| {
            matches!(s, PairingStatus::Stopped(_))
        })
        .await;
    assert_eq!(
        status,
        PairingStatus::Stopped("the server refused the token (401)".into())
    );
    client.stop().await;
}

/// Issue 37 item 3: the app sleeps past its grace window; when it comes back its bearer is
/// refused, and the client claims the session by itself (the list's offer, `pastGrace`), pairs
/// with the rotated bearer and tells its app the new one, which the agent is handed: the same
/// session goes on.
#[tokio::test]
async fn the_client_claims_its_session_back_after_a_sleep_past_the_grace() {
    use agent_tests::paired::status_of;
    use agent_tests::tab::Tab;
    use agent_tests::USER_HEADER;
    use std::sync::Arc;
    use tea_agent_runtime::clock::ManualClock;
    use tea_agent_runtime::pairing::client::{Claim, PairingClient, PairingConfig, PairingStatus};

    let clock = ManualClock::new(1_000_000);
    let server_clock = clock.clone();
    let t = TestServer::builder(Counter)
        .config(move |c| c.clock = Arc::new(server_clock))
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .start()
        .await;
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    let token = minted.body["token"].as_str().unwrap().to_string();
    let tid = minted.body["tid"].as_str().unwrap().to_string();

    let host = Host::new(Counter).unwrap();
    let session = host.create_session(None).unwrap();
    let mut config = PairingConfig::new(&t.base, &token);
    // Time to take the socket away and advance the clock before the client dials again.
    config.backoff.initial = Duration::from_secs(3);
    config.claim = Some(Claim {
        tid: tid.clone(),
        headers: vec![(USER_HEADER.to_string(), "alice".to_string())],
    });
    let client = PairingClient::new(&host, session, config).spawn();
    let paired = |s: &PairingStatus| *s == PairingStatus::Paired;
    assert_eq!(
        client.wait_for(Duration::from_secs(10), paired).await,
        PairingStatus::Paired
    );
    let a = lap(&t, &token, "/message", json!({"msg": {"type": "inc"}})).await;
    assert_eq!(a.body["status"], "dispatched", "{:?}", a.body);

    // The app's socket goes away (a stand-in socket takes it over and closes at once), and
    // the machine sleeps past the grace window before the client dials again.
    Tab::pair(&t.base, &token).await.close().await;
    for _ in 0..100 {
        if status_of(&t, &tid).await == "pending-resume" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status_of(&t, &tid).await, "pending-resume");
    clock.advance(5 * 60 * 1000);

    // The client comes back: its bearer is refused, it claims, it pairs with the new one.
    let mut tokens = client.token();
    tokio::time::timeout(Duration::from_secs(10), tokens.wait_for(|t| *t != token))
        .await
        .expect("the client claims the session")
        .expect("the client runs");
    let new = tokens.borrow().clone();
    assert_eq!(
        client.wait_for(Duration::from_secs(10), paired).await,
        PairingStatus::Paired
    );
    // The agent, handed the new bearer, finds the same session where it left it.
    let a = lap(&t, &new, "/state", json!({})).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["state"]["count"], 1, "{:?}", a.body);
    assert_eq!(lap(&t, &token, "/state", json!({})).await.status, 401);
    client.stop().await;
}

/// A server that accepts the connection and never answers the upgrade does not hold the
/// client: the attempt ends after 30 s (`docs/pairing.md` §The Rust pairing client), counts as
/// failed, and the client goes on with its backoff (here: gives up, its window being short).
#[tokio::test]
async fn an_upgrade_never_answered_ends_the_attempt() {
    use tea_agent_runtime::pairing::client::{
        Backoff, PairingClient, PairingConfig, PairingStatus,
    };

    // Accepts, reads nothing, answers nothing; the connections are held open.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let host = Host::new(Counter).unwrap();
    let session = host.create_session(None).unwrap();
    let mut config = PairingConfig::new(&base, "agt_never-answered");
    config.backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(100),
        give_up: Duration::from_secs(1),
    };
    let client = PairingClient::new(&host, session, config).spawn();
    let status = client
        .wait_for(Duration::from_secs(45), |s| {
            matches!(s, PairingStatus::Stopped(_))
        })
        .await;
    assert_eq!(
        status,
        PairingStatus::Stopped("gave up reconnecting".into())
    );
    client.stop().await;
    silent.abort();
}
