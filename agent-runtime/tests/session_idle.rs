//! Idle expiry never closes a session someone holds (`docs/semantics.md` §0): a
//! [`SessionHold`](tea_agent_runtime::session::SessionHold) (what the pairing client and an app's
//! own UI keep) or a live subscription keeps it open past the idle time; once released it is
//! closed as idle like any other.

use std::sync::Arc;

use agent_examples::counter::Counter;
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
use tea_agent_runtime::{config::HostConfig, Host};

const IDLE_MS: u64 = 1_000;

fn host() -> (Host<Counter>, ManualClock, Arc<MemoryAuditSink>) {
    let clock = ManualClock::new(1_000_000);
    let mut config = HostConfig::default();
    config.clock = Arc::new(clock.clone());
    config.session_idle = std::time::Duration::from_millis(IDLE_MS);
    let audit = Arc::new(MemoryAuditSink::new());
    let host = Host::with_config(Counter, config, audit.clone()).expect("host");
    (host, clock, audit)
}

#[tokio::test]
async fn a_held_session_is_never_closed_as_idle() {
    let (host, clock, audit) = host();
    let held = host.create_session(None).expect("session");
    let subscribed = host.create_session(None).expect("session");
    let free = host.create_session(None).expect("session");
    let hold = held.hold();
    let subscription = subscribed.subscribe(None);

    clock.advance(IDLE_MS * 5);
    assert_eq!(
        host.expire_idle_sessions(),
        1,
        "only the free session expires"
    );
    assert!(free.is_closed());
    assert!(!held.is_closed());
    assert!(!subscribed.is_closed());
    // Held a long time: still open.
    clock.advance(IDLE_MS * 100);
    assert_eq!(host.expire_idle_sessions(), 0);

    // Released, each goes the usual way after one idle period.
    drop(hold);
    drop(subscription);
    assert_eq!(host.expire_idle_sessions(), 0, "in use until now");
    clock.advance(IDLE_MS);
    assert_eq!(host.expire_idle_sessions(), 2);
    assert!(held.is_closed());
    assert!(subscribed.is_closed());
    // Each expiry is audited (written on its own task).
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let expired: Vec<String> = audit
        .entries()
        .into_iter()
        .filter(|e| e.event == AuditEvent::SessionExpired)
        .map(|e| {
            e.detail["sessionId"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let mut expected = vec![
        free.id().to_string(),
        held.id().to_string(),
        subscribed.id().to_string(),
    ];
    expected.sort();
    let mut expired = expired;
    expired.sort();
    assert_eq!(expired, expected);
}
