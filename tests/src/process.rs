//! A server in its own process (the test crate's `counter-server` or `todo-server` binary, the
//! examples' command line), so a test can kill it with `SIGKILL` (or stop it with `SIGTERM`)
//! and start it again on the same store, on a new port or the same one.
//!
//! ```ignore
//! let launch = agent_tests::counter_server!().args(["--db", &db]);
//! let first = launch.start();          // on a free port, once its banner is printed
//! let second = first.restart();        // SIGKILL, then the same command on the same port
//! second.kill();
//! let third = launch.start();          // on a new port
//! ```

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// The test crate's `counter-server` binary (the counter example's command line) as a
/// [`Launch`]. A macro: Cargo gives a binary's path to the test targets only.
#[macro_export]
macro_rules! counter_server {
    () => {
        $crate::process::Launch::new(env!("CARGO_BIN_EXE_counter-server"))
    };
}

/// The test crate's `todo-server` binary (`cargo run --example todo`'s command line, OAuth
/// on) as a [`Launch`].
#[macro_export]
macro_rules! todo_server {
    () => {
        $crate::process::Launch::new(env!("CARGO_BIN_EXE_todo-server"))
    };
}

/// The test crate's `relay-server` binary (`cargo run --example relay`'s command line) as a
/// [`Launch`].
#[macro_export]
macro_rules! relay_server {
    () => {
        $crate::process::Launch::new(env!("CARGO_BIN_EXE_relay-server"))
    };
}

/// How to start a server process: its binary, arguments and extra environment. `--port 0`
/// comes first (a later `--port` wins).
#[derive(Debug, Clone)]
pub struct Launch {
    binary: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// `--port 0` goes first (off: the environment alone says where to listen).
    port_flag: bool,
}

impl Launch {
    /// `binary` with no arguments yet.
    pub fn new(binary: impl Into<PathBuf>) -> Launch {
        Launch {
            binary: binary.into(),
            args: Vec::new(),
            env: Vec::new(),
            port_flag: true,
        }
    }

    /// Without the leading `--port 0`: the process is configured by what the test passes only
    /// (its environment, say).
    pub fn without_port_flag(mut self) -> Launch {
        self.port_flag = false;
        self
    }

    /// Appends `args`.
    pub fn args<S: AsRef<str>>(mut self, args: impl IntoIterator<Item = S>) -> Launch {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable of the process (test hooks).
    pub fn env(mut self, key: &str, value: &str) -> Launch {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Starts the process on a free port and waits (at most 60 s) for its banner.
    pub fn start(&self) -> ServerProcess {
        self.spawn(None)
    }

    /// Starts the process on `port` and waits for its banner.
    pub fn start_on(&self, port: u16) -> ServerProcess {
        self.spawn(Some(port))
    }

    fn spawn(&self, port: Option<u16>) -> ServerProcess {
        // `AGENT_TEST_SERVER_LOG=rmcp=debug,tea_agent_runtime=debug` (a `RUST_LOG` filter) shows
        // the server's log with a failing test's output.
        let log = std::env::var("AGENT_TEST_SERVER_LOG").ok();
        let echo = log.is_some();
        let mut command = Command::new(&self.binary);
        if self.port_flag {
            command.args(["--port", "0"]);
        }
        command.args(&self.args);
        if let Some(port) = port {
            command.args(["--port", &port.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("RUST_LOG", log.as_deref().unwrap_or("error"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
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
        ServerProcess {
            child,
            base,
            launch: self.clone(),
        }
    }
}

/// A running server process; killed (`SIGKILL`) when dropped.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    launch: Launch,
}

impl ServerProcess {
    /// Starts `binary` with `--port 0` and `args`, and waits (at most 60 s) for its banner.
    pub fn start(binary: &Path, args: &[&str]) -> ServerProcess {
        Launch::new(binary).args(args).start()
    }

    /// How this process was started.
    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the banner's port")
    }

    /// Kills the process with `SIGKILL` (no shutdown code runs) and waits for it.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }

    /// Kills the process with `SIGKILL` and starts the same command on the same port (the
    /// same store): a crash and a restart, as clients that keep the address see it.
    pub fn restart(self) -> ServerProcess {
        let (launch, port) = (self.launch.clone(), self.port());
        self.kill();
        launch.start_on(port)
    }

    /// Asks the process to stop (`SIGTERM`: its shutdown code runs) and waits for it to exit.
    pub fn terminate(mut self) -> ExitStatus {
        self.signal("-TERM");
        self.child.wait().expect("the server exits")
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
