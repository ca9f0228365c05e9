//! The hub's bounds and its routing of frames to the calls that wait on them.

use super::*;
use crate::engine::paired::outbound::Outgoing;

fn hub() -> Hub {
    Hub::new(Limits {
        outcome_ms: 1000,
        grace_ms: 1000,
        entry_bytes: 1024,
        log_bytes: 4096,
        outcome_bytes: 1024,
        outcomes_bytes: 4096,
        watch_bytes: 4096,
        outbound_bytes: 1 << 20,
    })
}

fn texts(rx: &mut OutboundRx) -> Vec<String> {
    std::iter::from_fn(|| rx.try_recv())
        .filter_map(|o| match o {
            Outgoing::Text(t) => Some(t),
            Outgoing::Ping => None,
        })
        .collect()
}

#[tokio::test]
async fn calls_dropped_midway_leave_nothing_behind() {
    let hub = hub();
    let mut socket = hub.register("t");
    // An rpc whose caller goes away: its waiter goes with it.
    let rpc = hub.rpc("t", "get_state", Value::Null, Duration::from_secs(60), None);
    let _ = tokio::time::timeout(Duration::from_millis(10), rpc).await;
    assert!(hub.links()["t"].rpcs.is_empty());
    // A /wait whose caller goes away: its watch is removed and disarmed.
    let wait = hub.wait_change("t", None, Duration::from_secs(60));
    let _ = tokio::time::timeout(Duration::from_millis(10), wait).await;
    assert!(hub.links()["t"].watches.is_empty());
    let sent = texts(&mut socket.outgoing);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[1].contains(r#""t":"watch""#) && sent[2].contains(r#""t":"unwatch""#));
    // A new socket gets no watch again; a closed one frees the session at the sweep.
    let mut next = hub.register("t");
    assert!(texts(&mut next.outgoing).is_empty());
    assert!(hub.unregister("t", next.id, 5));
    hub.sweep(5 + 1000);
    assert!(hub.links().get("t").is_none());
}

#[tokio::test]
async fn a_pending_reply_makes_its_confirmation_known_before_it_is_relayed() {
    let hub = hub();
    let socket = hub.register("t");
    let reply = r#"{"status":"pending-confirmation","confirmId":"c"}"#;
    let frame = ClientFrame::RpcReply {
        id: "unknown".into(),
        result: serde_json::value::RawValue::from_string(reply.into()).unwrap(),
    };
    // A reply to no rpc in flight registers nothing.
    hub.inbound("t", socket.id, frame, 0);
    assert!(!hub.knows_confirm("t", "c"));
    let rpc = hub.rpc(
        "t",
        "send_message",
        Value::Null,
        Duration::from_secs(5),
        None,
    );
    let answer = async {
        let id = hub.links()["t"].rpcs.keys().next().cloned().unwrap();
        let frame = ClientFrame::RpcReply {
            id,
            result: serde_json::value::RawValue::from_string(reply.into()).unwrap(),
        };
        hub.inbound("t", socket.id, frame, 0);
        // Known as soon as the reply is read, before the rpc's caller runs again.
        assert!(hub.knows_confirm("t", "c"));
    };
    let (relayed, ()) = tokio::join!(rpc, async {
        tokio::task::yield_now().await;
        answer.await
    });
    assert_eq!(relayed.unwrap().get(), reply);
}

fn hello(extensions: &[&str]) -> ClientFrame {
    let text = serde_json::json!({
        "t": "hello", "appName": "a", "appVersion": "1", "msgSchema": {},
        "stateSchema": {}, "schemaHash": "h", "extensions": extensions,
    })
    .to_string();
    ClientFrame::parse(&text).unwrap()
}

/// A followed rpc: the app's progress reaches the caller's watch (the latest report);
/// the caller's cancel is told to an app that takes `rpc-cancel`, never to LLui's.
#[tokio::test]
async fn a_followed_rpc_hears_progress_and_tells_its_cancel_to_apps_that_take_it() {
    use tea_agent_schema::protocol::Progress;
    for takes in [true, false] {
        let hub = hub();
        let mut socket = hub.register("t");
        let extensions: &[&str] = if takes { &["rpc-cancel"] } else { &[] };
        hub.inbound("t", socket.id, hello(extensions), 0);
        let follow = DispatchWatch::new();
        let mut progress = follow.follow();
        let rpc = hub.rpc(
            "t",
            "send_message",
            Value::Null,
            Duration::from_secs(60),
            Some(&follow),
        );
        let app = async {
            tokio::task::yield_now().await;
            let id = hub.links()["t"].rpcs.keys().next().cloned().unwrap();
            for done in [1, 2] {
                let frame = ClientFrame::Progress {
                    id: id.clone(),
                    progress: Progress::steps(done, 4),
                };
                hub.inbound("t", socket.id, frame, 0);
            }
            // Coalesced: the caller reads the latest.
            progress.changed().await.unwrap();
            assert_eq!(*progress.borrow(), Some(Progress::steps(2, 4)));
            // The caller gives up (MCP's `notifications/cancelled`).
            follow.cancel();
            id
        };
        let id = tokio::select! {
            _ = rpc => panic!("the rpc ended"),
            id = app => id,
        };
        let sent = texts(&mut socket.outgoing);
        let told = format!(r#"{{"t":"rpc-cancel","id":"{id}"}}"#);
        assert_eq!(sent.contains(&told), takes, "{sent:?}");
        assert_eq!(
            sent.iter().filter(|s| s.contains("rpc-cancel")).count(),
            usize::from(takes)
        );
        assert!(hub.links()["t"].follows.is_empty());
        // Progress for an rpc no one follows is ignored.
        let frame = ClientFrame::Progress {
            id,
            progress: Progress::fraction(1.0),
        };
        assert!(hub.inbound("t", socket.id, frame, 0));
    }
}
