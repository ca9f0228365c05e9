//! The registry's bookkeeping, without rmcp's transport.

use super::*;
use crate::surface::mcp::endpoint::bound_token::BoundToken;
use std::time::Duration;

fn sessions(max: usize, provisional: usize, per_token: usize) -> Arc<McpSessions> {
    Arc::new(McpSessions::new(&McpOptions {
        max_sessions: max,
        max_unauthenticated_sessions: provisional,
        max_sessions_per_token: per_token,
        idle_ttl: Duration::from_millis(1000),
        unauthenticated_max_lifetime: Duration::from_millis(500),
        ..McpOptions::default()
    }))
}

fn bound(tid: &str) -> Option<BoundToken> {
    Some(BoundToken {
        tid: tid.into(),
        token_hash: format!("hash-{tid}"),
        token: Some(format!("agt_{tid}")),
    })
}

fn open(s: &Arc<McpSessions>, id: &str, now: u64, binding: Option<BoundToken>) -> Vec<String> {
    let (r, evicted) = s.reserve(binding.is_none()).expect("a slot");
    r.commit(id.into(), now, binding);
    evicted
}

#[test]
fn provisional_pressure_evicts_the_least_recently_used_provisional_session() {
    let s = sessions(8, 2, 8);
    open(&s, "a", 0, None);
    open(&s, "b", 0, None);
    assert!(s.touch("a", 0));
    assert_eq!(open(&s, "c", 0, None), vec!["b".to_string()]);
    assert!(s.is_live("a") && s.is_live("c") && !s.is_live("b"));
    assert_eq!(s.live_provisional(), 2);
}

#[tokio::test]
async fn a_session_being_rebuilt_is_not_taken_for_an_ended_one() {
    // rmcp's manager holds none of these sessions: "a" ended, "r" is being rebuilt.
    let s = sessions(8, 8, 8);
    open(&s, "a", 0, bound("t1"));
    let (r, _) = s.reserve(false).unwrap();
    r.commit_rebuilding("r".into(), 0, bound("t2").unwrap());
    s.forget_ended().await;
    assert!(!s.is_live("a"));
    assert!(s.is_live("r"));
    assert_eq!(s.bound_token("r").map(|b| b.tid), Some("t2".to_string()));
    // Once the rebuilding request has its answer, rmcp holds it or it is gone.
    s.rebuilt("r");
    s.forget_ended().await;
    assert!(!s.is_live("r"));
}

#[test]
fn authenticated_sessions_are_never_evicted() {
    let s = sessions(2, 2, 8);
    open(&s, "a", 0, bound("t1"));
    open(&s, "b", 0, bound("t2"));
    assert_eq!(s.reserve(true).err(), Some(AtCapacity));
    assert_eq!(s.reserve(false).err(), Some(AtCapacity));
    assert_eq!(s.live(), 2);
    assert_eq!(s.reserved(), 0);
}

#[test]
fn reservations_count_and_are_released_exactly_once() {
    let s = sessions(2, 2, 8);
    let (r1, _) = s.reserve(true).unwrap();
    let (r2, _) = s.reserve(true).unwrap();
    assert_eq!(s.reserved(), 2);
    // In-flight reservations are not evictable.
    assert!(s.reserve(true).is_err());
    drop(r1);
    assert_eq!(s.reserved(), 1);
    r2.commit("x".into(), 0, None);
    assert_eq!((s.reserved(), s.live()), (0, 1));
}

#[test]
fn sweep_expires_by_lifetime_and_idle_ttl() {
    let s = sessions(8, 8, 8);
    open(&s, "p", 0, None);
    open(&s, "a", 0, bound("t"));
    // Traffic does not extend a provisional session.
    assert!(s.touch("p", 400));
    assert!(s.touch("a", 400));
    assert_eq!(s.sweep(499), Vec::<String>::new());
    assert_eq!(s.sweep(500), vec!["p".to_string()]);
    assert_eq!(s.sweep(1399), Vec::<String>::new());
    assert_eq!(s.sweep(1400), vec!["a".to_string()]);
    assert_eq!(s.live(), 0);
}

#[tokio::test]
async fn sessions_whose_rmcp_side_ended_are_forgotten() {
    let s = sessions(8, 8, 8);
    let (id, _transport) = s.manager.create_session().await.expect("created");
    open(&s, &id, 0, None);
    open(&s, "never-created-in-rmcp", 0, None);
    s.forget_ended().await;
    assert_eq!(s.live_ids(), vec![id.to_string()]);
    assert_eq!(s.transport_sessions().await, 1);
    // The worker ends on its own: rmcp closes its side, the slot is freed on the next sweep.
    s.manager.close_session(&id).await.expect("closed");
    s.forget_ended().await;
    assert_eq!((s.live(), s.transport_sessions().await), (0, 0));
}

#[test]
fn per_token_cap() {
    let s = sessions(8, 8, 2);
    open(&s, "a", 0, bound("t"));
    open(&s, "b", 0, bound("t"));
    assert_eq!(s.make_room_for_token("t"), vec!["a".to_string()]);
    open(&s, "c", 0, bound("t"));
    // connect_session binds a provisional session and evicts the token's LRU other one.
    open(&s, "d", 0, None);
    assert_eq!(
        s.bind("d", bound("t").unwrap()),
        Some(vec!["b".to_string()])
    );
    assert!(s.is_authenticated("d"));
    assert_eq!(s.bound_token("d").unwrap().tid, "t");
    assert_eq!(s.bind("gone", bound("t").unwrap()), None);
    s.unbind("d", 0);
    assert!(s.bound_token("d").is_none() && !s.is_authenticated("d"));
}

#[test]
fn an_unbound_session_is_provisional_and_still_counts_towards_its_token() {
    let s = sessions(3, 3, 2);
    open(&s, "a", 0, None);
    s.bind("a", bound("t").unwrap());
    s.unbind("a", 100);
    open(&s, "b", 0, None);
    s.bind("b", bound("t").unwrap());
    s.unbind("b", 100);
    // The token's share (2) holds unbound sessions too: binding a third evicts the oldest.
    open(&s, "c", 0, None);
    assert_eq!(
        s.bind("c", bound("t").unwrap()),
        Some(vec!["a".to_string()])
    );
    // An unbound session gives way to a newcomer; a bound one does not.
    assert_eq!(open(&s, "d", 0, None), Vec::<String>::new());
    assert_eq!(open(&s, "e", 0, None), vec!["b".to_string()]);
    assert!(s.is_live("c"));
    // Its provisional lifetime runs from when it was unbound.
    s.bind("d", bound("u").unwrap());
    s.unbind("d", 400);
    assert!(!s.sweep(899).contains(&"d".to_string()));
    assert!(s.sweep(900).contains(&"d".to_string()));
    // A revocation ends what the token owns, bound or not.
    s.unbind("c", 900);
    assert_eq!(s.owners(), vec!["t".to_string()]);
    assert_eq!(s.remove_owned_by("t"), vec!["c".to_string()]);
    assert!(s.owners().is_empty());
}
