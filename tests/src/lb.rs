//! A fleet behind a real load balancer: replicas of the relay example (the `relay-server`
//! binary) as processes on one PostgreSQL, each advertising its own address to the others
//! (`--fleet-address`), and Debian's `haproxy` in front of them, round robin, no stickiness
//! (`docs/operations.md` §Several replicas behind a load balancer). For the fleet test
//! (`tests/store/lb_fleet.rs`) and the forwarded-call benchmark (`benches/fleet_hop.rs`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::postgres::PgServer;
use crate::process::{Launch, ServerProcess};

pub use crate::ports::free_port;

/// The key every replica of the test fleet shares.
pub const FLEET_SECRET: &str = "the test fleet's shared key, 32+ characters long";

/// The `haproxy` binary: `$HAPROXY`, or Debian's.
fn haproxy_binary() -> PathBuf {
    if let Ok(path) = std::env::var("HAPROXY") {
        return PathBuf::from(path);
    }
    for candidate in [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ] {
        if Path::new(candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    panic!(
        "haproxy not found: install the `haproxy` package (Debian; .ci/test does) or set HAPROXY"
    );
}

/// A running `haproxy` in front of `backends`, killed when dropped.
pub struct Haproxy {
    child: Child,
    dir: crate::temp::TempDir,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Haproxy {
    /// Starts `haproxy` on a free port, round robin over `backends` (`127.0.0.1:<port>`), no
    /// stickiness; a replica is taken out after two failed readiness probes (every 300 ms) and
    /// a request refused by a dead one is sent to another. Waits until it answers.
    pub fn start(backends: &[u16]) -> Haproxy {
        let port = free_port();
        let dir = crate::temp::TempDir::new("haproxy");
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, p)| format!("  server r{i} 127.0.0.1:{p} check inter 300ms fall 2 rise 2\n"))
            .collect();
        let config = format!(
            "global\n  maxconn 2048\n\
             defaults\n  mode http\n  timeout connect 1s\n  timeout client 120s\n  \
             timeout server 120s\n  timeout tunnel 1h\n  retries 3\n  option redispatch\n\
             frontend agents\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  option httpchk GET /agent/readyz\n{servers}"
        );
        let path = dir.path().join("haproxy.cfg");
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(config.as_bytes()))
            .expect("haproxy.cfg");
        let child = Command::new(haproxy_binary())
            .args(["-db", "-f"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("haproxy starts");
        let lb = Haproxy {
            child,
            dir,
            base: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "haproxy did not listen within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = &lb.dir;
        lb
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Replicas of the relay example on one PostgreSQL, each on a port of its own and advertising
/// it as its fleet address.
pub struct RelayFleet {
    /// The database.
    pub pg: PgServer,
    /// Each replica's port.
    pub ports: Vec<u16>,
    /// Each replica, `None` once killed.
    pub replicas: Vec<Option<ServerProcess>>,
    config: crate::temp::TempDir,
}

impl RelayFleet {
    /// Starts `n` replicas of `binary` (the `relay-server` test binary, whose path a test has
    /// as `env!("CARGO_BIN_EXE_relay-server")`) with the pairing options `pairing` (TOML lines
    /// of `[server.pairing]`) and `heartbeat` for their fleet.
    pub fn start(binary: &str, n: usize, pairing: &str, heartbeat: &str) -> RelayFleet {
        let pg = PgServer::start();
        let config = crate::temp::TempDir::new("fleet-config");
        let file = config.path().join("relay.toml");
        std::fs::write(
            &file,
            format!("[server.pairing]\n{pairing}\nfleet_heartbeat = \"{heartbeat}\"\n"),
        )
        .expect("relay.toml");
        let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let replicas = ports
            .iter()
            .map(|port| Some(Self::launch(binary, &pg, &file, *port).start()))
            .collect();
        RelayFleet {
            pg,
            ports,
            replicas,
            config,
        }
    }

    fn launch(binary: &str, pg: &PgServer, config: &Path, port: u16) -> Launch {
        let url = pg.url();
        let config = config.display().to_string();
        Launch::new(binary)
            .without_port_flag()
            .args([
                "--port",
                &port.to_string(),
                "--db",
                &url,
                "--rate-limit",
                "100000/second",
                "--config",
                &config,
                "--fleet-address",
                &format!("http://127.0.0.1:{port}"),
            ])
            .env("AGENT_FLEET_SECRET", FLEET_SECRET)
    }

    /// Replica `i`'s base URL.
    pub fn base(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[i])
    }

    /// Kills replica `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(replica) = self.replicas[i].take() {
            replica.kill();
        }
    }

    /// The config directory (kept while the fleet lives).
    pub fn config_dir(&self) -> &Path {
        self.config.path()
    }
}

/// Mints a paired session through `base` (the relay mints paired sessions): token and tid.
pub async fn mint_paired(base: &str) -> (String, String) {
    let minted: serde_json::Value = crate::browser()
        .post(format!("{base}/agent/mint"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("mint")
        .json()
        .await
        .expect("mint answer");
    (
        minted["token"].as_str().expect("token").to_owned(),
        minted["tid"].as_str().expect("tid").to_owned(),
    )
}
