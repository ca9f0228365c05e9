//! The `tui-todo` example in a real terminal (tmux): an agent dispatches over LAP through the
//! server the app pairs with, the screen shows the change, and a confirmation is approved by a
//! key press.

use std::process::Command;
use std::time::Duration;

use agent_examples::todo::TodoApp;
use agent_runtime::pairing::PairingOptions;
use agent_runtime::{AgentServer, Host, ServerOptions};
use agent_tests::start;
use serde_json::json;

/// A tmux server of its own (`-L`), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux must be installed (Debian package tmux)");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "app"])
    }

    /// Waits (10 s at most) until the screen satisfies `f`.
    async fn wait_screen(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        for _ in 0..200 {
            let screen = self.screen();
            if f(&screen) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the screen never showed {what}:\n{}", self.screen());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[tokio::test]
async fn an_agent_drives_the_terminal_app_and_the_person_approves() {
    let options = ServerOptions {
        pairing: PairingOptions {
            mint_paired: true,
            ..PairingOptions::default()
        },
        ..ServerOptions::default()
    };
    let t =
        start(AgentServer::builder(Host::new(TodoApp::default()).unwrap()).options(options)).await;
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    let token = minted.body["token"].as_str().unwrap().to_string();
    let tmux = Tmux {
        socket: format!("agent-tests-{}", std::process::id()),
    };
    let command = format!(
        "{} --server {} --token {token}",
        env!("CARGO_BIN_EXE_tui-todo"),
        t.base
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "app",
        "-x",
        "120",
        "-y",
        "30",
        &command,
    ]);
    tmux.wait_screen("the pairing", |s| s.contains("paired, waiting"))
        .await;

    // The agent adds a todo: the screen shows it.
    let a = t
        .lap(
            &token,
            "/message",
            &json!({"msg": {"type": "add", "title": "water the plants"}}),
        )
        .await;
    assert_eq!(a.body["status"], "dispatched", "{:?}", a.body);
    tmux.wait_screen("the new todo and the agent", |s| {
        s.contains("water the plants") && s.contains("an agent is driving")
    })
    .await;

    // The person adds one with the keyboard: the agent sees it.
    tmux.run(&["send-keys", "-t", "app", "a"]);
    tmux.run(&["send-keys", "-t", "app", "-l", "call mum"]);
    tmux.run(&["send-keys", "-t", "app", "Enter"]);
    tmux.wait_screen("the typed todo", |s| s.contains("call mum"))
        .await;
    let state = t.lap(&token, "/state", &json!({})).await;
    let titles: Vec<&str> = state.body["state"]["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles[titles.len() - 2..], ["water the plants", "call mum"]);

    // A proposal is shown and approved with `y`.
    let id = state.body["state"]["todos"][titles.len() - 2]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let pending = t.spawn_lap(
        &token,
        "/message",
        json!({"msg": {"type": "delete", "id": id}, "reason": "already done", "timeoutMs": 10000}),
    );
    tmux.wait_screen("the proposal", |s| s.contains("The agent proposes delete"))
        .await;
    tmux.run(&["send-keys", "-t", "app", "y"]);
    let a = pending.await.unwrap();
    assert_eq!(a.body["status"], "confirmed", "{:?}", a.body);
    tmux.wait_screen("the todo gone", |s| {
        !s.contains("water the plants") && s.contains("call mum")
    })
    .await;
    tmux.run(&["send-keys", "-t", "app", "q"]);
}
