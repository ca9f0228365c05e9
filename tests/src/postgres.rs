//! A real PostgreSQL server for tests: `initdb` into a fresh temporary directory, `postgres`
//! on a free loopback port, stopped and removed when the handle drops.
//!
//! PostgreSQL refuses to run as root; when the tests run as root (CI does), the server runs
//! as the unprivileged user `nobody` (the data directory is handed to it). The binaries are
//! found through `$PG_BIN`, `pg_config --bindir`, or Debian's `/usr/lib/postgresql/<ver>/bin`.
//! [`PgServer::start_with_tls`] starts one that also speaks TLS, with a certificate the test
//! made.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;

/// TLS for a test server ([`PgServer::start_with_tls`]).
pub struct PgTls {
    /// The server's certificate (chain), PEM.
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
    /// Whether TCP connections without TLS are refused (`hostssl` only in `pg_hba.conf`).
    pub tls_only: bool,
}

/// A running PostgreSQL server owned by the test.
pub struct PgServer {
    child: Child,
    dir: PathBuf,
    port: u16,
    /// The `-c` settings it runs with (kept for a restart).
    settings: Vec<&'static str>,
}

impl PgServer {
    /// `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication on loopback).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Initializes a cluster in a temporary directory and starts it; panics with the reason
    /// when PostgreSQL is missing or does not start.
    pub fn start() -> PgServer {
        Self::start_with(None)
    }

    /// [`PgServer::start`], the server also speaking TLS (`ssl = on`) with `tls`'s certificate
    /// and key, written into the data directory (mode 0600, owned by the server's user).
    pub fn start_with_tls(tls: &PgTls) -> PgServer {
        Self::start_with(Some(tls))
    }

    fn start_with(tls: Option<&PgTls>) -> PgServer {
        let bin = bin_dir().expect(
            "PostgreSQL binaries not found: install the `postgresql` package (Debian) or set PG_BIN",
        );
        let dir = std::env::temp_dir().join(format!("agent-pg-{}", uuid_like()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).expect("temporary directory");
        let user = unprivileged_user();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown");
            std::os::unix::fs::chown(&data, Some(uid), Some(gid)).expect("chown");
        }
        let output = as_user(Command::new(bin.join("initdb")), user, &dir)
            .args([
                "-D",
                path_str(&data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ])
            .args(["--no-sync", "--no-instructions"])
            .stdin(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut settings = Vec::new();
        if let Some(tls) = tls {
            write_private(&data.join("server.crt"), &tls.cert_pem, user);
            write_private(&data.join("server.key"), &tls.key_pem, user);
            settings.extend([
                "ssl=on",
                "ssl_cert_file=server.crt",
                "ssl_key_file=server.key",
            ]);
            if tls.tls_only {
                // Replaces initdb's file: the socket as before, TCP only over TLS.
                let hba = "local all all trust\n\
                           hostssl all all 127.0.0.1/32 trust\n\
                           hostnossl all all 127.0.0.1/32 reject\n";
                std::fs::write(data.join("pg_hba.conf"), hba).expect("pg_hba.conf");
            }
        }
        let port = free_port();
        let child = spawn_postgres(&dir, port, &settings);
        let server = PgServer {
            child,
            dir,
            port,
            settings,
        };
        server.wait_ready();
        server
    }

    /// Restarts the server on the same port and data, as an operator's restart does: a fast
    /// shutdown (SIGINT: the connections are closed, transactions in flight rolled back), down
    /// for `down`, then started again; returns once it accepts connections.
    pub fn restart(&mut self, down: Duration) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        std::thread::sleep(down);
        self.child = spawn_postgres(&self.dir, self.port, &self.settings);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                // Accepting TCP is not yet accepting queries; the store retries its first
                // connection through the pool's acquire timeout, so a short grace is enough.
                std::thread::sleep(Duration::from_millis(300));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        panic!("PostgreSQL did not start within 30 s:\n{log}");
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // SIGKILL to the postmaster: its backends notice and exit; the data is thrown away.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes `text` to `path`, readable by its owner only (PostgreSQL refuses a key file that its
/// group or others can read), owned by `user` when the server runs as one.
/// Starts `postgres` on the data in `dir`, on `port`, with `settings`; its log appended to
/// `dir/server.log`.
fn spawn_postgres(dir: &Path, port: u16, settings: &[&'static str]) -> Child {
    let bin = bin_dir().expect("PostgreSQL binaries");
    let user = unprivileged_user();
    let data = dir.join("data");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .expect("log file");
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(dir.join("server.log"), Some(uid), Some(gid)).expect("chown");
    }
    as_user(Command::new(bin.join("postgres")), user, dir)
        .args([
            "-D",
            path_str(&data),
            "-p",
            &port.to_string(),
            "-k",
            path_str(dir),
        ])
        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
        .args(["-c", "max_connections=100"])
        .args(settings.iter().flat_map(|setting| ["-c", *setting]))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("postgres starts")
}

fn write_private(path: &Path, text: &str, user: Option<(u32, u32)>) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).expect("write a TLS file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod 0600");
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// `Some((uid, gid))` of `nobody` when running as root, `None` otherwise.
fn unprivileged_user() -> Option<(u32, u32)> {
    let me = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd");
    let line = passwd
        .lines()
        .find(|l| l.starts_with("nobody:"))
        .expect("running as root needs the user `nobody` to run PostgreSQL");
    let fields: Vec<&str> = line.split(':').collect();
    Some((
        fields[2].parse().expect("uid"),
        fields[3].parse().expect("gid"),
    ))
}

fn as_user(mut cmd: Command, user: Option<(u32, u32)>, home: &Path) -> Command {
    if let Some((uid, gid)) = user {
        cmd.gid(gid).uid(uid);
    }
    cmd.env("HOME", home).current_dir(home);
    cmd
}

/// The directory of `initdb` and `postgres`.
fn bin_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").exists() {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, p)| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, p)| p)
}
