//! `/agent/mcp` driven by the official Python MCP SDK (PyPI `mcp`, the version `.ci/mcp-python`
//! pins): confirmation in the client (`docs/mcp.md` §Confirmation in the client) on both
//! generations through the SDK's elicitation callback: approve, reject, edit, and on
//! 2026-07-28 a tampered `requestState` refused. Ignored: it needs the SDK's venv, whose python
//! `.ci/mcp-python` passes as `MCP_PYTHON` (`tests/python/mcp_confirm.py` is the client).

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::TestServer;

#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_confirms_in_the_client() {
    let python = std::env::var("MCP_PYTHON")
        .expect("MCP_PYTHON: the venv python of .ci/mcp-python, with the `mcp` package");
    let t = TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .options(|o| o.mcp.confirm_in_client = true)
        .start()
        .await;
    let m = t.mint("alice", None).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/mcp_confirm.py");
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
    for case in [
        "legacy approve",
        "legacy reject",
        "legacy edit",
        "2026-07-28 approve",
        "2026-07-28 reject",
        "2026-07-28 edit",
        "2026-07-28 tampered",
    ] {
        assert!(
            stdout.contains(&format!("ok {case}\n")),
            "{case}: {stdout}\n{stderr}"
        );
    }
}
