//! The human console in a real browser: headless Chromium driven over WebDriver
//! ([`agent_tests::chromium`]).
//!
//! Every test is `#[ignore]`d so `cargo test --workspace` passes on a machine without a browser;
//! `.ci/test` installs Debian's `chromium` and `chromium-driver` and runs them with
//! `cargo test --workspace --test console_browser -- --ignored`. One test binary; the undo,
//! transcript-export, OAuth consent, cross-origin minting, running-work and owner's-own-data scenarios are modules
//! of their own.

mod app_view;
#[cfg(feature = "full")]
mod consent;
mod cross_origin;
mod owner_view;
mod transcript;
mod undo;
mod work;

use agent_examples::counter::Counter;
use agent_tests::chromium::{click, text, wait_for, wait_text, with_browser, WAIT};
use agent_tests::process::lap;
use agent_tests::TestServer;
use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use tea_agent_runtime::app::App;

async fn anonymous_counter() -> TestServer<Counter> {
    TestServer::builder(Counter).anonymous().start().await
}

/// Opens the console, starts a session and mints a token for it in the connect panel.
/// Returns the token and the session id shown by the page.
async fn open_and_mint<A: App>(c: &Client, t: &TestServer<A>) -> (String, String) {
    c.goto(&format!("{}/agent/console", t.base))
        .await
        .expect("open the console");
    wait_text(c, "[data-testid=sessions-empty]", |s| !s.is_empty()).await;
    click(c, "[data-testid=new-session]").await;
    let first = wait_text(c, "[data-testid=snippet-token]", |s| s.starts_with("agt_")).await;
    let session_id = wait_text(c, "[data-testid=detail-session-id]", |s| s.len() == 36).await;
    wait_text(c, "[data-testid=conn-status]", |s| s == "live").await;

    click(c, "[data-testid=mint]").await;
    let token = wait_text(c, "[data-testid=snippet-token]", |s| {
        s.starts_with("agt_") && s != first
    })
    .await;
    (token, session_id)
}

/// The agent of `token` toggles todo `id` through LAP: its `/message` answer (a 200).
async fn agent_toggles(base: &str, token: &str, id: &Value) -> Value {
    let msg = json!({"msg": {"type": "toggle", "id": id}});
    let (status, sent) = lap(base, token, "/message", msg).await;
    assert_eq!(status, 200, "{sent}");
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn mint_approve_and_narrate_in_the_browser() {
    let t = anonymous_counter().await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, session_id) = open_and_mint(&c, &t).await;

        // The connect snippet: token, LAP URL, MCP URL and both connect_session calls.
        let lap_url = format!("{base}/agent/lap/v1");
        assert_eq!(
            text(&c, "[data-testid=snippet-lap-url]").await.unwrap(),
            lap_url
        );
        assert_eq!(
            text(&c, "[data-testid=snippet-mcp-url]").await.unwrap(),
            format!("{base}/agent/mcp")
        );
        assert_eq!(
            text(&c, "[data-testid=snippet-mcp-call]").await.unwrap(),
            format!(r#"connect_session {{"token":"{token}"}}"#)
        );
        let header = text(&c, "[data-testid=snippet-mcp-header]").await.unwrap();
        assert!(
            header.starts_with("claude mcp add --transport http ")
                && header.ends_with(&format!(
                    r#" {base}/agent/mcp --header "Authorization: Bearer {token}""#
                )),
            "{header}"
        );
        assert_eq!(
            text(&c, "[data-testid=snippet-bridge-call]").await.unwrap(),
            format!(r#"connect_session {{"url":"{lap_url}","token":"{token}"}}"#)
        );
        let config: Value = serde_json::from_str(
            &text(&c, "[data-testid=snippet-bridge-config]")
                .await
                .unwrap(),
        )
        .expect("the bridge config is JSON");
        let servers = config["mcpServers"].as_object().expect("mcpServers");
        assert_eq!(servers.len(), 1);
        assert_eq!(
            servers.values().next().unwrap(),
            &json!({"command": "agent-bridge"})
        );
        // Both tokens of the session are listed with a Revoke button.
        wait_for("two agent tokens", || async {
            let rows = c.find_all(Locator::Css("[data-testid=agent]")).await.ok()?;
            (rows.len() == 2).then_some(())
        })
        .await;

        // The agent proposes a delete and waits for the human.
        let agent = tokio::spawn({
            let (base, token) = (base.clone(), token.clone());
            async move {
                lap(
                    &base,
                    &token,
                    "/message",
                    json!({"msg": {"type": "delete", "id": "42"}, "waitFor": "idle",
                           "timeoutMs": 60000, "reason": "the user asked to clean up"}),
                )
                .await
            }
        });
        let card = "[data-testid=confirm][data-variant=delete]";
        let card_text = wait_text(&c, card, |s| s.contains("delete a row")).await;
        assert!(
            card_text.contains("the user asked to clean up"),
            "{card_text}"
        );
        let payload = c
            .find(Locator::Css(&format!(
                "{card} [data-testid=confirm-payload]"
            )))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<Value>(&payload).unwrap(),
            json!({"id": "42"})
        );
        assert_eq!(
            text(&c, "[data-testid=pending-count]").await.as_deref(),
            Some("1")
        );
        assert!(!agent.is_finished(), "the agent waits for the human");

        click(&c, &format!("{card} [data-testid=confirm-approve]")).await;
        let (status, answer) = tokio::time::timeout(WAIT, agent)
            .await
            .expect("the agent's call returns after the approval")
            .unwrap();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["status"], "confirmed", "{answer}");
        assert_eq!(answer["stateAfter"]["lastDelete"], "42", "{answer}");
        assert!(answer.get("msg").is_none(), "not edited: {answer}");

        // The page shows the new state with the change highlighted, and no pending entry.
        let cell = r#"[data-testid=state] [data-path="/lastDelete"]"#;
        wait_text(&c, cell, |s| s == "\"42\"").await;
        let class = wait_for("the class of the changed cell", || async {
            c.find(Locator::Css(cell))
                .await
                .ok()?
                .attr("class")
                .await
                .ok()
        })
        .await
        .unwrap_or_default();
        assert!(class.split(' ').any(|k| k == "chg"), "highlighted: {class}");
        let state = text(&c, "[data-testid=state]").await.unwrap();
        assert!(state.contains(r#""lastDelete": "42""#), "{state}");
        wait_text(&c, "[data-testid=pending-count]", |s| s == "0").await;
        assert!(c.find(Locator::Css(card)).await.is_err());
        wait_text(&c, "[data-testid=log-entry][data-kind=confirmed]", |s| {
            s.contains("delete a row")
        })
        .await;

        // The agent narrates; the log shows it, newest first.
        let (status, _) = lap(
            &base,
            &token,
            "/narrate",
            json!({"text": "Row 42 is gone, as you approved."}),
        )
        .await;
        assert_eq!(status, 200);
        wait_text(&c, "[data-testid=log-entry][data-kind=narrate]", |s| {
            s.contains("Row 42 is gone, as you approved.")
        })
        .await;
        let first = c
            .find(Locator::Css("[data-testid=log] > li:first-child"))
            .await
            .unwrap();
        assert_eq!(
            first.attr("data-kind").await.unwrap().as_deref(),
            Some("narrate")
        );

        // The server agrees with what the page shows.
        let session = t.server.host().session(&session_id).expect("session");
        assert_eq!(session.state()["lastDelete"], "42");
    })
    .await;
}

/// An agent withdraws its proposal (`docs/lap.md` §5.8): the card leaves the console at once,
/// and the proposal that stays is still there to decide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn a_withdrawn_proposal_leaves_the_console() {
    let t = anonymous_counter().await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, _) = open_and_mint(&c, &t).await;
        let mut ids = Vec::new();
        for id in ["41", "42"] {
            let (status, answer) = lap(
                &base,
                &token,
                "/message",
                json!({"msg": {"type": "delete", "id": id}, "timeoutMs": 10}),
            )
            .await;
            assert_eq!(status, 200, "{answer}");
            assert_eq!(answer["status"], "pending-confirmation", "{answer}");
            ids.push(answer["confirmId"].as_str().unwrap().to_string());
        }
        let card = |id: &str| format!("[data-testid=confirm][data-confirm-id=\"{id}\"]");
        wait_for("two cards", || async {
            let cards = c
                .find_all(Locator::Css("[data-testid=confirm]"))
                .await
                .ok()?;
            (cards.len() == 2).then_some(())
        })
        .await;
        wait_text(&c, "[data-testid=pending-count]", |s| s == "2").await;

        let (status, answer) = lap(&base, &token, "/withdraw", json!({"confirmId": ids[0]})).await;
        assert_eq!((status, answer), (200, json!({"status": "withdrawn"})));
        wait_for("the withdrawn card to go", || async {
            c.find(Locator::Css(&card(&ids[0])))
                .await
                .is_err()
                .then_some(())
        })
        .await;
        wait_text(&c, "[data-testid=pending-count]", |s| s == "1").await;
        assert!(c.find(Locator::Css(&card(&ids[1]))).await.is_ok());
        // After a reload too (the page reads the pending list again).
        c.refresh().await.expect("reload");
        wait_text(&c, "[data-testid=pending-count]", |s| s == "1").await;
        assert!(c.find(Locator::Css(&card(&ids[0]))).await.is_err());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn edit_reject_dispatch_and_revoke_in_the_browser() {
    let t = anonymous_counter().await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, _) = open_and_mint(&c, &t).await;
        let card = "[data-testid=confirm][data-variant=delete]";
        let propose = |id: &'static str| {
            let (base, token) = (base.clone(), token.clone());
            tokio::spawn(async move {
                lap(
                    &base,
                    &token,
                    "/message",
                    json!({"msg": {"type": "delete", "id": id}, "waitFor": "idle", "timeoutMs": 60000}),
                )
                .await
            })
        };

        // Approve after editing the payload: the agent learns what ran.
        let agent = propose("7");
        wait_text(&c, card, |s| s.contains("delete a row")).await;
        let area = c
            .find(Locator::Css(&format!("{card} [data-testid=confirm-payload]")))
            .await
            .unwrap();
        area.clear().await.unwrap();
        area.send_keys(r#"{"id": "8"}"#).await.unwrap();
        click(&c, &format!("{card} [data-testid=confirm-approve]")).await;
        let (_, answer) = tokio::time::timeout(WAIT, agent).await.unwrap().unwrap();
        assert_eq!(answer["status"], "confirmed", "{answer}");
        assert_eq!(answer["msg"], json!({"type": "delete", "id": "8"}));
        wait_text(&c, r#"[data-testid=state] [data-path="/lastDelete"]"#, |s| {
            s == "\"8\""
        })
        .await;

        // An edit that does not validate is refused and the entry stays pending.
        let agent = propose("9");
        wait_text(&c, card, |s| s.contains("delete a row")).await;
        let area = c
            .find(Locator::Css(&format!("{card} [data-testid=confirm-payload]")))
            .await
            .unwrap();
        area.clear().await.unwrap();
        area.send_keys("{}").await.unwrap();
        click(&c, &format!("{card} [data-testid=confirm-approve]")).await;
        let error = wait_text(&c, &format!("{card} [data-testid=confirm-error]"), |s| {
            !s.is_empty()
        })
        .await;
        assert!(error.contains("400"), "{error}");
        assert!(error.contains("id"), "{error}");

        // Reject: the agent's call answers user-cancelled.
        click(&c, &format!("{card} [data-testid=confirm-reject]")).await;
        let (_, answer) = tokio::time::timeout(WAIT, agent).await.unwrap().unwrap();
        assert_eq!(
            answer,
            json!({"status": "rejected", "reason": "user-cancelled"})
        );
        wait_text(&c, "[data-testid=pending-count]", |s| s == "0").await;
        wait_text(&c, "[data-testid=log-entry][data-kind=rejected]", |s| {
            s.contains("user-cancelled")
        })
        .await;

        // Agent text is shown as text, never as markup.
        let markup = r#"<img src="x" id="injected"> <b>bold</b>"#;
        lap(&base, &token, "/narrate", json!({"text": markup})).await;
        wait_text(&c, "[data-testid=log-entry][data-kind=narrate]", |s| {
            s.contains(markup)
        })
        .await;
        assert!(c.find(Locator::Css("#injected")).await.is_err());
        assert!(c.find(Locator::Css("[data-testid=log] b")).await.is_err());

        // Human dispatch from the dispatch box (a @humanOnly-free message here: setCount).
        let box_ = c
            .find(Locator::Css("[data-testid=dispatch-msg]"))
            .await
            .unwrap();
        box_.clear().await.unwrap();
        box_.send_keys(r#"{"type": "setCount", "value": 5}"#)
            .await
            .unwrap();
        click(&c, "[data-testid=dispatch-send]").await;
        let result = wait_text(&c, "[data-testid=dispatch-result]", |s| {
            s.contains("dispatched")
        })
        .await;
        assert!(result.contains("/count"), "{result}");
        wait_text(&c, r#"[data-testid=state] [data-path="/count"]"#, |s| s == "5").await;

        // Revoke the agent's token (the active one; the other was never used) from the page:
        // its next call is refused.
        // The page re-renders the table on live updates, so rows are found again by tid
        // rather than held across awaits (a held element can go stale).
        let tid = wait_for("the active token row", || async {
            let rows = c.find_all(Locator::Css("[data-testid=agent]")).await.ok()?;
            for row in rows {
                if row.text().await.ok()?.contains("active") {
                    return row.attr("data-tid").await.ok()?;
                }
            }
            None
        })
        .await;
        click(
            &c,
            &format!(r#"[data-testid=agent][data-tid="{tid}"] [data-testid=revoke]"#),
        )
        .await;
        wait_for("the revoked token to leave the list", || async {
            let rows = c.find_all(Locator::Css("[data-testid=agent]")).await.ok()?;
            let mut left = true;
            for row in rows {
                if row.attr("data-tid").await.ok()?.as_deref() == Some(tid.as_str()) {
                    left = false;
                }
            }
            left.then_some(())
        })
        .await;
        let (status, body) = lap(&base, &token, "/state", json!({})).await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"]["code"], "revoked");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn a_paired_app_in_the_browser() {
    let t = anonymous_counter().await;
    let base = t.base.clone();
    with_browser(|c| async move {
        c.goto(&format!("{base}/agent/console")).await.unwrap();
        wait_text(&c, "[data-testid=sessions-empty]", |s| !s.is_empty()).await;
        // The page's identity mints a paired session; an app runtime pairs with its token and
        // answers the console's reads of its state.
        let minted = c
            .execute(
                "return fetch('/agent/mint', {method: 'POST', headers: {'content-type': \
                 'application/json'}, body: '{\"paired\": true}'}).then(r => r.json())",
                vec![],
            )
            .await
            .unwrap();
        let token = minted["token"].as_str().expect("token").to_string();
        let session_id = minted["sessionId"].as_str().unwrap().to_string();
        let mut tab = agent_tests::tab::Tab::pair(&base, &token).await;
        let app = tokio::spawn(async move {
            loop {
                let (id, _) = tab.rpc("observe").await;
                tab.reply(&id, json!({"state": {"count": 5}, "actions": []}))
                    .await;
            }
        });

        click(&c, "[data-testid=refresh-sessions]").await;
        wait_text(&c, "[data-testid=session-paired]", |s| s == "paired app").await;
        click(&c, &format!("[data-session-id=\"{session_id}\"]")).await;
        wait_text(&c, "[data-testid=conn-status]", |s| {
            s == "paired app connected"
        })
        .await;
        wait_text(&c, r#"[data-testid=state] [data-path="/count"]"#, |s| {
            s == "5"
        })
        .await;
        let note = c
            .find(Locator::Css("[data-testid=paired-note]"))
            .await
            .unwrap();
        assert!(note.is_displayed().await.unwrap());
        let dispatch = c
            .find(Locator::Css("[data-testid=dispatch-send]"))
            .await
            .unwrap();
        assert!(!dispatch.is_displayed().await.unwrap());

        // Closing it revokes the token: the session leaves the list.
        click(&c, "[data-testid=close-session]").await;
        c.accept_alert().await.unwrap();
        wait_text(&c, "[data-testid=no-selection]", |s| !s.is_empty()).await;
        app.abort();
        let (status, _) = lap(&base, &token, "/state", json!({})).await;
        assert_eq!(status, 403);
    })
    .await;
}
