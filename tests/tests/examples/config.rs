//! The examples' configuration as an operator meets it (`docs/operations.md` §Configuration):
//! a server started from environment variables alone, `--help` and `--version`, and settings
//! that do not read stopping start-up with one line that names them.

use std::process::{Command, Stdio};

use agent_tests::temp::TempDir;

fn counter() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_counter-server"));
    command
        .stdin(Stdio::null())
        .env("RUST_LOG", "error")
        // Nothing from the test's own environment configures it.
        .env_remove("AGENT_BIND")
        .env_remove("AGENT_DB")
        .env_remove("AGENT_CONFIG");
    command
}

async fn post(base: &str, host: Option<&str>, tail: &str, token: Option<&str>) -> u16 {
    let client = reqwest::Client::new();
    let mut request = client
        .post(format!("{base}{tail}"))
        .header("content-type", "application/json")
        .body("{}");
    if let Some(host) = host {
        request = request.header("host", host);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("request").status().as_u16()
}

#[tokio::test]
async fn a_server_started_from_the_environment_alone() {
    let dir = TempDir::new("env-config");
    let db = dir.path().join("from-env.db");
    let server = agent_tests::counter_server!()
        .without_port_flag()
        .env("AGENT_BIND", "127.0.0.1:0")
        .env("AGENT_DB", &db.display().to_string())
        .env("AGENT_RATE_LIMIT", "3/minute")
        .env("AGENT_ALLOWED_HOSTS", "127.0.0.1,agent.test")
        .env("AGENT_CORS_ORIGINS", "http://localhost:5173")
        .env("AGENT_SLIDING_TTL", "1h")
        .env("AGENT_HARD_EXPIRY", "2h")
        .start();
    let base = server.base.clone();
    assert!(db.exists(), "AGENT_DB names the store file");

    // A mint, as the console makes it (anonymous minting is the examples' default).
    let mint = reqwest::Client::new()
        .post(format!("{base}/agent/mint"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("mint");
    assert_eq!(mint.status(), 200);
    let body: serde_json::Value = mint.json().await.expect("json");
    let token = body["token"].as_str().expect("token").to_string();
    // AGENT_HARD_EXPIRY: the token expires two hours after its mint.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let lifetime = body["expiresAt"].as_u64().expect("expiresAt") as i64 - now_ms as i64;
    assert!(
        (2 * 3600 * 1000 - 60_000..=2 * 3600 * 1000).contains(&lifetime),
        "{lifetime} ms"
    );

    // AGENT_RATE_LIMIT: 3 calls a minute, the 4th is 429.
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(post(&base, None, "/agent/lap/v1/observe", Some(&token)).await);
    }
    assert_eq!(statuses, [200, 200, 200, 429]);

    // AGENT_ALLOWED_HOSTS: the named host is served, another is 403.
    let port = server.port();
    assert_eq!(
        post(
            &base,
            Some(&format!("agent.test:{port}")),
            "/agent/lap/v1/describe",
            Some(&token)
        )
        .await,
        429,
        "a listed Host reaches the gate (the rate limit answers)"
    );
    assert_eq!(
        post(
            &base,
            Some("evil.test"),
            "/agent/lap/v1/describe",
            Some(&token)
        )
        .await,
        403
    );

    // AGENT_CORS_ORIGINS: a preflight from the origin is answered for it.
    let preflight = reqwest::Client::new()
        .request(
            reqwest::Method::OPTIONS,
            format!("{base}/agent/lap/v1/observe"),
        )
        .header("origin", "http://localhost:5173")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("preflight");
    assert_eq!(
        preflight
            .headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("http://localhost:5173")
    );
    assert_eq!(server.terminate().code(), Some(0));
}

#[tokio::test]
async fn the_metrics_endpoint_serves_prometheus_text() {
    // A free port for the metrics (the banner names the agent routes' only).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let server = agent_tests::counter_server!()
        .args(["--memory", "--metrics-bind", &format!("127.0.0.1:{port}")])
        .start();
    let base = server.base.clone();
    let body: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/agent/mint"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("mint")
        .json()
        .await
        .expect("json");
    let token = body["token"].as_str().expect("token").to_string();
    assert_eq!(
        post(&base, None, "/agent/lap/v1/observe", Some(&token)).await,
        200
    );
    assert_eq!(
        post(&base, None, "/agent/lap/v1/observe", Some("agt_nope")).await,
        401
    );
    let scrape = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .expect("scrape");
    assert_eq!(scrape.status(), 200);
    assert!(scrape
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain")));
    let text = scrape.text().await.expect("text");
    for expected in [
        "# HELP agent_requests_total",
        "agent_requests_total{operation=\"observe\",surface=\"lap\",status=\"200\"} 1",
        "agent_requests_total{operation=\"observe\",surface=\"lap\",status=\"401\"} 1",
        "agent_auth_failures_total{reason=\"unknown\"} 1",
        "agent_sessions{kind=\"hosted\"} 1",
        "agent_request_duration_seconds",
    ] {
        assert!(text.contains(expected), "{expected} in:\n{text}");
    }
    assert!(!text.contains("agt_"), "no token in the metrics");
}

#[test]
fn help_and_version_exit_zero() {
    let help = counter().arg("--help").output().expect("runs");
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    for name in [
        "--bind",
        "AGENT_BIND",
        "--allowed-host",
        "AGENT_ALLOWED_HOSTS",
        "--trust-proxy",
        "--cors-origin",
        "--db",
        "AGENT_DB",
        "--rate-limit",
        "--sliding-ttl",
        "AGENT_SLIDING_TTL",
        "--hard-expiry",
        "AGENT_HARD_EXPIRY",
        "--config",
        "--metrics-bind",
    ] {
        assert!(text.contains(name), "{name} in --help:\n{text}");
    }
    let version = counter().arg("--version").output().expect("runs");
    assert_eq!(version.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&version.stdout).contains(env!("CARGO_PKG_VERSION")));
}

/// Runs the counter with `args` and `env`, expecting it to stop before serving: its exit code
/// and the first line of its error output.
fn refused(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = counter()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("runs");
    assert!(
        out.stdout.is_empty(),
        "nothing served: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let first = stderr.lines().next().unwrap_or_default().to_string();
    (out.status.code(), first)
}

#[test]
fn a_setting_that_does_not_read_stops_start_up_with_one_line_naming_it() {
    let dir = TempDir::new("bad-config");
    // A port in use.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let (code, line) = refused(&["--memory"], &[("AGENT_BIND", addr.as_str())]);
    assert_ne!(code, Some(0));
    assert!(line.starts_with(&format!("--bind {addr}")), "{line}");
    // An unknown key in the configuration file.
    let file = dir.path().join("agent.toml");
    std::fs::write(&file, "[server]\nrate_limt = \"1/second\"\n").expect("write");
    let (code, line) = refused(&["--memory", "--config", &file.display().to_string()], &[]);
    assert_eq!(code, Some(2));
    assert!(
        line.starts_with("--config ") && line.contains("rate_limt"),
        "{line}"
    );
    // A database URL that does not connect.
    let (code, line) = refused(&["--port", "0", "--db", "postgres://127.0.0.1:1/none"], &[]);
    assert_ne!(code, Some(0));
    assert!(
        line.starts_with("--db postgres://127.0.0.1:1/none"),
        "{line}"
    );
    // A TLS file that does not read.
    let (code, line) = refused(
        &[
            "--port",
            "0",
            "--db",
            "postgres://127.0.0.1:1/none?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        ],
        &[],
    );
    assert_ne!(code, Some(0));
    assert!(
        line.starts_with("--db ") && line.contains("sslrootcert"),
        "{line}"
    );
    // A metrics address in use.
    let (code, line) = refused(&["--memory", "--metrics-bind", addr.as_str()], &[]);
    assert_ne!(code, Some(0));
    assert!(
        line.starts_with(&format!("--metrics-bind {addr}")),
        "{line}"
    );
    // A flag with a bad value, and a bind beyond loopback without host names.
    let (code, line) = refused(&["--rate-limit", "often"], &[]);
    assert_eq!(code, Some(2));
    assert!(line.contains("--rate-limit"), "{line}");
    let (code, line) = refused(&["--memory", "--bind", "0.0.0.0:0"], &[]);
    assert_eq!(code, Some(2));
    assert!(line.contains("--allowed-host"), "{line}");
}
