//! `/agent/mcp` driven by the official Python MCP SDK (PyPI `mcp`, the version `.ci/mcp-python`
//! pins), on both generations: confirmation in the client (`docs/mcp.md` §Confirmation in the
//! client) through the SDK's elicitation callback: approve, reject, edit, and on 2026-07-28 a
//! tampered `requestState` refused (`tests/python/mcp_confirm.py`); the todo example's tool list,
//! the same before and after a toggle that opens a gate, a closed tool's error, the hints on
//! every tool (`tests/python/mcp_tool_list.py`); the todo example's `import` with
//! `notifications/progress` on the waiting call, `cancel_work` and an abandoned call
//! (`notifications/cancelled`) stopping it (`tests/python/mcp_progress.py`). Ignored: they need the SDK's venv, whose
//! python `.ci/mcp-python` passes as `MCP_PYTHON`.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_examples::todo::TodoApp;
use agent_tests::TestServer;

/// Runs `tests/python/<script>` with the SDK's python against `/agent/mcp` of `t` with a fresh
/// token; checks its exit status and that it printed `ok <case>` for each of `cases`.
async fn run_python<A: tea_agent_runtime::app::App>(
    t: &TestServer<A>,
    script: &str,
    cases: &[&str],
) {
    let python = std::env::var("MCP_PYTHON")
        .expect("MCP_PYTHON: the venv python of .ci/mcp-python, with the `mcp` package");
    let m = t.mint("alice", None).await;
    let script = format!("{}/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let url = format!("{}/agent/mcp", t.base);
    let run = tokio::process::Command::new(python)
        .arg(script)
        .arg(&url)
        .arg(&m.token)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the Python client ends within 2 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for case in cases {
        assert!(
            stdout.contains(&format!("ok {case}\n")),
            "{case}: {stdout}\n{stderr}"
        );
    }
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_confirms_in_the_client() {
    let t = TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .options(|o| o.mcp.confirm_in_client = true)
        .start()
        .await;
    run_python(
        &t,
        "mcp_confirm.py",
        &[
            "legacy approve",
            "legacy reject",
            "legacy edit",
            "2026-07-28 approve",
            "2026-07-28 reject",
            "2026-07-28 edit",
            "2026-07-28 tampered",
        ],
    )
    .await;
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_sees_a_tool_list_that_does_not_move() {
    let t = TestServer::builder(TodoApp::default())
        .rate_limit("100000/minute")
        .start()
        .await;
    let mut cases = Vec::new();
    for generation in ["legacy", "2026-07-28"] {
        for case in [
            "closed tool refused",
            "list unchanged by a toggle",
            "hints on every tool",
        ] {
            cases.push(format!("{generation} {case}"));
        }
    }
    let cases: Vec<&str> = cases.iter().map(String::as_str).collect();
    run_python(&t, "mcp_tool_list.py", &cases).await;
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_sees_progress_and_stops_long_work() {
    let t = TestServer::builder(TodoApp::default())
        .rate_limit("100000/minute")
        .start()
        .await;
    let mut cases = Vec::new();
    for generation in ["legacy", "2026-07-28"] {
        for case in ["progress", "cancel_work", "abandoned call cancelled"] {
            cases.push(format!("{generation} {case}"));
        }
    }
    let cases: Vec<&str> = cases.iter().map(String::as_str).collect();
    run_python(&t, "mcp_progress.py", &cases).await;
}

/// OAuth with the SDK's `OAuthClientProvider` (`tests/python/mcp_oauth.py`): discovery from
/// the 401, dynamic registration, the consent page approved by the person (a newcomer given
/// an identity cookie, as the console does), the code exchanged, then the tool list and a
/// dispatch, on both generations.
#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_connects_by_oauth_consent() {
    let t = TestServer::builder(TodoApp::default())
        .rate_limit("100000/minute")
        .cookie_identity_only()
        .anonymous()
        .options(|o| o.oauth.enabled = true)
        .start()
        .await;
    run_oauth(&t, None, "").await;
}

/// The same with a Client ID Metadata Document: the SDK's `client_metadata_url` is the URL
/// of a document served here over HTTPS (a throwaway certificate the server trusts through
/// its test options); the SDK registers nothing, the server fetches the document.
#[cfg(feature = "full")]
#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_connects_by_a_client_metadata_document() {
    use super::document_server::{document, DocumentServer, Reply};
    use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
    let docs = DocumentServer::start().await;
    let url = docs.url("/python/client.json");
    let doc = document(&url, "Python SDK (cimd)", "http://localhost:3999/callback");
    docs.serve("/python/client.json", Reply::json(&doc));
    let audit = std::sync::Arc::new(MemoryAuditSink::new());
    let root = docs.root_pem.clone();
    let t = TestServer::builder(TodoApp::default())
        .rate_limit("100000/minute")
        .cookie_identity_only()
        .anonymous()
        .audit(audit.clone())
        .options(move |o| {
            o.oauth.enabled = true;
            o.oauth.test_loopback_documents = true;
            o.oauth.test_document_roots = vec![root];
        })
        .start()
        .await;
    run_oauth(&t, Some(&url), "cimd ").await;
    let count = |event| audit.entries().iter().filter(|e| e.event == event).count();
    assert_eq!(count(AuditEvent::OauthRegistered), 0);
    assert_eq!(count(AuditEvent::OauthGranted), 2);
    // Kept for its max-age: fetched once for both generations.
    assert_eq!(docs.fetches("/python/client.json"), 1);
}

/// What `tests/python/mcp_oauth.py` prints (after `ok ` and its prefix) when each generation
/// consented, listed the tools and dispatched.
const OAUTH_CASES: [&str; 4] = [
    "legacy consented and listed",
    "legacy dispatched",
    "2026-07-28 consented and listed",
    "2026-07-28 dispatched",
];

/// Runs `tests/python/mcp_oauth.py` against `t` (with the document URL `document`, if any) and
/// checks its cases, named with `prefix`.
async fn run_oauth<A: tea_agent_runtime::app::App>(
    t: &TestServer<A>,
    document: Option<&str>,
    prefix: &str,
) {
    let python = std::env::var("MCP_PYTHON")
        .expect("MCP_PYTHON: the venv python of .ci/mcp-python, with the `mcp` package");
    let script = format!("{}/python/mcp_oauth.py", env!("CARGO_MANIFEST_DIR"));
    let mut command = tokio::process::Command::new(python);
    command.arg(script).arg(format!("{}/agent/mcp", t.base));
    if let Some(document) = document {
        command.arg(document);
    }
    let run = command.kill_on_drop(true).output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the Python client ends within 2 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for case in OAUTH_CASES {
        assert!(
            stdout.contains(&format!("ok {prefix}{case}\n")),
            "{case}: {stdout}\n{stderr}"
        );
    }
}

/// The SDK connected by consent given in a real browser: its redirect handler hands the
/// authorization URL to this test, whose Chromium approves the page with one click (a new
/// session preselected), and the URL the browser lands on goes back to the SDK, which exchanges
/// the code, lists the tools and dispatches, on both generations. `.ci/mcp-python` runs it
/// after `.ci/test` installed Chromium.
#[cfg(feature = "full")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python MCP SDK and Chromium: run .ci/mcp-python"]
async fn python_sdk_is_approved_in_chromium() {
    use agent_tests::chromium::{approve_consent, landing_page, with_browser};
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let python = std::env::var("MCP_PYTHON")
        .expect("MCP_PYTHON: the venv python of .ci/mcp-python, with the `mcp` package");
    let t = TestServer::builder(TodoApp::default())
        .rate_limit("100000/minute")
        .cookie_identity_only()
        .anonymous()
        .options(|o| o.oauth.enabled = true)
        .start()
        .await;
    let redirect = landing_page().await;
    let mut child = tokio::process::Command::new(python)
        .arg(format!(
            "{}/python/mcp_oauth.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(format!("{}/agent/mcp", t.base))
        .env("OAUTH_PERSON", "browser")
        .env("OAUTH_REDIRECT", &redirect)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    let mut answers = child.stdin.take().expect("its stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
    with_browser(|c| async move {
        let run = async {
            let (mut approved, mut printed) = (0, Vec::new());
            while let Some(line) = lines.next_line().await.expect("its output") {
                let Some(authorization_url) = line.strip_prefix("authorize ") else {
                    printed.push(line);
                    continue;
                };
                let landed = approve_consent(&c, authorization_url, &redirect).await;
                approved += 1;
                answers
                    .write_all(format!("{landed}\n").as_bytes())
                    .await
                    .expect("the landing URL handed back");
                answers.flush().await.expect("flushed");
            }
            (approved, printed)
        };
        let (approved, printed) = tokio::time::timeout(Duration::from_secs(120), run)
            .await
            .expect("the Python client ends within 2 minutes");
        let status = child.wait().await.expect("python ends");
        assert!(status.success(), "{printed:?}");
        // One consent per generation, each approved in the browser.
        assert_eq!(approved, 2, "{printed:?}");
        for case in OAUTH_CASES {
            assert!(
                printed.iter().any(|line| line == &format!("ok {case}")),
                "{case}: {printed:?}"
            );
        }
    })
    .await;
}
