//! Tests of the numbered session events (`events.rs`).

use super::*;
use crate::engine::session::activity::entry;
use crate::engine::session::SessionHold;
use tea_agent_schema::protocol::LogKind;

use serde_json::json;

/// The snapshot of commit `seq` of a counter at `n`, reached by setting the count.
fn snap(seq: u64, n: i64) -> Published {
    let patch = vec![PatchOp::Replace {
        path: "/count".into(),
        value: json!(n),
    }];
    Published::new(
        seq,
        Arc::new(json!({ "count": n }).into()),
        patch.into(),
        crate::algo::route_gates::GateValues::unknown(&Default::default()),
    )
}

fn state(seq: u64, n: i64) -> EventBody {
    EventBody::State(snap(seq, n))
}

/// A log entry of `kind` at `at`, as the session publishes it: its JSON text.
fn log_text(kind: LogKind, at: u64) -> Arc<str> {
    Arc::from(serde_json::to_string(&entry(kind, at)).unwrap())
}

fn narrate(hub: &SharedHub, at: u64) -> u64 {
    hub.lock()
        .publish(EventBody::Log(log_text(LogKind::Narrate, at)))
}

fn shared(hub: EventHub) -> SharedHub {
    Arc::new(Mutex::new(hub))
}

fn big_narration(at: u64, bytes: usize) -> EventBody {
    let mut e = entry(LogKind::Narrate, at);
    e.detail = Some("x".repeat(bytes));
    EventBody::Log(Arc::from(serde_json::to_string(&e).unwrap()))
}

#[tokio::test]
async fn the_history_keeps_its_byte_budget_and_skips_oversized_events() {
    let retained = crate::engine::session::retained::Retained::unbounded();
    let hub = shared(EventHub::with_budgets(
        256,
        20_000,
        100_000,
        snap(0, 0),
        retained.charge(),
    ));
    for i in 0..50 {
        hub.lock().publish(big_narration(i, 10_000));
    }
    assert!(hub.lock().history_bytes() <= 100_000);
    // Too old now: a snapshot.
    let mut sub = subscribe(&hub, Some("1"), vec![], SessionHold::unheld());
    assert_eq!(sub.next().await.unwrap().data()["snapshot"], json!(true));
    // Within the kept history: a replay.
    let mut sub = subscribe(&hub, Some("45"), vec![], SessionHold::unheld());
    assert_eq!(sub.next().await.unwrap().id, 46);
    // An event over the per-event budget is not kept: nothing replays across it.
    assert!(retained.total() > 0);
    hub.lock().publish(big_narration(99, 30_000));
    assert_eq!(hub.lock().history_bytes(), 0);
    // Every dropped entry refunded what it was charged (it used to refund its JSON size).
    assert_eq!(retained.total(), 0);
    let mut sub = subscribe(&hub, Some("45"), vec![], SessionHold::unheld());
    assert_eq!(sub.next().await.unwrap().data()["snapshot"], json!(true));
}

#[tokio::test]
async fn a_replay_is_read_lazily_and_ends_when_the_history_moves_past_it() {
    let hub = shared(EventHub::new(4, snap(0, 0)));
    for i in 0..4 {
        narrate(&hub, i);
    }
    let mut sub = subscribe(&hub, Some("0"), vec![], SessionHold::unheld());
    assert_eq!(sub.next().await.unwrap().id, 1);
    // Four more events push 2..4 out before the subscriber reads them.
    for i in 0..4 {
        narrate(&hub, i);
    }
    assert_eq!(sub.next().await, None);
}

#[tokio::test]
async fn a_subscriber_that_does_not_read_is_dropped() {
    let hub = shared(EventHub::new(4, snap(0, 0)));
    let mut sub = subscribe(&hub, Some("0"), vec![], SessionHold::unheld());
    for i in 0..(LIVE_CAPACITY as u64 + 10) {
        narrate(&hub, i);
    }
    assert_eq!(sub.next().await, None);
}

#[tokio::test]
async fn replay_sends_missed_logs_and_one_current_state() {
    let hub = shared(EventHub::new(256, snap(0, 0)));
    hub.lock().publish(state(1, 1));
    let n = narrate(&hub, 1);
    narrate(&hub, 2);
    narrate(&hub, 3);
    narrate(&hub, 4);
    hub.lock().publish(state(2, 2));
    hub.lock().publish(state(3, 3));
    let mut sub = subscribe(&hub, Some(&n.to_string()), vec![], SessionHold::unheld());
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(sub.next().await.unwrap());
    }
    let names: Vec<_> = got.iter().map(|e| e.name).collect();
    assert_eq!(names, vec!["log", "log", "log", "state"]);
    let ids: Vec<_> = got.iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![n + 1, n + 2, n + 3, n + 5]);
    assert_eq!(got[3].data(), json!({"state":{"count":3}}));
}

#[tokio::test]
async fn equal_id_sends_nothing_until_the_next_event() {
    let hub = shared(EventHub::new(256, snap(0, 0)));
    let h = hub.lock().publish(state(1, 1));
    let mut sub = subscribe(&hub, Some(&h.to_string()), vec![], SessionHold::unheld());
    hub.lock().publish(state(2, 2));
    let e = sub.next().await.unwrap();
    assert_eq!(e.id, h + 1);
    // First state on this connection: no diff.
    assert_eq!(e.data(), json!({"state":{"count":2}}));
    hub.lock().publish(state(3, 5));
    let e = sub.next().await.unwrap();
    assert_eq!(
        e.data(),
        json!({"state":{"count":5},"stateDiff":[{"op":"replace","path":"/count","value":5}]})
    );
}

#[tokio::test]
async fn too_old_bad_or_future_ids_get_a_snapshot() {
    let hub = shared(EventHub::new(4, snap(0, 0)));
    for i in 0..10 {
        narrate(&hub, i);
    }
    for last in [Some("1"), Some("abc"), Some("99"), None] {
        let mut sub = subscribe(&hub, last, vec![], SessionHold::unheld());
        let e = sub.next().await.unwrap();
        assert_eq!(e.name, "state");
        assert_eq!(e.id, 10);
        assert_eq!(e.data()["snapshot"], json!(true));
    }
    // Still within the kept history: replay.
    let mut sub = subscribe(&hub, Some("7"), vec![], SessionHold::unheld());
    assert_eq!(sub.next().await.unwrap().id, 8);
}

#[tokio::test]
async fn a_fleets_session_numbers_state_events_by_commit() {
    let hub = shared(EventHub::new(8, snap(5, 5)));
    hub.lock().number_by_commit(5);
    let base = 5 << COMMIT_ID_SHIFT;
    assert_eq!(hub.lock().newest_id(), base);
    // Nothing before the load is replayed here: ids of another replica resume from the log.
    assert_eq!(resume_point(&hub, Some("3")), Some(0));
    assert_eq!(resume_point(&hub, Some(&base.to_string())), None);
    assert_eq!(narrate(&hub, 1), base + 1);
    let six = hub.lock().publish(state(6, 6));
    assert_eq!(six, 6 << COMMIT_ID_SHIFT);
    assert_eq!(commit_of(six), 6);
    // A commit other replicas made arrives as one jump: its id names the newest commit.
    let nine = hub.lock().publish(state(9, 9));
    assert_eq!(nine, 9 << COMMIT_ID_SHIFT);
    assert_eq!(narrate(&hub, 2), nine + 1);
    // A replay here reads the history across the gaps in its ids.
    let mut sub = subscribe(&hub, Some(&base.to_string()), vec![], SessionHold::unheld());
    assert_eq!(sub.next().await.unwrap().id, base + 1);
    let newest_state = sub.next().await.unwrap();
    assert_eq!((newest_state.id, newest_state.name), (nine, "state"));
    assert_eq!(newest_state.data()["state"]["count"], json!(9));
    assert_eq!(sub.next().await.unwrap().id, nine + 1);
    // Another replica's id after commit 7, within what this history covers: replayed here
    // (the newest state is after it); one past the newest resumes from the log.
    let elsewhere = (7u64 << COMMIT_ID_SHIFT) + 3;
    assert_eq!(resume_point(&hub, Some(&elsewhere.to_string())), None);
    let too_new = (12u64 << COMMIT_ID_SHIFT).to_string();
    assert_eq!(resume_point(&hub, Some(&too_new)), Some(12));
    // A resumed subscription: the state now, its patch from the state seen, then live.
    let diff = vec![PatchOp::Replace {
        path: "/count".into(),
        value: json!(9),
    }];
    assert!(subscribe_resumed(&hub, 8, diff.clone(), vec![], SessionHold::unheld()).is_none());
    let mut sub = subscribe_resumed(&hub, 9, diff, vec![], SessionHold::unheld()).unwrap();
    let first = sub.next().await.unwrap();
    assert_eq!(first.name, "state");
    assert_eq!(first.data()["resumed"], json!(true));
    assert_eq!(first.data()["stateDiff"][0]["value"], json!(9));
    assert!(first.data().get("snapshot").is_none());
    let ten = hub.lock().publish(state(10, 10));
    assert_eq!(sub.next().await.unwrap().id, ten);
}
