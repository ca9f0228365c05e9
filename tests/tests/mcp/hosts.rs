//! Real MCP hosts against the todo example's own process (`docs/mcp.md` §Hosts, issue 55):
//! Gemini CLI, pinned, in a tmux pane: its `/mcp list` shows the server Ready with its tools,
//! with an agent token in a header, and after `/mcp auth` (OAuth: Gemini registers itself, the
//! person approves on the server's consent page, over HTTP here, and Gemini's loopback redirect
//! gets the code); Claude Code's `claude mcp list` health check: connected with the header,
//! asking for authentication without it. Ignored: they need the hosts from npm, whose paths
//! `.ci/mcp-hosts` passes (`GEMINI_CLI`, `CLAUDE_CLI`, `MCP_HOSTS_NODE_BIN`: a Node 22).
//!
//! Nothing leaves loopback: every proxy variable points at a closed port (Node's own `fetch`
//! honours them with `NODE_USE_ENV_PROXY`), loopback excepted, and the hosts' telemetry,
//! update checks and error reports are off. Needs `tmux` (`.ci/test` installs it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_tests::process::{mint, ServerProcess};
use agent_tests::temp::TempDir;
use agent_tests::todo_server;
use serde_json::json;

/// The environment of every host process besides its `HOME` and `PATH`: no traffic beyond
/// loopback, no telemetry, no update check.
const OFFLINE: &[(&str, &str)] = &[
    ("HTTPS_PROXY", "http://127.0.0.1:9"),
    ("HTTP_PROXY", "http://127.0.0.1:9"),
    ("ALL_PROXY", "http://127.0.0.1:9"),
    ("https_proxy", "http://127.0.0.1:9"),
    ("http_proxy", "http://127.0.0.1:9"),
    ("all_proxy", "http://127.0.0.1:9"),
    ("NO_PROXY", "127.0.0.1,localhost"),
    ("no_proxy", "127.0.0.1,localhost"),
    ("NODE_USE_ENV_PROXY", "1"),
    ("GEMINI_TELEMETRY_ENABLED", "false"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("LANG", "C.UTF-8"),
];

fn tool(var: &str) -> PathBuf {
    PathBuf::from(
        std::env::var(var)
            .unwrap_or_else(|_| panic!("{var}: set by .ci/mcp-hosts (the hosts from npm)")),
    )
}

/// The todo example's process (OAuth on), in memory, on a free loopback port.
fn todo() -> ServerProcess {
    todo_server!()
        .args(["--memory", "--rate-limit", "100000/minute"])
        .start()
}

/// A client that keeps the person's identity cookie and goes straight to loopback (whatever
/// the test process's proxy variables say).
fn person() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// An agent token minted on `base` by a person of its own.
async fn agent_token(base: &str) -> String {
    let minted = mint(&person(), base, json!({})).await;
    minted["token"].as_str().expect("a minted token").to_owned()
}

/// A host's home: `work/` (its working directory), `bin/` (first on its `PATH`).
struct Home(TempDir);

impl Home {
    fn new(label: &str) -> Home {
        let dir = TempDir::new(label);
        for sub in ["work", "bin"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Home(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    /// `HOME`, `PATH` (its `bin/`, the Node 22, the system's) and [`OFFLINE`].
    fn env(&self) -> Vec<(String, String)> {
        let path = format!(
            "{}:{}:/usr/bin:/bin",
            self.path("bin").display(),
            tool("MCP_HOSTS_NODE_BIN").display()
        );
        let mut env = vec![
            ("HOME".to_owned(), self.0.path().display().to_string()),
            ("PATH".to_owned(), path),
        ];
        env.extend(OFFLINE.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env
    }
}

/// A tmux server of its own (no user configuration; a pane that ends stays on screen) with
/// one 200×50 window running a program in a clean environment; on drop the program's process
/// group is killed (a host that outlives its pane would keep writing to its home), then the
/// server, and its socket removed.
struct Terminal {
    socket: String,
    /// The pane's process: the leader of the program's process group.
    pane: Option<u32>,
    socket_path: Option<PathBuf>,
}

impl Terminal {
    fn open(label: &str, home: &Home, env: &[(String, String)], program: &[&Path]) -> Terminal {
        let socket = format!("mcp-hosts-{label}-{}", std::process::id());
        let conf = home.path("tmux.conf");
        std::fs::write(
            &conf,
            "set -g remain-on-exit on\nset -g history-limit 5000\n",
        )
        .unwrap();
        let status = Command::new("tmux")
            .args(["-u", "-L", &socket, "-f"])
            .arg(&conf)
            .args([
                "new-session",
                "-d",
                "-s",
                "host",
                "-x",
                "200",
                "-y",
                "50",
                "-c",
            ])
            .arg(home.path("work"))
            .arg("env")
            .arg("-i")
            .args(env.iter().map(|(k, v)| format!("{k}={v}")))
            .args(program)
            .status()
            .expect("tmux runs (install Debian's tmux package)");
        assert!(status.success(), "tmux new-session failed");
        let mut term = Terminal {
            socket,
            pane: None,
            socket_path: None,
        };
        term.pane = term.display("#{pane_pid}").parse().ok();
        term.socket_path = Some(PathBuf::from(term.display("#{socket_path}")));
        term
    }

    /// A tmux format of the pane (`#{pane_pid}`…).
    fn display(&self, format: &str) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "display-message",
                "-p",
                "-t",
                "host",
                format,
            ])
            .output()
            .expect("display-message");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The pane as text, wrapped lines joined.
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-u",
                "-L",
                &self.socket,
                "capture-pane",
                "-p",
                "-J",
                "-t",
                "host",
            ])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Types `text`, then Enter a moment later (after the host's completion menu settles).
    async fn enter(&self, text: &str) {
        if !text.is_empty() {
            self.keys(&["-l", text]);
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
        self.keys(&["Enter"]);
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-u", "-L", &self.socket, "send-keys", "-t", "host"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success(), "send-keys failed");
    }

    /// Waits (`limit` at most) until the screen satisfies `f`; answers that screen, or panics
    /// with the screen it had.
    async fn until(&self, what: &str, limit: Duration, f: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if f(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("the pane never showed {what} within {limit:?}:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(pane) = self.pane {
            let group = format!("-{pane}");
            let signal = |sig: &str| {
                Command::new("kill")
                    .args([sig, "--", &group])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            signal("-KILL");
            // Gone within 5 s (`kill -0` fails once no process of the group is left).
            for _ in 0..100 {
                if !signal("-0") {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Gemini CLI running interactively in a pane, `todo` configured as an MCP server.
struct Gemini {
    // Dropped first: the tmux server goes before its home does.
    term: Terminal,
    home: Home,
}

impl Gemini {
    /// Gemini with a dummy API key (nothing is asked of a model), `mcpServers.todo` at `url`
    /// with `headers`, and `xdg-open` a script that writes the URL it is given to
    /// `browser-url`: the person's browser is the test.
    async fn start(label: &str, url: &str, headers: serde_json::Value) -> Gemini {
        let home = Home::new(label);
        std::fs::create_dir_all(home.path(".gemini")).unwrap();
        let mut server = json!({ "httpUrl": url });
        if !headers.is_null() {
            server["headers"] = headers;
        }
        let settings = json!({
            "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false },
            "privacy": { "usageStatisticsEnabled": false },
            "telemetry": { "enabled": false },
            "security": {
                "auth": { "selectedType": "gemini-api-key" },
                "folderTrust": { "enabled": false },
            },
            "mcpServers": { "todo": server },
        });
        std::fs::write(
            home.path(".gemini/settings.json"),
            serde_json::to_string_pretty(&settings).unwrap(),
        )
        .unwrap();
        let opener = home.path("bin/xdg-open");
        std::fs::write(
            &opener,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
                home.path("browser-url").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let mut env = home.env();
        env.extend(
            [
                ("TERM", "xterm-256color"),
                ("GEMINI_API_KEY", "dummy-key-offline"),
                // Its MCP OAuth tokens in a file of the temporary home, not a keychain.
                ("GEMINI_FORCE_FILE_STORAGE", "true"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        let node = tool("MCP_HOSTS_NODE_BIN").join("node");
        let gemini = tool("GEMINI_CLI");
        let term = Terminal::open(label, &home, &env, &[node.as_path(), gemini.as_path()]);
        let g = Gemini { term, home };
        // Its first start compiles a large bundle: on two busy cores that takes a while.
        g.term
            .until("Gemini's prompt", Duration::from_secs(90), |s| {
                s.contains("Type your message")
            })
            .await;
        g
    }

    /// Types `/mcp list` until its `todo` line says Ready (60 s at most: the server may still
    /// be connecting): that line.
    async fn ready_line(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            self.term.enter("/mcp list").await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let screen = self.term.screen();
            let line = screen
                .lines()
                .rfind(|l| l.contains("todo - "))
                .unwrap_or_default()
                .trim()
                .to_owned();
            if line.contains("todo - Ready") {
                eprintln!("Gemini's pane:\n{screen}");
                return line;
            }
            if Instant::now() > deadline {
                panic!("/mcp list never showed todo Ready within 60 s:\n{screen}");
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

/// The number of tools a Ready line reports (`🟢 todo - Ready (29 tools, 3 resources)`): the
/// 19 of `docs/mcp.md` and a `do_<action>` tool for each of the todo example's actions.
fn tools_of(line: &str) -> usize {
    line.split("Ready (")
        .nth(1)
        .and_then(|rest| rest.split(" tool").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no tool count in {line:?}"))
}

#[tokio::test]
#[ignore = "needs Gemini CLI and Claude Code from npm: .ci/mcp-hosts"]
async fn gemini_cli_lists_the_todo_server_ready_with_an_agent_token() {
    let server = todo();
    let token = agent_token(&server.base).await;
    let gemini = Gemini::start(
        "gemini-header",
        &format!("{}/agent/mcp", server.base),
        json!({ "Authorization": format!("Bearer {token}") }),
    )
    .await;
    let line = gemini.ready_line().await;
    assert!(line.starts_with("🟢 todo - Ready ("), "{line}");
    assert!(tools_of(&line) >= 19, "{line}");
}

#[tokio::test]
#[ignore = "needs Gemini CLI and Claude Code from npm: .ci/mcp-hosts"]
async fn gemini_cli_lists_the_todo_server_ready_after_mcp_auth() {
    let server = todo();
    let url = |path: &str| format!("{}{path}", server.base);
    let gemini = Gemini::start("gemini-oauth", &url("/agent/mcp"), serde_json::Value::Null).await;
    gemini.term.enter("/mcp auth todo").await;
    // Gemini asks before it opens the browser; Enter picks "1. Yes".
    gemini
        .term
        .until("Gemini's consent question", Duration::from_secs(30), |s| {
            s.contains("Do you want to continue?")
        })
        .await;
    gemini.term.enter("").await;
    // It registered itself (dynamic registration) and opens our consent page.
    let opened = gemini.home.path("browser-url");
    let deadline = Instant::now() + Duration::from_secs(30);
    let authorize = loop {
        let text = std::fs::read_to_string(&opened).unwrap_or_default();
        if let Some(line) = text.lines().next() {
            break line.to_owned();
        }
        if Instant::now() > deadline {
            panic!(
                "Gemini opened no browser within 30 s:\n{}",
                gemini.term.screen()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(
        authorize.starts_with(&url("/agent/oauth/authorize?")),
        "{authorize}"
    );

    // The person, in the browser Gemini opened: their identity cookie, the consent page, approve.
    let person = person();
    let console = person.get(url("/agent/console")).send().await.unwrap();
    assert_eq!(console.status(), 200);
    let page = person.get(&authorize).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("Gemini CLI MCP Client"), "{page}");
    let marker = "name=\"request\" value=\"";
    let sealed = page[page.find(marker).expect("the sealed request") + marker.len()..]
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let approved = person
        .post(url("/agent/oauth/authorize"))
        .form(&[
            ("request", sealed.as_str()),
            ("decision", "approve"),
            ("session", "new"),
            ("act", "1"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 303);
    let callback = approved.headers()["location"].to_str().unwrap().to_owned();
    assert!(callback.starts_with("http://localhost:"), "{callback}");
    // The browser follows the redirect to Gemini's loopback callback.
    let landed = person.get(&callback).send().await.unwrap();
    assert_eq!(landed.status(), 200);
    assert!(landed
        .text()
        .await
        .unwrap()
        .contains("Authentication Successful"));

    gemini
        .term
        .until("the end of /mcp auth", Duration::from_secs(30), |s| {
            s.contains("Successfully authenticated")
        })
        .await;
    let line = gemini.ready_line().await;
    assert!(line.starts_with("🟢 todo - Ready ("), "{line}");
    assert!(line.ends_with("(OAuth)"), "{line}");
    assert!(tools_of(&line) >= 19, "{line}");
}

/// `claude <args>` in `home`'s clean environment (60 s at most): its exit status and output.
async fn claude(home: &Home, args: &[&str]) -> String {
    let run = tokio::process::Command::new(tool("CLAUDE_CLI"))
        .args(args)
        .current_dir(home.path("work"))
        .env_clear()
        .envs(home.env())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap_or_else(|_| panic!("claude {args:?} ends within 60 s"))
        .expect("claude runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "claude {args:?}: {text}");
    text
}

#[tokio::test]
#[ignore = "needs Gemini CLI and Claude Code from npm: .ci/mcp-hosts"]
async fn claude_code_mcp_list_reports_the_todo_server_connected() {
    let server = todo();
    let token = agent_token(&server.base).await;
    let url = format!("{}/agent/mcp", server.base);
    let home = Home::new("claude");
    let bearer = format!("Authorization: Bearer {token}");
    claude(
        &home,
        &[
            "mcp",
            "add",
            "--transport",
            "http",
            "todo",
            &url,
            "--header",
            &bearer,
        ],
    )
    .await;
    // The same server without a credential: Claude Code finds the OAuth challenge.
    claude(
        &home,
        &["mcp", "add", "--transport", "http", "todo-oauth", &url],
    )
    .await;
    let list = claude(&home, &["mcp", "list"]).await;
    eprintln!("claude mcp list:\n{list}");
    assert!(
        list.contains(&format!("todo: {url} (HTTP) - ✔ Connected")),
        "{list}"
    );
    assert!(
        list.contains(&format!(
            "todo-oauth: {url} (HTTP) - ! Needs authentication"
        )),
        "{list}"
    );
}
