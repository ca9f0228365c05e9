//! Long effects over real HTTP (`docs/semantics.md` §5.6, `docs/lap.md` §5.9), on the todo
//! example's `import`: a drain waits for the effect its message started; `observe`, `/wait
//! {progress}` and the human's view show its progress; `/cancel` by seq, by idempotencyKey or
//! all stops it (the effect observes the signal, the drain says `cancelled`, the log and the
//! audit say who); another token's work is refused (403), finished work is `not-running`; the
//! human cancels any effect of the session; an effect that ignores the signal is aborted after
//! the grace.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_examples::todo::TodoApp;
use agent_tests::{Minted, TestServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_runtime::app::{App, EffectContext, EffectError};
use tea_agent_runtime::security::MemoryAuditSink;
use tea_agent_runtime::AgentMsg;

/// Polls `/observe` as `m` until its `work` has an entry `pick` accepts.
async fn work_until<A: App>(t: &TestServer<A>, m: &Minted, pick: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let observed = t.lap(&m.token, "/observe", &json!({})).await;
        if let Some(w) = observed.body["work"]
            .as_array()
            .and_then(|w| w.iter().find(|w| pick(w)))
        {
            return w.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no such work showed up");
}

/// Polls `/observe` as `m` until nothing runs.
async fn until_idle<A: App>(t: &TestServer<A>, m: &Minted) {
    for _ in 0..500 {
        let observed = t.lap(&m.token, "/observe", &json!({})).await;
        if observed.body.get("work").is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the work did not end");
}

async fn todos<A: App>(t: &TestServer<A>, m: &Minted) -> usize {
    let state = t.lap(&m.token, "/state", &json!({})).await;
    state.body["state"]["todos"]
        .as_array()
        .expect("todos")
        .len()
}

fn cancelled_entries(log: &Value) -> Vec<Value> {
    log["entries"].as_array().expect("entries").clone()
}

#[tokio::test]
async fn a_drain_waits_for_the_import_and_its_progress_shows_meanwhile() {
    let t = TestServer::builder(TodoApp::default()).start().await;
    let m = t.mint("alice", None).await;
    let waiting = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg": {"type": "import", "count": 50}, "timeoutMs": 10000}),
    );
    // `/wait {progress: true}` answers with the running work as it moves.
    let waited = t
        .lap(
            &m.token,
            "/wait",
            &json!({"progress": true, "timeoutMs": 3000}),
        )
        .await;
    assert_eq!(waited.status, 200, "{}", waited.body);
    assert!(
        ["progress", "changed"].contains(&waited.body["status"].as_str().unwrap()),
        "{}",
        waited.body
    );
    let w = work_until(&t, &m, |w| w["progress"]["done"].as_u64() > Some(0)).await;
    assert_eq!(w["startedBy"], "agent", "{w}");
    assert_eq!(w["tid"], m.tid.as_str(), "{w}");
    assert_eq!(w["variant"], "import", "{w}");
    assert_eq!(w["intent"], "import todos", "{w}");
    assert_eq!(w["progress"]["total"], 50, "{w}");
    // The human's view shows it too.
    let view = t
        .get(
            &format!("/agent/human/sessions/{}", m.session_id),
            Some("alice"),
        )
        .await;
    assert!(view.body["work"].as_array().is_some(), "{}", view.body);

    let answer = waiting.await.expect("the dispatch answers");
    assert_eq!(answer.body["status"], "dispatched", "{}", answer.body);
    let drain = &answer.body["drain"];
    assert_eq!(drain["timedOut"], false, "{drain}");
    assert!(drain.get("cancelled").is_none(), "{drain}");
    // Its answer comes after the whole import: 2 todos at start, 50 imported.
    assert_eq!(todos(&t, &m).await, 52);
    assert!(drain["durationMs"].as_u64().unwrap() >= 400, "{drain}");
    until_idle(&t, &m).await;
}

#[tokio::test]
async fn an_agent_cancels_its_own_work_by_seq_and_key_and_no_one_elses() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = TestServer::builder(TodoApp::default())
        .audit(audit.clone())
        .start()
        .await;
    let a = t.mint("alice", None).await;
    let b = t.mint("alice", Some(&a.session_id)).await;

    // By seq: the seq of the commit that started it (an `idle` answer's).
    let started = t
        .lap(
            &a.token,
            "/message",
            &json!({"msg": {"type": "import", "count": 1000}, "waitFor": "idle"}),
        )
        .await;
    let seq = started.body["seq"].as_u64().expect("seq");
    let w = work_until(&t, &a, |w| w["seq"] == seq).await;
    let refused = t.lap(&b.token, "/cancel", &json!({"seq": seq})).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        refused.body["error"]["code"], "forbidden",
        "{}",
        refused.body
    );
    let none = t.lap(&b.token, "/cancel", &json!({"all": true})).await;
    assert_eq!(none.body, json!({"status": "not-running", "cancelled": []}));
    let cancelled = t.lap(&a.token, "/cancel", &json!({"seq": seq})).await;
    assert_eq!(
        cancelled.body,
        json!({"status": "cancelled", "cancelled": [w["id"]]})
    );
    until_idle(&t, &a).await;
    // The effect saw the signal: the import stopped well short of 1000.
    assert!(todos(&t, &a).await < 500);
    let again = t.lap(&a.token, "/cancel", &json!({"seq": seq})).await;
    assert_eq!(again.body["status"], "not-running", "{}", again.body);

    // By key, while the dispatch waits: its drain says `cancelled`.
    let waiting = t.spawn_lap(
        &a.token,
        "/message",
        json!({"msg": {"type": "import", "count": 1000}, "idempotencyKey": "import-1",
               "timeoutMs": 20000}),
    );
    let w = work_until(&t, &a, |w| w["progress"]["done"].as_u64() > Some(0)).await;
    let bad = t.lap(&a.token, "/cancel", &json!({})).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let by_key = t
        .lap(&a.token, "/cancel", &json!({"idempotencyKey": "import-1"}))
        .await;
    assert_eq!(by_key.body["status"], "cancelled", "{}", by_key.body);
    let answer = waiting.await.expect("the dispatch answers");
    let drain = &answer.body["drain"];
    assert_eq!(drain["timedOut"], false, "{drain}");
    assert_eq!(
        drain["cancelled"],
        json!([{"id": w["id"], "by": "agent"}]),
        "{drain}"
    );

    // The log and the audit say who.
    let log = t
        .lap(&a.token, "/recent-actions", &json!({"kind": "cancelled"}))
        .await;
    let entries = cancelled_entries(&log.body);
    assert_eq!(entries.len(), 2, "{}", log.body);
    assert_eq!(entries[0]["detail"], "cancelled by the agent");
    assert_eq!(entries[0]["tid"], a.tid.as_str());
    assert_eq!(entries[0]["intent"], "import todos");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let audited: Vec<_> = audit
        .entries()
        .into_iter()
        .filter(|e| e.event.as_str() == "work-cancelled")
        .collect();
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert_eq!(audited[0].detail["by"], "agent");
}

#[tokio::test]
async fn the_human_cancels_any_effect_of_the_session() {
    let t = TestServer::builder(TodoApp::default()).start().await;
    let m = t.mint("alice", None).await;
    let path = format!("/agent/human/sessions/{}/dispatch", m.session_id);
    let sent = t
        .post_json(
            &path,
            Some("alice"),
            None,
            &json!({"msg": {"type": "import", "count": 1000}, "waitFor": "none"}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let w = work_until(&t, &m, |w| w["startedBy"] == "human").await;
    // Not the agent's to cancel.
    let refused = t.lap(&m.token, "/cancel", &json!({"work": w["id"]})).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let cancel = format!(
        "/agent/human/sessions/{}/work/{}/cancel",
        m.session_id, w["id"]
    );
    let other = t
        .post_json(&cancel, Some("mallory"), None, &json!({}))
        .await;
    assert_ne!(other.status, 200, "{}", other.body);
    let done = t.post_json(&cancel, Some("alice"), None, &json!({})).await;
    assert_eq!(done.body, json!({"status": "cancelled"}));
    until_idle(&t, &m).await;
    let again = t.post_json(&cancel, Some("alice"), None, &json!({})).await;
    assert_eq!(again.body, json!({"status": "not-running"}));
    let log = t
        .lap(&m.token, "/recent-actions", &json!({"kind": "cancelled"}))
        .await;
    assert_eq!(
        cancelled_entries(&log.body)[0]["detail"],
        "cancelled by the user"
    );
}

/// An app whose one effect never ends and never looks at its cancellation signal.
struct Hung {
    dropped: Arc<AtomicBool>,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct HungState {
    n: i64,
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum HungMsg {
    /// @intent("start work that never ends")
    Hang,
}

/// Sets its flag when dropped: the effect's future was dropped (its task aborted).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl App for Hung {
    type State = HungState;
    type Msg = HungMsg;
    type Effect = ();

    fn init(&self) -> (HungState, Vec<()>) {
        (HungState { n: 0 }, Vec::new())
    }

    fn update(&self, state: &mut HungState, _: HungMsg) -> Vec<()> {
        state.n += 1;
        vec![()]
    }

    fn run_effect(
        &self,
        _: (),
        _: EffectContext<HungMsg>,
    ) -> impl std::future::Future<Output = Result<(), EffectError>> + Send + 'static {
        let flag = DropFlag(self.dropped.clone());
        async move {
            let _flag = flag;
            std::future::pending::<()>().await;
            Ok(())
        }
    }
}

#[tokio::test]
async fn a_hung_effect_is_aborted_after_the_grace() {
    let dropped = Arc::new(AtomicBool::new(false));
    let t = TestServer::builder(Hung {
        dropped: dropped.clone(),
    })
    .config(|c| c.cancel_grace = Duration::from_millis(300))
    .start()
    .await;
    let m = t.mint("alice", None).await;
    let waiting = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg": {"type": "hang"}, "timeoutMs": 20000}),
    );
    let w = work_until(&t, &m, |_| true).await;
    let cancelled = t.lap(&m.token, "/cancel", &json!({"all": true})).await;
    assert_eq!(cancelled.body["status"], "cancelled", "{}", cancelled.body);
    // Asked to stop: listed as cancelling until the grace ends.
    let still = work_until(&t, &m, |w| w["cancelling"] == true).await;
    assert_eq!(still["id"], w["id"]);
    assert!(!dropped.load(Ordering::SeqCst));
    let answer = waiting.await.expect("the dispatch answers");
    let drain = &answer.body["drain"];
    assert_eq!(
        drain["cancelled"],
        json!([{"id": w["id"], "by": "agent", "aborted": true}]),
        "{drain}"
    );
    assert!(drain["durationMs"].as_u64().unwrap() < 5000, "{drain}");
    until_idle(&t, &m).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "the effect's task was aborted"
    );
    let log = t
        .lap(&m.token, "/recent-actions", &json!({"kind": "cancelled"}))
        .await;
    assert_eq!(
        cancelled_entries(&log.body)[0]["detail"],
        "cancelled by the agent; aborted after the grace"
    );
}
