//! Tests of `idempotency.rs`.

use super::*;
use crate::engine::session::retained::value_cost;
use axum::http::StatusCode;
use serde_json::json;

fn store() -> IdempotencyStore {
    IdempotencyStore::new(&HostConfig::default(), Retained::unbounded())
}

#[tokio::test]
async fn repeats_get_the_first_answer_within_the_window() {
    let store = store();
    let msg = json!({"type":"inc"});
    let Claim::First(first) = store.claim("t", "k1", &msg, 0).unwrap() else {
        panic!("first call expected")
    };
    let Claim::Repeat(rec) = store.claim("t", "k1", &msg, 10).unwrap() else {
        panic!("repeat expected")
    };
    assert!(rec.same_message(&msg));
    assert!(!rec.same_message(&json!({"type":"dec"})));
    let answer = StoredAnswer {
        status: StatusCode::OK,
        body: "{}".into(),
        headers: vec![],
    };
    first.answer(answer.clone());
    assert_eq!(rec.answer().await, Some(answer));
    // Another token is a different scope.
    assert!(matches!(
        store.claim("u", "k1", &msg, 10),
        Ok(Claim::First(_))
    ));
    // After the window the key is free again.
    assert!(matches!(
        store.claim("t", "k1", &msg, WINDOW_MS),
        Ok(Claim::First(_))
    ));
}

#[tokio::test]
async fn a_dead_first_call_answers_none() {
    let store = store();
    let msg = json!({"type":"inc"});
    let Claim::First(tx) = store.claim("t", "k", &msg, 0).unwrap() else {
        panic!()
    };
    let Claim::Repeat(rec) = store.claim("t", "k", &msg, 1).unwrap() else {
        panic!()
    };
    drop(tx);
    assert_eq!(rec.answer().await, None);
}

#[test]
fn at_most_1024_records_per_token() {
    let store = store();
    let msg = json!({"type":"inc"});
    for i in 0..=MAX_RECORDS_PER_TOKEN {
        let _ = store.claim("t", &format!("k{i}"), &msg, 0);
    }
    // k0 was dropped: claiming it again is a first call.
    assert!(matches!(
        store.claim("t", "k0", &msg, 0),
        Ok(Claim::First(_))
    ));
}

#[test]
fn records_are_bounded_in_bytes() {
    let mut config = HostConfig::default();
    config.budgets.idempotency_record_bytes = 1000;
    config.budgets.idempotency_token_bytes = 3000;
    let store = IdempotencyStore::new(&config, Retained::unbounded());
    let big = json!({"type":"x","s":"y".repeat(2000)});
    let err = store.claim("t", "k", &big, 0).unwrap_err();
    assert_eq!(err.limit, 1000);
    assert!(!err.full);
    assert_eq!(store.len(), 0);
    let msg = json!({"type":"x","s":"y".repeat(900)});
    for i in 0..3 {
        let Ok(Claim::First(first)) = store.claim("t", &format!("k{i}"), &msg, i) else {
            panic!("first call expected")
        };
        first.answer(StoredAnswer {
            status: StatusCode::OK,
            body: "{}".into(),
            headers: vec![],
        });
    }
    let err = store.claim("t", "k9", &msg, 10).unwrap_err();
    assert!(err.full);
    assert_eq!(err.limit, 3000);
    assert_eq!(err.retry_after_ms, Some(WINDOW_MS - 10));
    // Another token has its own budget.
    assert!(store.claim("u", "k9", &msg, 10).is_ok());
}

#[tokio::test]
async fn expired_records_are_swept_on_a_timer() {
    let clock = Arc::new(crate::clock::ManualClock::new(0));
    let mut config = HostConfig {
        clock: clock.clone(),
        ..HostConfig::default()
    };
    config.budgets.idempotency_sweep = Duration::from_millis(20);
    let store = IdempotencyStore::new(&config, Retained::unbounded());
    let _ = store.claim("t", "k", &json!({"type":"inc"}), 0).unwrap();
    assert_eq!(store.len(), 1);
    clock.set(WINDOW_MS);
    // A 20 ms sweep on a loaded machine: wait for it (at most 10 s), never for a fixed time.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while store.len() != 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(store.len(), 0);
    // The sweep task ends with the store.
    let weak = Arc::downgrade(&store.by_token);
    drop(store);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while weak.upgrade().is_some() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(weak.upgrade().is_none());
}

fn answer(body: &str) -> StoredAnswer {
    StoredAnswer {
        status: StatusCode::OK,
        body: body.into(),
        headers: vec![],
    }
}

/// A record is held while its first call runs, charged its answer once answered (and
/// sheddable from then on), refunded when it expires.
#[tokio::test]
async fn records_are_charged_to_the_host() {
    let retained = Retained::new(1 << 30);
    let store = IdempotencyStore::new(&HostConfig::default(), retained.clone());
    let msg = json!({"type":"inc","by":[1,2,3]});
    let Ok(Claim::First(first)) = store.claim("t", "k", &msg, 0) else {
        panic!("first call expected")
    };
    let running = retained.total();
    assert!(running > value_cost(&msg), "{running}");
    assert_eq!(retained.held(), running);
    first.answer(answer(&"x".repeat(2_000)));
    assert_eq!(retained.held(), 0);
    assert!(retained.total() >= running + 2_000, "{}", retained.total());
    sweep(&store.by_token, WINDOW_MS);
    assert_eq!((retained.total(), retained.held(), store.len()), (0, 0, 0));
}

/// A flood of keyed calls over the host's budget sheds the oldest answers; a repeat of a shed
/// record answers "no longer kept" (or "different message"), never runs again, and the newest
/// answers are replayed whole.
#[tokio::test]
async fn a_flood_sheds_the_oldest_answers_and_never_runs_them_again() {
    let budget = 200_000;
    let retained = Retained::new(budget);
    let store = IdempotencyStore::new(&HostConfig::default(), retained.clone());
    let msg = json!({"type":"inc"});
    let body = "a".repeat(1_000);
    for t in 0..10 {
        for k in 0..100 {
            let Ok(Claim::First(first)) = store.claim(&format!("t{t}"), &format!("k{k}"), &msg, 1)
            else {
                panic!("first call expected")
            };
            first.answer(answer(&format!("{t}/{k} {body}")));
            assert!(retained.total() <= budget, "{}", retained.total());
        }
    }
    // The oldest went to their keys; the newest are whole.
    let Ok(Claim::Shed(shed)) = store.claim("t0", "k0", &msg, 2) else {
        panic!("the oldest answer should be shed")
    };
    assert!(shed.same_message(&msg));
    assert!(!shed.same_message(&json!({"type":"dec"})));
    assert!(!shed.same_message(&json!({"type":"inc","by":1})));
    let Ok(Claim::Repeat(newest)) = store.claim("t9", "k99", &msg, 2) else {
        panic!("the newest answer should be kept")
    };
    assert_eq!(newest.answer().await.unwrap().body, format!("9/99 {body}"));
    // Every record is either kept whole, with its own answer, or shed: none is free again.
    let mut shed_count = 0;
    for t in 0..10 {
        for k in 0..100 {
            match store.claim(&format!("t{t}"), &format!("k{k}"), &msg, 3) {
                Ok(Claim::Shed(_)) => shed_count += 1,
                Ok(Claim::Repeat(r)) => {
                    assert_eq!(r.answer().await.unwrap().body, format!("{t}/{k} {body}"))
                }
                other => panic!("t{t}/k{k}: {other:?}"),
            }
        }
    }
    assert!(shed_count > 500, "{shed_count}");
    assert!(retained.held() > 0);
    // Past the window the keys are free again, and everything is refunded.
    sweep(&store.by_token, WINDOW_MS + 1);
    assert_eq!((retained.total(), store.len()), (0, 0));
    assert!(matches!(
        store.claim("t0", "k0", &msg, WINDOW_MS + 1),
        Ok(Claim::First(_))
    ));
}

#[test]
fn digests_follow_json_equality() {
    let a = json!({"type":"x","a":1,"b":[true,null,"s"]});
    let b: Value = serde_json::from_str(r#"{"b":[true,null,"s"],"a":1,"type":"x"}"#).unwrap();
    assert_eq!(digest(&a), digest(&b));
    assert_ne!(
        digest(&a),
        digest(&json!({"type":"x","a":1.0,"b":[true,null,"s"]}))
    );
    assert_ne!(digest(&json!(["a", "b"])), digest(&json!(["ab"])));
}
