//! Running work in the console (`docs/semantics.md` §5.6): a progress bar per running effect,
//! with what started it, and the human cancels it from the console.

use agent_examples::todo::TodoApp;
use agent_tests::chromium::{click, wait_for, wait_text, with_browser};
use agent_tests::process::lap;
use agent_tests::TestServer;
use fantoccini::Locator;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn running_work_shows_a_progress_bar_and_the_human_cancels_it() {
    let t = TestServer::builder(TodoApp::default())
        .anonymous()
        .start()
        .await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, _) = super::open_and_mint(&c, &t).await;
        // 1000 todos, 10 every 100 ms: about 10 s of work, so a loaded machine still sees it
        // running when the human reaches the Cancel button.
        let (status, answer) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "import", "count": 1000}, "waitFor": "idle"}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        // A bar per running effect, with what started it.
        let label = wait_text(&c, "[data-testid=work-label]", |s| !s.is_empty()).await;
        assert!(
            label.starts_with("import todos — started by agent token"),
            "{label}"
        );
        wait_text(&c, "[data-testid=work-steps]", |s| {
            s.split(" / ").next().and_then(|d| d.parse::<u32>().ok()) >= Some(20)
        })
        .await;
        let value = c
            .execute(
                "return document.querySelector('[data-testid=work-progress]').value",
                vec![],
            )
            .await
            .expect("the bar's value")
            .as_f64()
            .expect("a number");
        assert!(value > 0.0 && value < 1.0, "{value}");
        wait_text(&c, "[data-testid=work-count]", |s| s == "1").await;
        // The human stops it from the console.
        click(&c, "[data-testid=work-cancel]").await;
        wait_for("the bar to go", || async {
            c.find(Locator::Css("[data-testid=work-item]"))
                .await
                .is_err()
                .then_some(())
        })
        .await;
        wait_text(&c, "[data-testid=log]", |s| {
            s.contains("cancelled by the user")
        })
        .await;
        let (_, log) = lap(
            &base,
            &token,
            "/recent-actions",
            json!({"kind": "cancelled"}),
        )
        .await;
        assert_eq!(
            log["entries"][0]["detail"], "cancelled by the user",
            "{log}"
        );
        let (_, state) = lap(&base, &token, "/state", json!({})).await;
        let todos = state["state"]["todos"].as_array().expect("todos").len();
        assert!(todos < 1002, "the import stopped: {todos}");
    })
    .await;
}
