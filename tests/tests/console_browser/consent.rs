//! Connecting by consent in a real browser (`docs/authorization.md`): the console shows the
//! connector URL, the person approves an MCP client on the consent page with one click (a new
//! session preselected), the client's token works, the console lists the grant with its scopes,
//! and Revoke there ends it: the next MCP call answers 401.

use agent_examples::todo::TodoApp;
use agent_tests::chromium::{
    approve_consent, click, landing_page, text, wait_for, wait_text, with_browser,
};
use agent_tests::mcp::{send_raw, stateless_tool_call};
use agent_tests::oauth::pkce;
use agent_tests::TestServer;
use fantoccini::Locator;
use serde_json::{json, Value};

/// A stateless `tools/call` with the access token `access`: its status and answer.
async fn mcp_call(base: &str, access: &str, tool: &str, arguments: Value) -> (u16, Value) {
    let http = reqwest::Client::new();
    let answer = send_raw(stateless_tool_call(
        &http,
        base,
        Some(access),
        "consent",
        tool,
        arguments,
    ))
    .await;
    (answer.status, answer.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn the_person_approves_a_client_and_revokes_it_in_the_console() {
    let t = TestServer::builder(TodoApp::default())
        .anonymous()
        .options(|o| o.oauth.enabled = true)
        .start()
        .await;
    let base = t.base.clone();
    let redirect = landing_page().await;
    let http = reqwest::Client::new();
    with_browser(|c| async move {
        // The console says how to connect by consent: the connector URL, no token.
        c.goto(&format!("{base}/agent/console"))
            .await
            .expect("open the console");
        wait_text(&c, "[data-testid=sessions-empty]", |s| !s.is_empty()).await;
        let mcp_url = format!("{base}/agent/mcp");
        wait_text(&c, "[data-testid=oauth-connector-url]", |s| s == mcp_url).await;
        let claude_code = text(&c, "[data-testid=oauth-claude-code]").await.unwrap();
        assert!(
            claude_code.starts_with("claude mcp add --transport http ")
                && claude_code.ends_with(&format!(" {mcp_url}"))
                && !claude_code.contains("--header"),
            "{claude_code}"
        );

        // The client registers itself and sends the person to the consent page.
        let registered: Value = http
            .post(format!("{base}/agent/oauth/register"))
            .json(
                &json!({"client_name": "Chromium test agent", "redirect_uris": [redirect],
                          "token_endpoint_auth_method": "none"}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let client_id = registered["client_id"]
            .as_str()
            .expect("registered")
            .to_owned();
        let (verifier, challenge) = pkce();
        let authorize = reqwest::Url::parse_with_params(
            &format!("{base}/agent/oauth/authorize"),
            &[
                ("response_type", "code"),
                ("client_id", &client_id),
                ("redirect_uri", &redirect),
                ("state", "s-42"),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("scope", "app:read app:act"),
                ("resource", &mcp_url),
            ],
        )
        .unwrap();
        c.goto(authorize.as_str()).await.expect("the consent page");
        let page = wait_text(&c, "body", |s| s.contains("Chromium test agent")).await;
        assert!(
            page.contains("127.0.0.1"),
            "the redirect host is shown: {page}"
        );
        // A new session is preselected: one click grants it.
        let new_session = c
            .find(Locator::Css("input[name=session][value=new]"))
            .await
            .expect("the new-session choice");
        assert_eq!(
            new_session.prop("checked").await.unwrap().as_deref(),
            Some("true")
        );
        let landed = approve_consent(&c, authorize.as_str(), &redirect).await;
        let landed = reqwest::Url::parse(&landed).expect("a URL");
        let query: Vec<(String, String)> = landed
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let param = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {name} in {landed}"))
        };
        assert_eq!(param("state"), "s-42");
        assert_eq!(param("iss"), base);

        // The client exchanges the code and acts in the granted session.
        let tokens: Value = http
            .post(format!("{base}/agent/oauth/token"))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", &param("code")),
                ("redirect_uri", &redirect),
                ("code_verifier", &verifier),
                ("client_id", &client_id),
                ("resource", &mcp_url),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let access = tokens["access_token"]
            .as_str()
            .expect("an access token")
            .to_owned();
        let (status, answer) = mcp_call(
            &base,
            &access,
            "send_message",
            json!({"msg": {"type": "add", "text": "from the connector"}}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        assert_ne!(answer["result"]["isError"], json!(true), "{answer}");

        // The console lists the grant in its session, with its scopes; Revoke ends it.
        c.goto(&format!("{base}/agent/console"))
            .await
            .expect("back to the console");
        let row = "[data-testid=agent]";
        click(&c, "#session-list [data-session-id]").await;
        let label = wait_text(&c, &format!("{row} td:nth-child(2)"), |s| !s.is_empty()).await;
        assert_eq!(label, "Chromium test agent");
        assert_eq!(
            text(&c, &format!("{row} [data-testid=agent-scope]"))
                .await
                .as_deref(),
            Some("read, act")
        );
        click(&c, &format!("{row} [data-testid=revoke]")).await;
        wait_for("the revoked grant to answer 401", || async {
            let (status, _) = mcp_call(&base, &access, "observe", json!({})).await;
            (status == 401).then_some(())
        })
        .await;
    })
    .await;
}
