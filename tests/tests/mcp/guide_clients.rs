//! The guide's clients of the notes app (`examples/notes/clients/`, shown in docs/guide.md §6
//! and §7), each run as a real process against the notes app's server, built as its `main.rs`
//! builds it (`local_development()`: anonymous identities in a signed cookie), with the sessions
//! in memory instead of `notes.db` and the audit in a sink the test reads:
//!
//! - `http.sh` (curl and jq, which `.ci/test` installs when missing): the token minted with a
//!   cookie jar, the agent's LAP calls, a `delete` that waits, approved by the human with the
//!   same jar, and the agent's `confirmed` answer;
//! - `agent.py` (the official Python SDK, ignored: `.ci/mcp-python` passes its venv's python
//!   as `MCP_PYTHON`) and `agent.mjs` (the official TypeScript SDK on Node 22, ignored:
//!   `.ci/mcp-typescript` passes the folder it installed them in as `MCP_TYPESCRIPT_DIR`):
//!   the tools listed, `observe`, a `do_add` that changes the state.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_tests::TestServer;
use notes_app::Notes;
use serde_json::{json, Value};
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};

/// The notes app's server as `examples/notes/src/main.rs` builds it, on a free port, auditing
/// to `audit`.
async fn notes_server(audit: Arc<MemoryAuditSink>) -> TestServer<Notes> {
    let server = TestServer::builder(Notes)
        .cookie_identity_only()
        .audit(audit)
        .into_agent_builder()
        .local_development()
        .build()
        .await
        .expect("the notes server builds");
    agent_tests::serve(server).await
}

/// `examples/notes/clients/<name>`.
fn client_file(name: &str) -> String {
    format!(
        "{}/../examples/notes/clients/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Runs `program` with `args` (in `dir`, if given) to its end, within 2 minutes; checks its
/// exit status and answers its standard output.
async fn run(program: &str, args: &[&str], dir: Option<&Path>, hint: &str) -> String {
    let mut command = tokio::process::Command::new(program);
    command.args(args).kill_on_drop(true);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the client ends within 2 minutes")
        .unwrap_or_else(|e| panic!("{program} runs ({hint}): {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({hint}):\n{stdout}\n{stderr}"
    );
    stdout
}

#[tokio::test]
async fn http_sh_mints_sends_and_has_a_delete_approved_by_the_human() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = notes_server(audit.clone()).await;
    let script = client_file("http.sh");
    let hint = "http.sh needs bash, curl and jq: .ci/test installs them";
    let stdout = run("bash", &[&script, &t.base], None, hint).await;

    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    assert!(
        lines[0].starts_with("minted a token for session "),
        "{stdout}"
    );
    let line = |i: usize| -> Value {
        serde_json::from_str(lines[i]).unwrap_or_else(|e| panic!("line {i}: {e}: {stdout}"))
    };
    // What the agent observed first: no notes, and `clearAll` not available (its gate).
    assert_eq!(
        line(1),
        json!({"state": {"notes": [], "next_id": 0}, "available": ["add", "delete"]})
    );
    assert_eq!(line(2)["status"], "dispatched", "{stdout}");
    assert_eq!(
        line(2)["stateDiff"][0],
        json!({"op": "add", "path": "/notes/0", "value": {"id": 1, "text": "buy milk"}})
    );
    assert_eq!(line(3)["status"], "pending-confirmation", "{stdout}");
    let confirm_id = line(3)["confirmId"].as_str().expect("confirmId").to_owned();
    assert_eq!(line(4), json!({"status": "approved"}));
    assert_eq!(
        line(5),
        json!({"status": "confirmed", "stateAfter": {"notes": [], "next_id": 1}})
    );

    // The server's side: an anonymous identity minted (the cookie), and that identity, not the
    // agent, approved the delete.
    let entries = audit.entries();
    let of = |event: AuditEvent| {
        entries
            .iter()
            .filter(|e| e.event == event)
            .collect::<Vec<_>>()
    };
    let mints = of(AuditEvent::Mint);
    assert_eq!(mints.len(), 1, "{entries:?}");
    let uid = mints[0].uid.clone().expect("the minter's identity");
    assert!(uid.starts_with("anon-"), "{uid}");
    assert_eq!(of(AuditEvent::MsgDispatched).len(), 1, "{entries:?}");
    assert_eq!(of(AuditEvent::ConfirmProposed).len(), 1, "{entries:?}");
    let approved = of(AuditEvent::ConfirmApproved);
    assert_eq!(approved.len(), 1, "{entries:?}");
    assert_eq!(approved[0].detail["confirmId"], confirm_id.as_str());
    assert_eq!(approved[0].detail["by"], "human");
    assert_eq!(approved[0].uid.as_deref(), Some(uid.as_str()));
}

/// A token minted as a newcomer's browser does (the anonymous identity cookie), for a new
/// session of `t`.
async fn mint_anonymous(t: &TestServer<Notes>) -> String {
    let minted: Value = agent_tests::browser()
        .post(format!("{}/agent/mint", t.base))
        .send()
        .await
        .expect("mint")
        .error_for_status()
        .expect("minted")
        .json()
        .await
        .expect("its JSON");
    minted["token"].as_str().expect("token").to_owned()
}

/// What `agent.py` and `agent.mjs` print and do: the tools (`do_*` for each variant an agent
/// may send, not `@humanOnly` `setSyncKey`), no notes at first, a dispatched `do_add`, then the
/// note, which the session holds.
async fn check_mcp_agent(t: &TestServer<Notes>, token: &str, stdout: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    let tools: Vec<&str> = lines[0]
        .strip_prefix("tools: ")
        .expect("the tools")
        .split(' ')
        .collect();
    for tool in ["observe", "get_state", "do_add", "do_delete", "do_clearAll"] {
        assert!(tools.contains(&tool), "{tool}: {stdout}");
    }
    assert!(!tools.contains(&"do_setSyncKey"), "{stdout}");
    let notes = |i: usize| -> Value {
        let json = lines[i].strip_prefix("notes: ").expect("notes");
        serde_json::from_str(json).unwrap_or_else(|e| panic!("line {i}: {e}: {stdout}"))
    };
    assert_eq!(notes(1), json!([]));
    assert_eq!(lines[2], "do_add: dispatched", "{stdout}");
    let added = json!([{"id": 1, "text": "buy milk"}]);
    assert_eq!(notes(3), added);
    let state = t.lap(token, "/state", &json!({})).await;
    assert_eq!(state.status, 200, "{}", state.body);
    assert_eq!(state.body["state"]["notes"], added);
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK: run .ci/mcp-python"]
async fn python_sdk_runs_the_guides_agent_py() {
    let python = std::env::var("MCP_PYTHON")
        .expect("MCP_PYTHON: the venv python of .ci/mcp-python, with the `mcp` package");
    let t = notes_server(Arc::new(MemoryAuditSink::new())).await;
    let token = mint_anonymous(&t).await;
    let script = client_file("agent.py");
    let stdout = run(&python, &[&script, &token, &t.base], None, "MCP_PYTHON").await;
    check_mcp_agent(&t, &token, &stdout).await;
}

#[tokio::test]
#[ignore = "needs Node and the TypeScript MCP SDK: run .ci/mcp-typescript"]
async fn typescript_sdk_runs_the_guides_agent_mjs() {
    let dir = std::env::var("MCP_TYPESCRIPT_DIR").expect(
        "MCP_TYPESCRIPT_DIR: the folder where .ci/mcp-typescript installed Node and the SDK",
    );
    let dir = Path::new(&dir);
    // As the guide says: the file in a folder where the SDK is installed (an ES module finds
    // its imports from where it lies).
    let source = std::fs::read_to_string(client_file("agent.mjs")).expect("agent.mjs");
    std::fs::write(dir.join("agent.mjs"), source).expect("agent.mjs copied");
    let node = dir.join("node_modules/.bin/node");
    let node = node.to_str().expect("utf-8 path");
    let t = notes_server(Arc::new(MemoryAuditSink::new())).await;
    let token = mint_anonymous(&t).await;
    let stdout = run(
        node,
        &["agent.mjs", &token, &t.base],
        Some(dir),
        "MCP_TYPESCRIPT_DIR",
    )
    .await;
    check_mcp_agent(&t, &token, &stdout).await;
}
