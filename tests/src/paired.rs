//! Helpers of the pairing wire tests: a counter server that mints paired sessions with short
//! windows, and checks of what it answers.

use agent_examples::counter::Counter;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::{Answer, Minted, TestServer};

/// The grace window of [`server`]: short, so the grace paths run fast.
pub const GRACE_MS: u64 = 600;
/// How long [`server`] waits for a forwarded answer before 504.
pub const FORWARD_MS: u64 = 400;

/// A counter server that mints paired sessions, with short windows.
pub async fn server() -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("10000/minute")
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
            p.grace = Duration::from_millis(GRACE_MS);
            p.forward_timeout = Duration::from_millis(FORWARD_MS);
        })
        .start()
        .await
}

/// Mints a paired session as `alice`.
pub async fn mint(t: &TestServer<Counter>) -> Minted {
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["lapVersion"], 2);
    assert!(a.body["wsUrl"].as_str().unwrap().ends_with("/agent/ws"));
    Minted {
        token: a.body["token"].as_str().unwrap().into(),
        tid: a.body["tid"].as_str().unwrap().into(),
        session_id: a.body["sessionId"].as_str().unwrap().into(),
    }
}

/// `POST /agent/mint {"paired": paired}` as `user`: the raw answer.
pub async fn mint_as(t: &TestServer<Counter>, user: &str, paired: bool) -> Answer {
    t.post_json(
        "/agent/mint",
        Some(user),
        None,
        &json!({ "paired": paired }),
    )
    .await
}

/// Starts a LAP call on a task.
pub fn call(
    t: &TestServer<Counter>,
    token: &str,
    tail: &str,
    body: Value,
) -> tokio::task::JoinHandle<Answer> {
    t.spawn_lap(token, tail, body)
}

/// The token status of `tid` (`awaiting-ws`, `active`, …; empty when unknown).
pub async fn status_of(t: &TestServer<Counter>, tid: &str) -> String {
    t.server
        .tokens()
        .find_by_tid(tid)
        .await
        .expect("token store")
        .map(|r| r.status.as_str().to_string())
        .unwrap_or_default()
}

/// Asserts a 503 `paused` with `reconnect` in the body and `X-LLui-Reconnect`.
pub fn assert_paused(a: &Answer, reconnect: &str) {
    assert_eq!(a.status, 503, "{:?}", a.body);
    assert_eq!(
        a.body,
        json!({"error": {"code": "paused", "reconnect": reconnect}})
    );
    assert_eq!(a.headers["x-llui-reconnect"], reconnect);
}

/// An app process of the Rust pairing client (the `paired-counter` test binary, whose path
/// an integration test has as `env!("CARGO_BIN_EXE_paired-counter")`), paired with a server
/// and driven through its stdin and stdout.
pub struct AppProcess {
    /// The process (killed when dropped).
    pub child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl AppProcess {
    /// Mints a token for `alice` on `t` (whose options mint paired sessions) and starts `exe`
    /// with it: the token and the app once it says it is paired.
    pub async fn paired<A: tea_agent_runtime::app::App>(
        t: &TestServer<A>,
        exe: &str,
    ) -> (String, AppProcess) {
        let minted = t
            .post_json("/agent/mint", Some("alice"), None, &json!({}))
            .await;
        let token = minted.body["token"].as_str().expect("token").to_string();
        let mut app = AppProcess::start(exe, &t.base, &token);
        app.expect("status Paired").await;
        (token, app)
    }

    /// Starts `exe` paired with the server at `base` with `token`.
    pub fn start(exe: &str, base: &str, token: &str) -> AppProcess {
        let mut child = tokio::process::Command::new(exe)
            .args([base, token])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn paired-counter");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        AppProcess {
            child,
            stdin,
            stdout,
        }
    }

    /// Waits (10 s at most) for a stdout line starting with `prefix`.
    pub async fn expect(&mut self, prefix: &str) -> String {
        let wait = async {
            while let Some(line) = self.stdout.next_line().await.expect("stdout") {
                if line.starts_with(prefix) {
                    return line;
                }
                eprintln!("paired-counter: {line}");
            }
            panic!("paired-counter exited before printing {prefix:?}");
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap_or_else(|_| panic!("no {prefix:?} line within 10 s"))
    }

    /// The lines it printed since the last read, waiting at most `quiet` for each next one
    /// (what a failing test shows of the app: its status changes and decisions).
    pub async fn printed(&mut self, quiet: Duration) -> Vec<String> {
        let mut lines = Vec::new();
        while let Ok(Ok(Some(line))) = tokio::time::timeout(quiet, self.stdout.next_line()).await {
            lines.push(line);
        }
        lines
    }

    /// Writes `line` to its stdin.
    pub async fn say(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }
}
