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
