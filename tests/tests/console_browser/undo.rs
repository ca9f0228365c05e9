//! Undo in the console (`docs/lap.md` §6.7a): the agent's commit has an Undo button, the human
//! clicks it, and the agent's next `observe` shows the todo as it was; a message that starts
//! effects shows why it has no undo; a later commit in the way offers "Undo back to here".

use agent_examples::todo::TodoApp;
use agent_tests::chromium::{click, wait_for, wait_text, with_browser};
use agent_tests::process::lap;
use agent_tests::TestServer;
use fantoccini::Locator;
use serde_json::json;
use tea_agent_runtime::store::Stores;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn the_human_undoes_an_agents_toggle_in_the_console() {
    let stores = Stores::open("memory").await.expect("stores");
    let t = TestServer::builder(TodoApp::default())
        .anonymous()
        .stores(&stores)
        .start()
        .await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, session_id) = super::open_and_mint(&c, &t).await;
        let (_, observed) = lap(&base, &token, "/observe", json!({})).await;
        let id = observed["state"]["todos"][0]["id"].clone();
        super::agent_toggles(&base, &token, &id).await;
        let (_, log) = lap(&base, &token, "/recent-actions", json!({"n": 1})).await;
        let seq = log["entries"][0]["seq"].as_u64().expect("the commit");
        let (_, observed) = lap(&base, &token, "/observe", json!({})).await;
        assert_eq!(observed["state"]["todos"][0]["done"], json!(true));

        // The entry shows its commit and an Undo button.
        let entry = format!("#log [data-seq=\"{seq}\"]");
        wait_text(&c, &format!("{entry} [data-testid=log-seq]"), |s| {
            s == format!("commit {seq}")
        })
        .await;
        click(&c, &format!("{entry} [data-testid=log-undo]")).await;
        wait_text(&c, &format!("{entry} [data-testid=log-undo-result]"), |s| {
            s == format!("Undone as commit {}", seq + 1)
        })
        .await;
        // The `undone` entry arrives over the event stream.
        wait_text(&c, "#log [data-kind=undone]", |s| {
            s.contains(&format!("commits {seq} undone by the human"))
        })
        .await;
        let (_, observed) = lap(&base, &token, "/observe", json!({})).await;
        assert_eq!(observed["state"]["todos"][0]["done"], json!(false));
        assert_eq!(observed["seq"], json!(seq + 1));
        let (_, log) = lap(&base, &token, "/recent-actions", json!({"kind": "undone"})).await;
        assert_eq!(log["entries"][0]["undid"], json!([seq]), "{log}");

        // A later commit in the way: the console offers to undo back to it.
        super::agent_toggles(&base, &token, &id).await;
        let (_, log) = lap(&base, &token, "/recent-actions", json!({"n": 1})).await;
        let toggled = log["entries"][0]["seq"].as_u64().expect("the commit");
        // The human toggles it back, from the page (the console's identity).
        c.execute(
            "return fetch('/agent/human/sessions/' + arguments[0] + '/dispatch', {method: 'POST', \
             credentials: 'same-origin', headers: {'content-type': 'application/json'}, \
             body: JSON.stringify({msg: {type: 'toggle', id: arguments[1]}})}).then(r => r.status)",
            vec![json!(session_id), id.clone()],
        )
        .await
        .expect("dispatched from the page");
        let entry = format!("#log [data-seq=\"{toggled}\"]");
        click(&c, &format!("{entry} [data-testid=log-undo]")).await;
        let offer = wait_text(&c, &format!("{entry} [data-testid=log-undo-result]"), |s| {
            s.contains("Later commits")
        })
        .await;
        assert!(offer.contains(&(toggled + 1).to_string()), "{offer}");
        click(&c, &format!("{entry} [data-testid=log-undo-back]")).await;
        wait_text(&c, &format!("{entry} [data-testid=log-undo-result]"), |s| {
            s.starts_with("Undone as commit")
        })
        .await;
        let (_, observed) = lap(&base, &token, "/observe", json!({})).await;
        assert_eq!(observed["state"]["todos"][0]["done"], json!(false));

        // A message that starts effects: no button, the reason instead.
        let (status, sent) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "bulkAdd", "todos": [{"title": "x"}]}}),
        )
        .await;
        assert_eq!(status, 200, "{sent}");
        let why = wait_text(&c, "#log [data-testid=log-no-undo]", |s| !s.is_empty()).await;
        assert!(
            why.starts_with("No undo: ") && why.contains("effects"),
            "{why}"
        );
        wait_for("no Undo button on it", || async {
            let li = c
                .find(Locator::Css("#log [data-testid=log-no-undo]"))
                .await
                .ok()?;
            let item = li.find(Locator::XPath("./ancestor::li")).await.ok()?;
            item.find(Locator::Css("[data-testid=log-undo]"))
                .await
                .is_err()
                .then_some(())
        })
        .await;
    })
    .await;
}
