use super::*;

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A config file in a fresh temporary directory (removed with the returned guard).
fn file(text: &str) -> (TempDir, String) {
    let dir = TempDir(std::env::temp_dir().join(format!(
        "agent-examples-config-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )));
    std::fs::create_dir_all(&dir.0).unwrap();
    let path = dir.0.join("agent.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path.display().to_string())
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn flags_read_into_the_options() {
    let o = parse_args(args(&["--port", "0", "--rate-limit=5/second"]), 8787).unwrap();
    assert_eq!(o.port(), 0);
    assert!(o.bind.ip().is_loopback());
    assert_eq!(o.server.rate_limit.to_string(), "5/second");
    assert!(o.server.allow_anonymous, "the examples mint anonymously");
    assert!(o.host.transcripts, "the examples record transcripts");
    assert!(o.server.cors_origins.is_empty());
    assert_eq!(parse_args(args(&[]), 8787).unwrap().port(), 8787);
    // A later `--port` wins (the tests' harness puts `--port 0` first).
    assert_eq!(
        parse_args(args(&["--port", "0", "--port", "9"]), 1)
            .unwrap()
            .port(),
        9
    );
    let cors = parse_args(
        args(&[
            "--cors-origin",
            "http://localhost:5173",
            "--cors-origin=https://app.example",
        ]),
        8787,
    )
    .unwrap();
    assert_eq!(
        cors.server.cors_origins,
        ["http://localhost:5173", "https://app.example"]
    );
    let o = parse_args(
        args(&[
            "--bind",
            "0.0.0.0:8080",
            "--allowed-host",
            "agent.example.com",
            "--allowed-host=app.internal:8080",
            "--trust-proxy",
            "2",
            "--sliding-ttl",
            "2h",
            "--hard-expiry",
            "7days",
            "--session-idle",
            "10m",
            "--stored-session-ttl",
            "0",
        ]),
        1,
    )
    .unwrap();
    assert_eq!(o.bind.to_string(), "0.0.0.0:8080");
    assert_eq!(
        o.server.allowed_hosts,
        ["agent.example.com", "app.internal:8080"]
    );
    assert_eq!(o.server.mcp.allowed_hosts, o.server.allowed_hosts);
    assert_eq!(o.server.trust_proxy.get(), 2);
    assert_eq!(o.server.sliding_ttl, Some(Duration::from_secs(7200)));
    assert_eq!(o.server.hard_expiry, Duration::from_secs(7 * 86_400));
    assert_eq!(o.host.session_idle, Duration::from_secs(600));
    assert_eq!(o.host.stored_session_ttl, Duration::ZERO);
    // Unsaid, the token lifetimes are the server's defaults; `--sliding-ttl 0` turns the
    // sliding TTL off; a zero hard expiry is refused.
    let bare = parse_args(args(&[]), 1).unwrap();
    assert_eq!(bare.server.sliding_ttl, Some(Duration::from_secs(3600)));
    assert_eq!(bare.server.hard_expiry, Duration::from_secs(86_400));
    let off = parse_args(args(&["--sliding-ttl", "0"]), 1).unwrap();
    assert_eq!(off.server.sliding_ttl, None);
    let zero = parse_args(args(&["--hard-expiry", "0"]), 1).err().unwrap();
    assert!(zero.contains("--hard-expiry"), "{zero}");
    let any = parse_args(args(&["--bind", "[::]:1", "--allowed-host", "*"]), 1).unwrap();
    assert!(any.server.allowed_hosts.is_empty(), "`*` accepts any Host");
    // `--bind IP` takes the example's port, `--port` overrides whatever `--bind` says.
    let ip = |a: &[&str]| parse_args(args(a), 8788).unwrap().bind.to_string();
    assert_eq!(
        ip(&["--bind", "0.0.0.0", "--allowed-host", "a"]),
        "0.0.0.0:8788"
    );
    assert_eq!(
        ip(&["--bind", "0.0.0.0:9", "--allowed-host", "a", "--port", "0"]),
        "0.0.0.0:0"
    );
    assert_eq!(parse_args(args(&[]), 1).unwrap().db, None);
    assert_eq!(
        parse_args(args(&["--memory"]), 1).unwrap().db.as_deref(),
        Some("memory")
    );
    assert_eq!(
        parse_args(args(&["--db", "x.db"]), 1)
            .unwrap()
            .db
            .as_deref(),
        Some("x.db")
    );
}

#[test]
fn a_setting_that_does_not_read_is_one_line_naming_it() {
    let one = |a: &[&str]| parse_args(args(a), 1).unwrap_err();
    for (a, names) in [
        (&["--port"][..], "--port"),
        (&["--port", "x"], "--port"),
        (&["--rate-limit", "0/minute"], "--rate-limit"),
        (&["--bogus"], "--bogus"),
        (&["--db="], "--db"),
        (&["--sliding-ttl", "soon"], "--sliding-ttl"),
        (&["--bind", "nowhere"], "--bind"),
        (&["--bind", "0.0.0.0:1"], "--allowed-host"),
        (&["--cors-origin", "localhost:5173"], "--cors-origin"),
        (&["--memory", "--db", "x.db"], "--db"),
    ] {
        let e = one(a);
        assert!(e.contains(names), "{a:?}: {e}");
        // clap adds a usage hint after a blank line; the first line says it all.
        assert!(
            e.lines().next().unwrap().contains("error") || !e.contains('\n'),
            "{a:?}: {e}"
        );
    }
}

#[test]
fn help_and_version_are_not_errors_of_a_setting() {
    let help = parse_args(args(&["--help"]), 1).unwrap_err();
    for flag in [
        "--bind",
        "AGENT_BIND",
        "--allowed-host",
        "AGENT_ALLOWED_HOSTS",
        "--db",
        "AGENT_DB",
        "--config",
    ] {
        assert!(help.contains(flag), "{flag} in {help}");
    }
    let version = parse_args(args(&["--version"]), 1).unwrap_err();
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
}

#[test]
fn a_config_file_fills_the_options_and_flags_win() {
    let (_dir, path) = file(
        r#"
[server]
rate_limit = "7/minute"
cors_origins = ["http://localhost:5173"]
max_wait = "30s"

[server.mcp]
result_budget_chars = 20000
idle_ttl = "5m"

[server.pairing]
grace = "2m"

[host]
session_idle = "45m"
policy = "strict"

[host.budgets]
log_total_bytes = 65536
"#,
    );
    let o = parse_args(args(&["--config", &path, "--rate-limit", "9/second"]), 1).unwrap();
    assert_eq!(o.server.rate_limit.to_string(), "9/second", "the flag wins");
    assert_eq!(o.server.cors_origins, ["http://localhost:5173"]);
    assert_eq!(o.server.max_wait, Duration::from_secs(30));
    assert_eq!(o.server.mcp.result_budget_chars, 20_000);
    assert_eq!(o.server.mcp.idle_ttl, Duration::from_secs(300));
    assert_eq!(o.server.pairing.grace, Duration::from_secs(120));
    assert!(o.server.pairing.native_apps, "the examples' default kept");
    assert!(o.server.allow_anonymous, "the examples' default kept");
    assert!(o.host.transcripts, "the examples' default kept");
    assert_eq!(o.host.session_idle, Duration::from_secs(45 * 60));
    assert_eq!(
        o.host.policy,
        tea_agent_runtime::config::DispatchPolicy::Strict
    );
    assert_eq!(o.host.budgets.log_total_bytes, 65536);
    // What the file does not say keeps its default.
    assert_eq!(
        o.host.budgets.event_bytes,
        tea_agent_runtime::config::Budgets::default().event_bytes
    );

    let (_dir, off) = file("[server]\nallow_anonymous = false\n[host]\ntranscripts = false\n");
    let o = parse_args(args(&["--config", &off]), 1).unwrap();
    assert!(!o.server.allow_anonymous);
    assert!(!o.host.transcripts);
}

#[test]
fn a_bad_config_file_is_one_line_naming_the_key() {
    for (text, expected) in [
        ("[server]\nrate_limt = \"1/second\"\n", "rate_limt"),
        ("[server.mcp]\nidle_ttl = \"soon\"\n", "idle_ttl"),
        ("[host]\n\npolicy = \"loose\"\n", "loose"),
        ("[serverx]\n", "serverx"),
        ("[server\n", "agent.toml:1"),
    ] {
        let (_dir, path) = file(text);
        let e = parse_args(args(&["--config", &path]), 1).unwrap_err();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(e.starts_with("--config "), "{e}");
        assert!(e.contains(expected), "{expected} in {e}");
    }
    let e = parse_args(args(&["--config", "/nonexistent/agent.toml"]), 1).unwrap_err();
    assert!(
        e.starts_with("--config /nonexistent/agent.toml: cannot read"),
        "{e}"
    );
}
