//! The terminal todo app (`tui-todo`) in a real terminal: tmux runs it paired with the todo
//! server while an agent dispatches over LAP. The screen shows the agent's change, the person's
//! keys reach the agent, and a `@requiresConfirm` proposal is approved with a key press.
//!
//! Needs `tmux` (Debian's package; `.ci/run` installs it when missing).

use std::process::{Command, Stdio};
use std::time::Duration;

use agent_examples::serve::{parse_args, start};
use agent_examples::todo::TodoApp;
use agent_tests::process::mint;
use serde_json::{json, Value};

/// A tmux server of its own (its socket named after this process), with one window running the
/// app; killed on drop.
struct Terminal {
    socket: String,
}

impl Terminal {
    fn open(program: &str, args: &[&str]) -> Terminal {
        let socket = format!("tui-todo-test-{}", std::process::id());
        let mut command = vec![program.to_string()];
        command.extend(args.iter().map(|a| a.to_string()));
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-s",
                "app",
                "-x",
                "110",
                "-y",
                "34",
            ])
            .arg(command.join(" "))
            .status()
            .expect("tmux runs (install Debian's tmux package)");
        assert!(status.success(), "tmux new-session failed");
        Terminal { socket }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "app"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "app"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    /// Waits (10 s at most) until the screen satisfies `f`; answers that screen.
    async fn until(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        for _ in 0..200 {
            let screen = self.screen();
            if f(&screen) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the screen never showed {what}:\n{}", self.screen());
    }

    fn is_running(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "app"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
    }
}

async fn lap(base: &str, token: &str, tail: &str, body: Value) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/agent/lap/v1{tail}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("LAP call")
        .json()
        .await
        .expect("JSON answer")
}

fn todo_id(state: &Value, title: &str) -> String {
    state["todos"]
        .as_array()
        .and_then(|todos| todos.iter().find(|t| t["title"] == title))
        .and_then(|t| t["id"].as_str())
        .unwrap_or_else(|| panic!("no todo titled {title:?} in {state}"))
        .to_string()
}

#[tokio::test]
async fn a_person_and_an_agent_share_the_terminal_app() {
    // In memory: the example's default store is a SQLite file in the working directory.
    let opts = parse_args(["--port", "0", "--memory"].map(String::from), 8788).expect("options");
    let server = start(TodoApp::default(), &opts).await.expect("server");
    let base = server.base_url();
    let minted = mint(&reqwest::Client::new(), &base, json!({"paired": true})).await;
    let token = minted["token"].as_str().expect("token").to_string();

    let tui = Terminal::open(
        env!("CARGO_BIN_EXE_tui-todo"),
        &["--server", &base, "--token", &token],
    );
    tui.until("the pairing", |s| {
        s.contains("paired, waiting for an agent")
    })
    .await;

    // The agent adds a todo: it appears on the person's screen.
    let added = lap(
        &base,
        &token,
        "/message",
        json!({"msg": {"type": "add", "title": "from the agent"}, "waitFor": "idle"}),
    )
    .await;
    assert_eq!(added["status"], "dispatched", "{added}");
    tui.until("the agent's todo", |s| s.contains("from the agent"))
        .await;
    tui.until("the agent as connected", |s| {
        s.contains("an agent is connected")
    })
    .await;

    // The person adds one with the keyboard: the agent reads it.
    tui.keys(&["a"]);
    tui.until("the title prompt", |s| s.contains("new todo: _"))
        .await;
    tui.keys(&["-l", "typed here"]);
    tui.keys(&["Enter"]);
    tui.until("the person's todo", |s| s.contains("typed here"))
        .await;
    let state = lap(&base, &token, "/state", json!({})).await;
    todo_id(&state["state"], "typed here");

    // The agent asks to delete its todo: the person sees the proposal and approves it with `y`.
    let id = todo_id(&state["state"], "from the agent");
    let proposed = lap(
        &base,
        &token,
        "/message",
        json!({"msg": {"type": "delete", "id": id}, "waitFor": "none"}),
    )
    .await;
    assert_eq!(proposed["status"], "pending-confirmation", "{proposed}");
    tui.until("the proposal", |s| {
        s.contains("agent proposes: delete a todo")
    })
    .await;
    tui.keys(&["y"]);
    let decided = lap(
        &base,
        &token,
        "/confirm-result",
        json!({"confirmId": proposed["confirmId"], "timeoutMs": 5000}),
    )
    .await;
    assert_eq!(decided["status"], "confirmed", "{decided}");
    let screen = tui
        .until("the approved delete", |s| {
            !s.contains("from the agent") && s.contains("approved: delete a todo")
        })
        .await;
    assert!(screen.contains("typed here"), "{screen}");

    // `q` quits: the program ends and with it the tmux session.
    tui.keys(&["q"]);
    for _ in 0..100 {
        if !tui.is_running() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("tui-todo did not quit on q:\n{}", tui.screen());
}
