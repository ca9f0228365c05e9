//! An example server in its own process (the test crate's `counter-server` binary, the
//! counter example's command line), so a test can kill it with `SIGKILL` and start it again.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running example server process; killed (`SIGKILL`) when dropped.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl ServerProcess {
    /// Starts `binary` with `--port 0` and `args`, and waits (at most 60 s) for its banner.
    pub fn start(binary: &Path, args: &[&str]) -> ServerProcess {
        Self::start_with_env(binary, args, &[])
    }

    /// [`Self::start`] with extra environment variables (test hooks).
    pub fn start_with_env(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        // `AGENT_TEST_SERVER_LOG=rmcp=debug,agent_runtime=debug` (a `RUST_LOG` filter) shows
        // the server's log with a failing test's output.
        let log = std::env::var("AGENT_TEST_SERVER_LOG").ok();
        let echo = log.is_some();
        let mut child = Command::new(binary)
            .args(["--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("RUST_LOG", log.as_deref().unwrap_or("error"))
            .envs(env.iter().copied())
            .spawn()
            .expect("the server process starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if echo {
                    eprintln!("server: {line}");
                }
                if let Some(at) = line.find("http://") {
                    let url: String = line[at..]
                        .chars()
                        .take_while(|c| !c.is_whitespace())
                        .collect();
                    let _ = tx.send(url);
                }
            }
        });
        let base = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(base) => base,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server printed no banner within 60 s");
            }
        };
        ServerProcess { child, base }
    }

    /// Kills the process with `SIGKILL` (no shutdown code runs) and waits for it.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }

    /// Stops the process (`SIGSTOP`): it is down, holding its connections, until
    /// [`Self::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Continues a paused process (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {sig} failed");
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `POST <base>/agent/lap/v1<tail>` with `token` as the bearer (20 s timeout): the status and
/// the JSON answer (`null` when the answer is not JSON).
pub async fn lap(
    base: &str,
    token: &str,
    tail: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let resp = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
        .post(format!("{base}/agent/lap/v1{tail}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("LAP call");
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or(serde_json::Value::Null),
    )
}

/// `POST <base>/agent/mint` with `body` as `human` (a cookie-keeping client is one person to
/// the examples' identity): the answer (`token`, `tid`, `sessionId`).
pub async fn mint(
    human: &reqwest::Client,
    base: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    human
        .post(format!("{base}/agent/mint"))
        .json(&body)
        .send()
        .await
        .expect("mint")
        .json()
        .await
        .expect("mint answer")
}
