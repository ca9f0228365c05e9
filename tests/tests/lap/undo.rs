//! The human's undo over real HTTP (`docs/lap.md` §6.7a, `docs/semantics.md` §12), on the todo
//! example with the memory store: the agent's `dispatched` entry names its commit, the human
//! undoes it, and the agent sees the undo in `observe`, `/state {sinceSeq}`, `/wait {sinceSeq}`
//! and `/recent-actions` (an `undone` entry); each refusal answers its own code and reason; an
//! agent's bearer cannot undo.

use agent_examples::todo::TodoApp;
use agent_tests::{Minted, TestServer};
use serde_json::{json, Value};
use std::sync::Arc;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
use tea_agent_runtime::store::Stores;

async fn server(audit: Arc<MemoryAuditSink>) -> TestServer<TodoApp> {
    let stores = Stores::open("memory").await.expect("stores");
    TestServer::builder(TodoApp::default())
        .stores(&stores)
        .audit(audit)
        .start()
        .await
}

/// The agent sends `msg`; answers the `seq` of its `dispatched` log entry.
async fn agent_commit(t: &TestServer<TodoApp>, m: &Minted, msg: Value) -> u64 {
    let sent = t.lap(&m.token, "/message", &json!({ "msg": msg })).await;
    assert_eq!(sent.body["status"], "dispatched", "{}", sent.body);
    let log = t
        .lap(
            &m.token,
            "/recent-actions",
            &json!({"n": 1, "kind": "dispatched"}),
        )
        .await;
    let entry = &log.body["entries"][0];
    assert!(entry.get("noUndo").is_none(), "{entry}");
    entry["seq"].as_u64().expect("the entry names its commit")
}

async fn undo(t: &TestServer<TodoApp>, m: &Minted, user: &str, body: Value) -> (u16, Value) {
    let path = format!("/agent/human/sessions/{}/undo", m.session_id);
    let answer = t.post_json(&path, Some(user), None, &body).await;
    (answer.status, answer.body)
}

fn todo(observed: &Value, i: usize) -> Value {
    observed["state"]["todos"][i].clone()
}

#[tokio::test]
async fn the_human_undoes_an_agents_toggle_and_the_agent_sees_it() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = server(audit.clone()).await;
    let m = t.mint("alice", None).await;
    let first = t.lap(&m.token, "/observe", &json!({})).await;
    let id = todo(&first.body, 0)["id"].clone();
    let toggle = agent_commit(&t, &m, json!({"type": "toggle", "id": id})).await;
    let held = t.lap(&m.token, "/observe", &json!({})).await;
    assert_eq!(todo(&held.body, 0)["done"], json!(true));
    let held_seq = held.body["seq"].as_u64().expect("seq");

    // The agent waits on the todo from the version it holds; the human's undo wakes it (or,
    // arriving after it, answers at once).
    let waiting = t.spawn_lap(
        &m.token,
        "/wait",
        json!({"path": "/todos/0/done", "sinceSeq": held_seq, "timeoutMs": 5000}),
    );
    // An agent's credential is refused on the human route, even with the owner's identity.
    let path = format!("/agent/human/sessions/{}/undo", m.session_id);
    let refused = t
        .post_json(
            &path,
            Some("alice"),
            Some(&m.token),
            &json!({"seq": toggle}),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // Nor can another identity undo it.
    let (status, _) = undo(&t, &m, "mallory", json!({"seq": toggle})).await;
    assert_eq!(status, 403);

    let (status, body) = undo(&t, &m, "alice", json!({"seq": toggle})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"seq": toggle + 1, "undid": [toggle]}));

    let woke = waiting.await.expect("wait");
    assert_eq!(woke.body["status"], "changed", "{}", woke.body);
    assert_eq!(woke.body["seq"], json!(toggle + 1));
    let observed = t.lap(&m.token, "/observe", &json!({})).await;
    assert_eq!(todo(&observed.body, 0)["done"], json!(false));
    assert_eq!(observed.body["seq"], json!(toggle + 1));
    let since = t
        .lap(&m.token, "/state", &json!({"sinceSeq": held_seq}))
        .await;
    // The undo's diff, as any commit's: the toggle's own changes reverted (the todo, and the
    // save status the toggle made dirty).
    assert_eq!(
        since.body["stateDiff"],
        json!([
            {"op": "replace", "path": "/todos/0/done", "value": false},
            {"op": "replace", "path": "/save", "value": "saved"}
        ]),
        "{}",
        since.body
    );
    let log = t
        .lap(&m.token, "/recent-actions", &json!({"kind": "undone"}))
        .await;
    let entry = &log.body["entries"][0];
    assert_eq!(entry["seq"], json!(toggle + 1), "{entry}");
    assert_eq!(entry["undid"], json!([toggle]));
    assert_eq!(entry["variant"], "toggle");
    assert_eq!(entry["tid"], json!(m.tid));
    assert_eq!(
        entry["detail"],
        format!(
            "commits {toggle} undone by the human, as commit {}",
            toggle + 1
        )
    );
    let audited = audit.entries();
    let undone = audited
        .iter()
        .find(|e| e.event == AuditEvent::CommitUndone)
        .expect("audited");
    assert_eq!(undone.detail["undid"], json!([toggle]));
    assert_eq!(undone.detail["by"], "human");

    // Each refusal has its code and reason.
    let (status, body) = undo(&t, &m, "alice", json!({"seq": toggle})).await;
    assert_eq!(
        (status, &body["error"]["reason"]),
        (409, &json!("already-undone")),
        "{body}"
    );
    let (status, body) = undo(&t, &m, "alice", json!({"seq": toggle + 1})).await;
    assert_eq!(
        (status, &body["error"]["reason"]),
        (409, &json!("not-agents")),
        "{body}"
    );
    let (status, body) = undo(&t, &m, "alice", json!({"seq": 999})).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("not-found")),
        "{body}"
    );
    assert_eq!(body["error"]["reason"], "unknown-commit");
    let (status, body) = undo(&t, &m, "alice", json!({"seq": "one"})).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("invalid")),
        "{body}"
    );

    // A later commit on the same data: the answer names it and offers andLater.
    let again = agent_commit(&t, &m, json!({"type": "toggle", "id": id})).await;
    let later = t
        .human_dispatch(
            "alice",
            &m,
            json!({"type": "rename", "id": id, "title": "mine"}),
        )
        .await;
    assert_eq!(later.status, 200, "{}", later.body);
    let rename = again + 1;
    let (status, body) = undo(&t, &m, "alice", json!({"seq": again})).await;
    // The rename wrote the whole todo's title only: not in the way of the toggle.
    assert_eq!(status, 200, "{body}");
    let toggled = agent_commit(&t, &m, json!({"type": "toggle", "id": id})).await;
    t.human_dispatch("alice", &m, json!({"type": "toggle", "id": id}))
        .await;
    let (status, body) = undo(&t, &m, "alice", json!({"seq": toggled})).await;
    assert_eq!(
        (status, &body["error"]["reason"]),
        (409, &json!("later-commits")),
        "{body}"
    );
    assert_eq!(body["error"]["commits"], json!([toggled + 1]));
    assert!(
        body["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("andLater"),
        "{body}"
    );
    let (status, body) = undo(&t, &m, "alice", json!({"seq": toggled, "andLater": true})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["undid"], json!([toggled + 1, toggled]));
    let observed = t.lap(&m.token, "/observe", &json!({})).await;
    assert_eq!(todo(&observed.body, 0)["done"], json!(false));
    assert_eq!(
        todo(&observed.body, 0)["title"],
        json!("mine"),
        "commit {rename} stays"
    );
}

#[tokio::test]
async fn a_message_that_starts_effects_says_why_it_has_no_undo() {
    let t = server(Arc::new(MemoryAuditSink::new())).await;
    let m = t.mint("alice", None).await;
    let sent = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "bulkAdd", "todos": [{"title": "x"}]}}),
        )
        .await;
    assert_eq!(sent.body["status"], "dispatched", "{}", sent.body);
    let log = t
        .lap(
            &m.token,
            "/recent-actions",
            &json!({"n": 1, "kind": "dispatched"}),
        )
        .await;
    let entry = &log.body["entries"][0];
    let why = entry["noUndo"].as_str().expect("a reason");
    assert!(why.contains("effects"), "{why}");
    let (status, body) = undo(&t, &m, "alice", json!({"seq": entry["seq"]})).await;
    assert_eq!(
        (status, &body["error"]["reason"]),
        (409, &json!("not-undoable")),
        "{body}"
    );
}

#[tokio::test]
async fn without_a_store_there_is_no_undo() {
    let t = TestServer::builder(TodoApp::default()).start().await;
    let m = t.mint("alice", None).await;
    let first = t.lap(&m.token, "/observe", &json!({})).await;
    let id = todo(&first.body, 0)["id"].clone();
    let sent = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "toggle", "id": id}}),
        )
        .await;
    assert_eq!(sent.body["status"], "dispatched", "{}", sent.body);
    let log = t
        .lap(
            &m.token,
            "/recent-actions",
            &json!({"n": 1, "kind": "dispatched"}),
        )
        .await;
    let entry = &log.body["entries"][0];
    assert!(
        entry["noUndo"].as_str().unwrap().contains("no store"),
        "{entry}"
    );
    let (status, body) = undo(&t, &m, "alice", json!({"seq": entry["seq"]})).await;
    assert_eq!(
        (status, &body["error"]["reason"]),
        (409, &json!("no-undo-records")),
        "{body}"
    );
}
