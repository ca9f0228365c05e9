//! Declarative redaction (`/// @redact` on state fields, issue 12): no redacted field appears
//! in any byte an agent can read — state, observe, describe's `stateSchema`, diffs,
//! `stateAfter`, predictions, waits, the log, confirmation results, MCP results — however
//! deep the field sits (a struct in a list, in a map, in an enum variant), and a route gate
//! cannot read one. An effect that carries a redacted value is not shown by `would_dispatch`
//! (issue 31): effects are left out of predictions unless the app shows them through its
//! effect type's own `@redact` tags.

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_tests::mcp::McpAgent;
use agent_tests::TestServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_runtime::app::{App, EffectPreview};
use tea_agent_runtime::{AgentContext, AgentMsg, Host};

/// Every redacted value holds it; nothing agents may see does.
const SECRET: &str = "S3CRET";

/// Where the vault's effects send its key.
const BACKEND: &str = "https://backend.example/keys";

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Vault {
    count: i64,
    /// The key of the vault's backend.
    /// @redact
    api_key: String,
    entries: Vec<Entry>,
    by_label: BTreeMap<String, Entry>,
    mode: Mode,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Entry {
    label: String,
    /// @redact
    password: String,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Mode {
    Open,
    Locked {
        /// @redact
        pin: String,
        since: u64,
    },
}

/// What the vault asks of its backend.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Call {
    /// Sends the rotated key to the backend: the effect carries the state's `@redact` key.
    Push {
        url: String,
        /// Tagged for `ShownVault`, which shows its effects; `VaultApp` shows none.
        /// @redact
        api_key: String,
    },
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum VaultMsg {
    /// @intent("Count one more")
    Inc,
    /// @intent("Add an entry")
    Add { label: String },
    /// @intent("Rotate every secret")
    Rotate,
    /// @intent("Lock the vault")
    Lock,
    /// @intent("Unlock the vault")
    Unlock,
    /// @intent("Delete every entry")
    /// @requiresConfirm
    Wipe,
}

struct VaultApp;

agent_tests::test_app! {
    VaultApp {
        name: "vault",
        version: "1",
        state: Vault = Vault {
            count: 0,
            api_key: format!("{SECRET}-key-0"),
            entries: Vec::new(),
            by_label: BTreeMap::new(),
            mode: Mode::Open,
        },
        msg: VaultMsg,
        effects: Call,
    }
    update(state, msg) => {
        state.count += 1;
        let n = state.count;
        let mut calls = Vec::new();
        match msg {
            VaultMsg::Inc => {}
            VaultMsg::Add { label } => {
                let entry = Entry {
                    label: label.clone(),
                    password: format!("{SECRET}-pw-{n}"),
                };
                state.entries.push(entry.clone());
                state.by_label.insert(label, entry);
            }
            VaultMsg::Rotate => {
                state.api_key = format!("{SECRET}-key-{n}");
                for e in state.entries.iter_mut().chain(state.by_label.values_mut()) {
                    e.password = format!("{SECRET}-pw-{n}");
                }
                if let Mode::Locked { pin, .. } = &mut state.mode {
                    *pin = format!("{SECRET}-pin-{n}");
                }
                calls.push(Call::Push {
                    url: BACKEND.into(),
                    api_key: state.api_key.clone(),
                });
            }
            VaultMsg::Lock => {
                state.mode = Mode::Locked {
                    pin: format!("{SECRET}-pin-{n}"),
                    since: n as u64,
                }
            }
            VaultMsg::Unlock => state.mode = Mode::Open,
            VaultMsg::Wipe => {
                state.entries.clear();
                state.by_label.clear();
            }
        }
        calls
    };
    /// Follows the rule for hooks: it reads the `@redact` key (hooks get the whole typed
    /// state) and says what it implies, never the key itself.
    fn context(&self, state: &Vault) -> Option<AgentContext> {
        Some(AgentContext {
            summary: if state.api_key.is_empty() {
                "no API key".into()
            } else {
                "an API key is set".into()
            },
            hints: vec![format!("the key has {} characters", state.api_key.len())],
            cautions: Vec::new(),
        })
    }
}

/// Fails when `what` shows a redacted value or a redacted field's name.
fn assert_clean(what: &str, body: &Value) {
    let text = body.to_string();
    for needle in [SECRET, "apiKey", "\"password\"", "\"pin\""] {
        assert!(!text.contains(needle), "{what} shows {needle}: {text}");
    }
}

#[tokio::test]
async fn no_redacted_field_reaches_an_agent() {
    let t = TestServer::builder(VaultApp)
        .rate_limit("100000/minute")
        .start()
        .await;
    let m = t.mint("alice", None).await;
    let seen: RefCell<Vec<(String, Value)>> = RefCell::new(Vec::new());
    let lap = async |tail: &str, body: Value| -> Value {
        let a = t.lap(&m.token, tail, &body).await;
        assert_eq!(a.status, 200, "{tail}: {}", a.body);
        seen.borrow_mut()
            .push((format!("{tail} {body}"), a.body.clone()));
        a.body
    };
    let describe = lap("/describe", json!({})).await;
    assert!(
        describe["stateSchema"]["properties"].get("count").is_some(),
        "{describe}"
    );
    lap("/observe", json!({})).await;
    let send = |msg: Value| json!({"msg": msg, "waitFor": "idle", "includeState": true});
    for msg in [
        json!({"type": "add", "label": "mail"}),
        json!({"type": "add", "label": "bank"}),
        json!({"type": "inc"}),
        json!({"type": "rotate"}),
        json!({"type": "lock"}),
        json!({"type": "rotate"}),
    ] {
        let a = lap("/message", send(msg)).await;
        assert_eq!(a["status"], "dispatched", "{a}");
    }
    // The structures around the secrets are there: only the secrets are gone.
    let state = lap("/state", json!({})).await;
    assert_eq!(state["state"]["entries"][1], json!({"label": "bank"}));
    assert_eq!(state["state"]["byLabel"]["mail"], json!({"label": "mail"}));
    assert_eq!(
        state["state"]["mode"],
        json!({"kind": "locked", "since": 5})
    );
    for path in ["/entries/0", "/byLabel", "/mode", ""] {
        lap("/query-state", json!({ "path": path })).await;
        lap("/state", json!({ "path": path })).await;
    }
    for msg in [json!({"type": "rotate"}), json!({"type": "unlock"})] {
        lap("/would-dispatch", json!({ "msg": msg })).await;
    }
    // A long poll answered by a change.
    let wait = t.spawn_lap(&m.token, "/wait", json!({"timeoutMs": 5000}));
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    lap("/message", send(json!({"type": "rotate"}))).await;
    let waited = wait.await.expect("wait").body;
    assert_eq!(waited["status"], "changed", "{waited}");
    seen.borrow_mut().push(("/wait".into(), waited));
    // A confirmed wipe: the proposal, the human's approval, the result.
    let proposal = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg": {"type": "wipe"}, "timeoutMs": 50}),
    );
    let answer = proposal.await.expect("proposal").body;
    let id = answer["confirmId"].as_str().expect("confirm id").to_owned();
    let (status, _) = t
        .decide("alice", &m, &id, json!({"decision": "approve"}))
        .await;
    assert_eq!(status, 200);
    let result = lap(
        "/confirm-result",
        json!({"confirmId": id, "timeoutMs": 2000}),
    )
    .await;
    assert_eq!(result["status"], "confirmed", "{result}");
    lap("/recent-actions", json!({"n": 50})).await;
    lap("/observe", json!({})).await;

    // The same over MCP.
    let agent = McpAgent::connect(&t.base, &m.token).await;
    for (tool, args) in [
        ("observe", json!({})),
        ("describe_app", json!({})),
        ("get_state", json!({})),
        (
            "send_message",
            json!({"msg": {"type": "add", "label": "x"}, "waitFor": "idle", "includeState": true}),
        ),
        (
            "send_message",
            json!({"msg": {"type": "rotate"}, "waitFor": "idle"}),
        ),
        ("would_dispatch", json!({"msg": {"type": "lock"}})),
        ("would_dispatch", json!({"msg": {"type": "rotate"}})),
        ("describe_recent_actions", json!({"n": 10})),
        ("query_state", json!({"path": "/byLabel"})),
    ] {
        let out = agent.call(tool, args.clone()).await;
        seen.borrow_mut().push((format!("mcp {tool} {args}"), out));
    }
    agent.close().await;

    for (what, body) in seen.borrow().iter() {
        assert_clean(what, body);
    }
}

#[tokio::test]
async fn a_predicted_effect_never_shows_a_redacted_value() {
    let t = TestServer::builder(VaultApp).start().await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(
            &m.token,
            "/would-dispatch",
            &json!({"msg": {"type": "rotate"}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_clean("/would-dispatch", &a.body);
    assert_eq!(a.body["status"], "predicted", "{}", a.body);
    assert_eq!(
        a.body["stateDiff"],
        json!([{"op": "replace", "path": "/count", "value": 1}])
    );
    assert_eq!(a.body["effects"], json!([]), "{}", a.body);
    assert_eq!(a.body["effectsHidden"], 1, "{}", a.body);
    let agent = McpAgent::connect(&t.base, &m.token).await;
    let out = agent
        .call("would_dispatch", json!({"msg": {"type": "rotate"}}))
        .await;
    assert_clean("mcp would_dispatch", &out);
    agent.close().await;

    // An app that shows its effects: without the fields its effect type tags `@redact`.
    let t = TestServer::builder(ShownVault).start().await;
    let m = t.mint("alice", None).await;
    let a = t
        .lap(
            &m.token,
            "/would-dispatch",
            &json!({"msg": {"type": "rotate"}}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_clean("/would-dispatch", &a.body);
    assert_eq!(
        a.body["effects"],
        json!([{"type": "push", "url": BACKEND}]),
        "{}",
        a.body
    );
    assert_eq!(a.body.get("effectsHidden"), None, "{}", a.body);
}

/// [`VaultApp`], showing its effects to agents.
struct ShownVault;

agent_tests::test_app! {
    ShownVault {
        name: VaultApp.name(),
        version: VaultApp.version(),
        state: Vault = VaultApp.init().0,
        msg: VaultMsg,
        effects: Call,
    }
    update(state, msg) => VaultApp.update(state, msg);
    fn effect_preview(&self) -> EffectPreview<Call> {
        EffectPreview::redacted()
    }
}

/// The rule for hooks (`docs/security.md` §What agents see): `context`, `affordances`,
/// `outline` and `regions` get the whole typed state, `@redact` fields included, and what they
/// return reaches agents unfiltered, so keeping a redacted value out of it is the app's job.
/// `VaultApp::context` reads the key and says only what it implies.
#[tokio::test]
async fn hooks_see_redacted_fields_and_are_not_filtered() {
    let t = TestServer::builder(VaultApp).start().await;
    let m = t.mint("alice", None).await;
    let key_len = VaultApp.init().0.api_key.len();
    for tail in ["/context", "/observe"] {
        let a = t.lap(&m.token, tail, &json!({})).await;
        assert_eq!(a.status, 200, "{tail}: {}", a.body);
        assert_clean(tail, &a.body);
        let context = &a.body["context"];
        assert_eq!(
            context["summary"], "an API key is set",
            "{tail}: {}",
            a.body
        );
        // Derived from the redacted field, and shown as the hook wrote it.
        assert_eq!(
            context["hints"],
            json!([format!("the key has {key_len} characters")]),
            "{tail}: {}",
            a.body
        );
    }
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum GatedMsg {
    /// @intent("Peek")
    /// @routeGated("state.apiKey != ''", "needs a key")
    Peek,
}

struct GatedApp;

agent_tests::test_app! {
    GatedApp {
        name: "gated",
        version: "1",
        state: Vault = VaultApp.init().0,
        msg: GatedMsg,
    }
    update(_, _) => {};
}

#[test]
fn a_route_gate_cannot_read_a_redacted_field() {
    let error = Host::new(GatedApp).expect_err("the gate reads a redacted field");
    assert!(error.to_string().contains("apiKey"), "{error}");
}

/// The rule's other side (`docs/security.md` §The owner sees their own data): the session's
/// owner reads and changes their own state whole, `@redact` values marked as hidden from
/// agents, while the agent of the same session still never gets one, whatever the owner did.
#[tokio::test]
async fn the_owner_sees_their_own_data_and_the_agent_still_does_not() {
    let t = TestServer::builder(VaultApp)
        .rate_limit("100000/minute")
        .start()
        .await;
    let m = t.mint("alice", None).await;
    for msg in [
        json!({"type": "add", "label": "mail"}),
        json!({"type": "lock"}),
    ] {
        let a = t
            .lap(
                &m.token,
                "/message",
                &json!({"msg": msg, "waitFor": "idle"}),
            )
            .await;
        assert_eq!(a.body["status"], "dispatched", "{}", a.body);
    }
    let view_path = format!("/agent/human/sessions/{}", m.session_id);

    // The owner's view: the whole state, and where agents see less.
    let view = t.get(&view_path, Some("alice")).await;
    assert_eq!(view.status, 200, "{}", view.body);
    let state = &view.body["state"];
    assert_eq!(state["apiKey"], format!("{SECRET}-key-0"), "{state}");
    assert_eq!(state["entries"][0]["password"], format!("{SECRET}-pw-1"));
    assert_eq!(
        state["byLabel"]["mail"]["password"],
        format!("{SECRET}-pw-1")
    );
    assert_eq!(state["mode"]["pin"], format!("{SECRET}-pin-2"), "{state}");
    assert_eq!(view.body["redacts"], true);
    assert_eq!(
        view.body["hiddenFromAgents"],
        json!([
            "/apiKey",
            "/byLabel/mail/password",
            "/entries/0/password",
            "/mode/pin"
        ])
    );

    // The owner's dispatch answers the change of their own data.
    let path = format!("{view_path}/dispatch");
    let body = json!({"msg": {"type": "rotate"}, "waitFor": "idle", "includeState": true});
    let rotated = t.post_json(&path, Some("alice"), None, &body).await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    assert_eq!(rotated.body["status"], "dispatched", "{}", rotated.body);
    let changed: Vec<&str> = rotated.body["stateDiff"]
        .as_array()
        .expect("a diff")
        .iter()
        .map(|op| op["path"].as_str().unwrap_or_default())
        .collect();
    for path in ["/count", "/apiKey", "/entries/0/password", "/mode/pin"] {
        assert!(changed.contains(&path), "{path} not in {changed:?}");
    }
    assert_eq!(
        rotated.body["stateAfter"]["apiKey"],
        format!("{SECRET}-key-3")
    );

    // Another person, and the agent's own bearer, get nothing of it.
    let other = t.get(&view_path, Some("bob")).await;
    assert_eq!(other.status, 403, "{}", other.body);
    assert!(!other.body.to_string().contains(SECRET), "{}", other.body);
    let as_agent = t
        .send(
            t.request(reqwest::Method::GET, &view_path)
                .bearer_auth(&m.token),
        )
        .await;
    assert!(
        matches!(as_agent.status, 401 | 403),
        "{}: {}",
        as_agent.status,
        as_agent.body
    );
    assert_clean("the human view with an agent's bearer", &as_agent.body);

    // The agent after the owner's dispatch: its state, the log entry of the owner's commit,
    // the change it waits on, and MCP, all without a redacted value.
    let since = t.lap(&m.token, "/state", &json!({"sinceSeq": 2})).await;
    assert_eq!(since.status, 200, "{}", since.body);
    assert_clean("/state sinceSeq", &since.body);
    for (tail, body) in [
        ("/observe", json!({})),
        ("/state", json!({})),
        ("/recent-actions", json!({"n": 10})),
        ("/wait", json!({"timeoutMs": 10})),
    ] {
        let a = t.lap(&m.token, tail, &body).await;
        assert_eq!(a.status, 200, "{tail}: {}", a.body);
        assert_clean(tail, &a.body);
    }
    let agent = McpAgent::connect(&t.base, &m.token).await;
    for (tool, args) in [
        ("observe", json!({})),
        ("get_state", json!({})),
        ("describe_recent_actions", json!({"n": 10})),
    ] {
        let out = agent.call(tool, args).await;
        assert_clean(tool, &out);
    }
    agent.close().await;
}
