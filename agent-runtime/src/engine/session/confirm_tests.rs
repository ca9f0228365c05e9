//! Tests of the confirmation store (`confirm.rs`): decisions, expiry, retention, budgets, and
//! merging another process's copy.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;
use tea_agent_schema::protocol::{
    ConfirmEntry, ConfirmResultResponse, ConfirmStatus, RejectReason,
};

use super::confirm::*;
use serde_json::json;

fn text(v: Value) -> Arc<RawValue> {
    Arc::from(serde_json::value::to_raw_value(&v).unwrap())
}

fn entry(id: &str, at: u64) -> ConfirmEntry {
    ConfirmEntry {
        id: id.into(),
        variant: "deleteAccount".into(),
        payload: json!({"userId":"u1"}),
        intent: "delete account".into(),
        reason: None,
        proposed_at: at,
        status: ConfirmStatus::Pending,
        tid: None,
        edited_payload: None,
    }
}

#[test]
fn proposals_stay_in_order_and_decisions_are_final() {
    let mut store = ConfirmStore::new(600_000);
    store.propose(entry("a", 0), 0).unwrap();
    store.propose(entry("b", 0), 0).unwrap();
    assert_eq!(store.pending().len(), 2);
    store.approve("a", None, 1).unwrap();
    assert_eq!(
        store.approve("a", None, 2),
        Err(DecisionError::AlreadyDecided(ConfirmStatus::Approved))
    );
    assert_eq!(
        store.reject("a", 2),
        Err(DecisionError::AlreadyDecided(ConfirmStatus::Approved))
    );
    store.reject("b", 3).unwrap();
    assert_eq!(
        store.approve("b", None, 4).unwrap_err().to_string(),
        "already rejected"
    );
    assert_eq!(store.reject("zz", 4), Err(DecisionError::NotFound));
    assert_eq!(
        store.outcome("b"),
        Some(ConfirmResultResponse::Rejected {
            reason: RejectReason::UserCancelled
        })
    );
    // Approved but not yet committed reads as pending.
    assert_eq!(
        store.outcome("a"),
        Some(ConfirmResultResponse::StillPending)
    );
    store.mark_committed("a", text(json!({"n":1})), None, 1);
    assert!(matches!(
        store.outcome("a"),
        Some(ConfirmResultResponse::Confirmed { .. })
    ));
}

#[test]
fn only_the_proposing_token_withdraws_a_pending_entry() {
    let mut store = ConfirmStore::new(600_000);
    let mut mine = entry("a", 0);
    mine.tid = Some("t1".into());
    store.propose(mine.clone(), 0).unwrap();
    mine.id = "b".into();
    store.propose(mine, 0).unwrap();
    assert_eq!(store.pending_of("t1").len(), 2);
    assert!(store.pending_of("t2").is_empty());
    assert_eq!(store.withdraw("zz", "t1", 1), Err(WithdrawError::NotFound));
    assert_eq!(store.withdraw("a", "t2", 1), Err(WithdrawError::NotYours));
    let withdrawn = store.withdraw("a", "t1", 1).unwrap();
    assert_eq!(withdrawn.status, ConfirmStatus::Withdrawn);
    assert_eq!(store.outcome("a"), Some(ConfirmResultResponse::Withdrawn));
    assert_eq!(
        store.withdraw("a", "t1", 2),
        Err(WithdrawError::AlreadyDecided(ConfirmStatus::Withdrawn))
    );
    assert_eq!(
        store.approve("a", None, 2),
        Err(DecisionError::AlreadyDecided(ConfirmStatus::Withdrawn))
    );
    store.reject("b", 3).unwrap();
    assert_eq!(
        store.withdraw("b", "t1", 4),
        Err(WithdrawError::AlreadyDecided(ConfirmStatus::Rejected))
    );
    assert!(store.pending().is_empty());
    // Stored and read back, the withdrawal stays.
    let mut copy = ConfirmStore::new(600_000);
    assert!(copy.restore_json(&store.to_json()));
    assert_eq!(copy.outcome("a"), Some(ConfirmResultResponse::Withdrawn));
}

#[test]
fn expiry_is_strictly_after_max_age() {
    let mut store = ConfirmStore::new(6000);
    store.propose(entry("a", 1000), 1000).unwrap();
    store.propose(entry("b", 1000), 1000).unwrap();
    store.approve("b", None, 1500).unwrap();
    assert!(store.sweep(7000, true).is_empty());
    assert_eq!(store.pending().len(), 1);
    let expired = store.sweep(7001, true);
    assert_eq!(expired.len(), 1);
    assert_eq!(
        store.outcome("a"),
        Some(ConfirmResultResponse::Rejected {
            reason: RejectReason::Timeout
        })
    );
    assert_eq!(store.get("b").unwrap().status, ConfirmStatus::Approved);
}

#[test]
fn decided_entries_are_forgotten_after_five_minutes() {
    let mut store = ConfirmStore::new(600_000);
    store.propose(entry("a", 0), 0).unwrap();
    store.reject("a", 10).unwrap();
    store.sweep(10 + DECIDED_RETENTION_MS - 1, true);
    assert!(store.get("a").is_some());
    store.sweep(10 + DECIDED_RETENTION_MS, true);
    assert!(store.get("a").is_none());
}

#[test]
fn pending_entries_are_bounded_in_count_and_bytes() {
    let mut store = ConfirmStore::with_budgets(600_000, 3, 1_000_000);
    for i in 0..3 {
        store.propose(entry(&format!("e{i}"), 0), 0).unwrap();
    }
    let err = store.propose(entry("e3", 0), 100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the number of pending confirmations is 4; the limit is 3"
    );
    assert_eq!(err.retry_after_ms, Some(600_000 + 1 - 100));
    // A decision frees a place.
    store.reject("e0", 200).unwrap();
    store.propose(entry("e3", 0), 200).unwrap();

    let mut store = ConfirmStore::with_budgets(600_000, 100, 1_000);
    let mut big = entry("big", 0);
    big.payload = serde_json::json!({"id": "x".repeat(900)});
    let err = store.propose(big, 0).unwrap_err();
    assert!(err.full);
    assert!(err.to_string().ends_with("; the limit is 1000"), "{err}");
    assert!(store.pending().is_empty());
}

#[test]
fn a_foreign_copy_replaces_what_was_stored_and_keeps_unwritten_proposals() {
    // Both replicas stored [a]; here "b" was proposed and not yet written; the other
    // replica approved "a" and committed it.
    let mut here = ConfirmStore::new(600_000);
    here.propose(entry("a", 0), 0).unwrap();
    let stored = here.to_json();
    here.propose(entry("b", 0), 1).unwrap();
    let mut there = ConfirmStore::new(600_000);
    assert!(there.restore_json(&stored));
    there.approve("a", None, 2).unwrap();
    there.mark_committed("a", text(serde_json::json!({"n": 1})), None, 1);
    let foreign = there.to_json();

    assert!(here.merge_foreign(&foreign, &stored, 3));
    assert!(matches!(
        here.outcome("a"),
        Some(ConfirmResultResponse::Confirmed { .. })
    ));
    assert_eq!(here.outcome("b"), Some(ConfirmResultResponse::StillPending));
    // An entry the other replica forgot (it was in `stored`) goes.
    let none = ConfirmStore::new(600_000).to_json();
    assert!(here.merge_foreign(&none, &foreign, 3));
    assert!(here.get("a").is_none());
    assert!(here.get("b").is_some());
    // Nothing new: nothing changes; unparsable text changes nothing.
    assert!(!here.merge_foreign(&here.to_json(), &here.to_json(), 3));
    assert!(!here.merge_foreign("not json", &none, 3));
}

#[test]
fn a_merge_never_undoes_a_decision_nor_replaces_a_stored_one() {
    let mut stored = ConfirmStore::new(600_000);
    stored.propose(entry("a", 0), 0).unwrap();
    stored.propose(entry("b", 0), 0).unwrap();
    let pending = stored.to_json();
    // Here "a" was approved and committed; the store still says pending.
    let mut here = ConfirmStore::new(600_000);
    assert!(here.restore_json(&pending));
    here.approve("a", None, 1).unwrap();
    here.mark_committed("a", text(json!({"n": 1})), None, 1);
    assert!(!here.merge_foreign(&pending, &pending, 2));
    assert!(matches!(
        here.outcome("a"),
        Some(ConfirmResultResponse::Confirmed { .. })
    ));
    // The store rejected "b" while here it was withdrawn: the stored decision wins.
    here.withdraw("b", "t", 2).unwrap_err();
    let mut there = ConfirmStore::new(600_000);
    assert!(there.restore_json(&pending));
    there.reject("b", 2).unwrap();
    let mut mine = ConfirmStore::new(600_000);
    assert!(mine.restore_json(&pending));
    mine.decide("b", &Decision::Expire, 3).unwrap();
    assert!(mine.merge_foreign(&there.to_json(), &pending, 4));
    assert_eq!(
        mine.outcome("b"),
        Some(ConfirmResultResponse::Rejected {
            reason: RejectReason::UserCancelled
        })
    );
    // What the store gets next keeps both decisions, and a decision on one decided
    // already is refused with the decision that won.
    let mut next = here.merged_with(&there.to_json(), 5);
    assert_eq!(next.get("a").unwrap().status, ConfirmStatus::Approved);
    assert_eq!(next.get("b").unwrap().status, ConfirmStatus::Rejected);
    assert_eq!(
        next.decide(
            "b",
            &Decision::Approve {
                edited_payload: None
            },
            5
        ),
        Err(WithdrawError::AlreadyDecided(ConfirmStatus::Rejected))
    );
}

#[test]
fn a_decision_past_the_maximum_age_is_refused_as_expired() {
    let mut store = ConfirmStore::new(1000);
    store.propose(entry("a", 0), 0).unwrap();
    assert_eq!(store.next_due(), Some(1001));
    assert!(store.due(1000).is_empty());
    assert_eq!(store.due(1001), ["a".to_string()]);
    assert_eq!(
        store.reject("a", 1001),
        Err(DecisionError::AlreadyDecided(ConfirmStatus::Expired))
    );
    // Not expired by a sweep that does not expire (a durable session's).
    assert!(store.sweep(1001, false).is_empty());
    assert_eq!(
        store.outcome("a"),
        Some(ConfirmResultResponse::StillPending)
    );
    assert_eq!(store.sweep(1001, true).len(), 1);
}

/// The confirmations are charged to the host's budget whenever they change (held: never shed),
/// an approved entry's state text included, and refunded when they go.
#[test]
fn confirmations_are_charged_to_the_host() {
    let retained = super::retained::Retained::new(10_000_000);
    let confirms =
        super::pending::Confirms::new(ConfirmStore::new(600_000), retained.session().held());
    let empty = retained.total();
    {
        let mut store = confirms.lock();
        store.propose(entry("a", 0), 0).unwrap();
        store.propose(entry("b", 0), 0).unwrap();
    }
    let two = retained.total();
    assert!(two > empty + 2 * 32, "{two}");
    assert_eq!(retained.held(), two);
    assert_eq!(two, confirms.lock().heap_cost());
    // Reading changes nothing.
    assert_eq!(confirms.lock().pending().len(), 2);
    assert_eq!(retained.total(), two);
    {
        let mut store = confirms.lock();
        store.approve("a", None, 1).unwrap();
        store.mark_committed("a", text(json!({"count": "x".repeat(50_000)})), None, 1);
    }
    assert!(retained.total() > two + 50_000, "{}", retained.total());
    confirms.lock().clear();
    assert!(retained.total() < two);
    drop(confirms);
    assert_eq!((retained.total(), retained.held()), (0, 0));
}
