//! `examples/relay` (`cargo run --example relay`) started as its `main` starts it, driven the way
//! LLui's client speaks (`docs/pairing.md`): an empty mint gives a paired session, the app
//! pairs on `?token=`, says `hello`, answers `rpc`s and resolves a confirmation, and hears
//! `revoked`; a mint that asks for a hosted session is refused.

use std::time::Duration;

use agent_examples::relay::Relay;
use agent_examples::serve::{parse_args, start};
use agent_tests::tab::Tab;
use serde_json::{json, Value};

async fn relay() -> agent_examples::serve::RunningExample<Relay> {
    let mut opts = parse_args(
        [
            "--port",
            "0",
            "--memory",
            "--cors-origin",
            "http://localhost:5173",
        ]
        .map(String::from),
        8789,
    )
    .expect("args");
    opts.paired_only = true;
    start(Relay, &opts).await.expect("the relay starts")
}

async fn post(
    client: &reqwest::Client,
    url: String,
    token: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let resp = request.send().await.expect("post");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_llui_app_pairs_with_the_relay_and_an_agent_drives_it() {
    let r = relay().await;
    let base = r.base_url();
    assert!(r.banner().contains("agentBasePath"), "{}", r.banner());
    // The app's browser: it keeps the identity cookie the mint gives it.
    let app = agent_tests::browser();
    let agent = reqwest::Client::new();

    // A hosted session is not on offer.
    let (status, body) = post(
        &app,
        format!("{base}/agent/mint"),
        None,
        r#"{"paired": false}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["detail"]
        .as_str()
        .is_some_and(|d| d.contains("relays paired sessions only")));

    // LLui's client: an empty mint.
    let (status, minted) = post(&app, format!("{base}/agent/mint"), None, "").await;
    assert_eq!(status, 200, "{minted}");
    let token = minted["token"].as_str().expect("token").to_string();
    let tid = minted["tid"].as_str().expect("tid").to_string();
    assert!(minted["wsUrl"]
        .as_str()
        .is_some_and(|u| u.ends_with("/agent/ws")));
    assert_eq!(minted["lapUrl"], format!("{base}/agent/lap/v1"));

    // The app pairs on `?token=` and says hello.
    let mut tab = Tab::pair(&base, &token).await;

    // The agent reads: relayed as an rpc the app answers.
    let lap = |tail: &str| format!("{base}/agent/lap/v1{tail}");
    let read = tokio::spawn({
        let (agent, url, token) = (agent.clone(), lap("/state"), token.clone());
        async move { post(&agent, url, Some(&token), "{}").await }
    });
    let (id, args) = tab.rpc("get_state").await;
    assert_eq!(args, json!({}));
    tab.reply(&id, json!({"state": {"count": 3}})).await;
    assert_eq!(read.await.unwrap(), (200, json!({"state": {"count": 3}})));
    assert_eq!(tab.next().await, json!({"t": "active"}));

    // A message that needs the user's approval: proposed, then confirmed in the app.
    let sent = tokio::spawn({
        let (agent, url, token) = (agent.clone(), lap("/message"), token.clone());
        async move {
            post(
                &agent,
                url,
                Some(&token),
                r#"{"msg": {"type": "reset"}, "timeoutMs": 5000}"#,
            )
            .await
        }
    });
    let (id, _) = tab.rpc("send_message").await;
    tab.reply(
        &id,
        json!({"status": "pending-confirmation", "confirmId": "c-1"}),
    )
    .await;
    // Give the relay a moment to start waiting on the confirmation.
    tokio::time::sleep(Duration::from_millis(100)).await;
    tab.send(json!({"t": "confirm-resolved", "confirmId": "c-1", "outcome": "confirmed", "stateAfter": {"count": 0}}))
        .await;
    assert_eq!(
        sent.await.unwrap(),
        (
            200,
            json!({"status": "confirmed", "stateAfter": {"count": 0}})
        )
    );

    // The user revokes from the app: the socket hears `revoked`, the token is dead.
    let (status, body) = post(
        &app,
        format!("{base}/agent/revoke"),
        None,
        &json!({ "tid": tid }).to_string(),
    )
    .await;
    assert_eq!((status, &body), (200, &json!({"status": "revoked"})));
    let (closed, frames) = tab.closed().await;
    assert!(closed);
    assert_eq!(frames, vec![json!({"t": "revoked"})]);
    let (status, body) = post(&agent, lap("/state"), Some(&token), "{}").await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (403, json!("revoked"))
    );
}
