//! The transcript export in the console: the human clicks "Export transcript" and the file
//! the button downloads is a transcript `tea_agent_runtime::testing::read_transcript` accepts,
//! holding the agent's calls as they were answered.
//!
//! Headless Chromium saves a download where the test cannot see it, so the page's
//! `HTMLAnchorElement.prototype.click` is wrapped before the click: a click on an anchor with a
//! `download` name reads the blob URL it points at (the very bytes the file would hold) into
//! `window.__exported` instead of saving it. Anything else the page clicks goes through.

use agent_examples::todo::TodoApp;
use agent_tests::chromium::{click, wait_for, with_browser};
use agent_tests::process::lap;
use agent_tests::TestServer;
use serde_json::json;
use tea_agent_runtime::session::TranscriptEntry;
use tea_agent_runtime::testing::read_transcript;

/// Keeps the next download's name and text in `window.__exported`.
const CATCH_DOWNLOAD: &str = r#"
window.__exported = null;
var click = HTMLAnchorElement.prototype.click;
HTMLAnchorElement.prototype.click = function () {
  if (!this.download) return click.call(this);
  var name = this.download;
  fetch(this.href)
    .then(function (r) { return r.text(); })
    .then(function (text) { window.__exported = { name: name, text: text }; },
          function (e) { window.__exported = { name: name, error: String(e) }; });
};
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn the_human_exports_an_agents_transcript_from_the_console() {
    let t = TestServer::builder(TodoApp::default())
        .anonymous()
        .config(|c| c.transcripts = true)
        .start()
        .await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, session_id) = super::open_and_mint(&c, &t).await;
        let (status, observed) = lap(&base, &token, "/observe", json!({})).await;
        assert_eq!(status, 200, "{observed}");
        let id = observed["state"]["todos"][0]["id"].clone();
        let sent = super::agent_toggles(&base, &token, &id).await;

        c.execute(CATCH_DOWNLOAD, vec![])
            .await
            .expect("the download is caught");
        click(&c, "[data-testid=export-transcript]").await;
        let exported = wait_for("the exported file", || async {
            let v = c.execute("return window.__exported", vec![]).await.ok()?;
            (!v.is_null()).then_some(v)
        })
        .await;
        let name = exported["name"].as_str().expect("a file name");
        assert!(
            name.starts_with("transcript-todo") && name.ends_with(".json"),
            "{name}"
        );
        let text = exported["text"]
            .as_str()
            .unwrap_or_else(|| panic!("the file's text: {exported}"));

        let transcript = read_transcript(text).expect("the file is a transcript");
        assert_eq!(transcript.session_id, session_id);
        assert_eq!(transcript.app.name, "todo");
        let calls: Vec<_> = transcript
            .entries
            .iter()
            .filter_map(|e| match e {
                TranscriptEntry::Call(call) => Some(call),
                _ => None,
            })
            .collect();
        let ops: Vec<&str> = calls.iter().map(|c| c.op.as_str()).collect();
        assert_eq!(ops, ["observe", "send_message"], "{text}");
        let toggle = calls[1];
        assert_eq!(toggle.request["msg"], json!({"type": "toggle", "id": id}));
        assert_eq!(toggle.status, 200);
        assert_eq!(toggle.answer["status"], sent["status"], "{text}");
        // Every call is the one agent's.
        assert!(calls.iter().all(|c| c.tid == calls[0].tid), "{text}");
        assert_eq!(calls[0].answer["state"], observed["state"], "{text}");
    })
    .await;
}
