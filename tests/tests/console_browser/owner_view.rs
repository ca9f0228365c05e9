//! The owner's own data in the console (`docs/security.md` §The owner sees their own data):
//! the todo example's `@redact` API key is shown to the session's owner, marked as hidden from
//! agents, kept through the agent's commits (whose events carry the agents' view) and changed
//! by the owner's own dispatch, while the agent of the same session never gets it.

use agent_examples::todo::TodoApp;
use agent_tests::chromium::{click, wait_text, with_browser};
use agent_tests::process::lap;
use agent_tests::TestServer;
use fantoccini::Locator;
use serde_json::json;

/// The state view's node of the API key, only while it is marked as hidden from agents.
const KEY: &str = r#"[data-testid=state] [data-path="/apiKey"][data-hidden=agents]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn the_owner_sees_the_redacted_key_and_the_agent_never_does() {
    let t = TestServer::builder(TodoApp::default())
        .anonymous()
        .start()
        .await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, _) = super::open_and_mint(&c, &t).await;
        wait_text(&c, KEY, |s| s == "\"sk-demo-secret\"").await;
        wait_text(&c, "[data-testid=state-hidden-note]", |s| {
            s.contains("hidden from agents")
        })
        .await;

        // The agent's commit: its event carries the agents' view; the page keeps the key.
        let (_, observed) = lap(&base, &token, "/observe", json!({})).await;
        let id = observed["state"]["todos"][0]["id"].clone();
        super::agent_toggles(&base, &token, &id).await;
        wait_text(
            &c,
            r#"[data-testid=state] [data-path="/todos/0/done"]"#,
            |s| s == "true",
        )
        .await;
        wait_text(&c, KEY, |s| s == "\"sk-demo-secret\"").await;

        // The owner rotates the key (`@humanOnly`) from the dispatch box: the answer and the
        // state show the new one.
        let box_ = c
            .find(Locator::Css("[data-testid=dispatch-msg]"))
            .await
            .unwrap();
        box_.clear().await.unwrap();
        box_.send_keys(r#"{"type": "rotateKey"}"#).await.unwrap();
        click(&c, "[data-testid=dispatch-send]").await;
        let result = wait_text(&c, "[data-testid=dispatch-result]", |s| {
            s.contains("dispatched")
        })
        .await;
        assert!(result.contains("/apiKey"), "{result}");
        assert!(result.contains("sk-rotated-0"), "{result}");
        wait_text(&c, KEY, |s| s == "\"sk-rotated-0\"").await;

        // The agent, after all of it: no key, old or new, in what it reads.
        for (tail, body) in [
            ("/observe", json!({})),
            ("/state", json!({})),
            ("/recent-actions", json!({"n": 20})),
            ("/describe", json!({})),
        ] {
            let (status, answer) = lap(&base, &token, tail, body).await;
            assert_eq!(status, 200, "{tail}: {answer}");
            let text = answer.to_string();
            for key in ["sk-demo-secret", "sk-rotated"] {
                assert!(!text.contains(key), "{tail} shows the key: {text}");
            }
            assert!(!text.contains("apiKey"), "{tail} names the field: {text}");
        }
    })
    .await;
}
