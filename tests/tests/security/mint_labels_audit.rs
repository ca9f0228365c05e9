//! Mint labels and the audit trail around sessions (`docs/lap.md` §3.4, §4.1): a label given
//! at mint is what `/agent/sessions` and the owner's session list show; bad labels are 400;
//! the owner's close, a paired app's socket accept, close and resume, and its claim are
//! audited.

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::tab::{ws_url, Tab};
use agent_tests::TestServer;
use serde_json::json;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};

async fn server() -> (TestServer<Counter>, Arc<MemoryAuditSink>) {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = TestServer::builder(Counter)
        .rate_limit("10000/minute")
        .audit(audit.clone())
        .start()
        .await;
    (t, audit)
}

#[tokio::test]
async fn a_mint_label_is_what_the_lists_show() {
    let (t, _) = server().await;
    let labelled = t
        .post_json(
            "/agent/mint",
            Some("alice"),
            None,
            &json!({"label": "  Claude Desktop "}),
        )
        .await;
    assert_eq!(labelled.status, 200, "{:?}", labelled.body);
    let token = labelled.body["token"].as_str().expect("token").to_string();
    let plain = t.mint("alice", None).await;
    // Activation keeps a minted label; a token minted without one becomes `agent`.
    assert_eq!(t.lap(&token, "/state", &json!({})).await.status, 200);
    assert_eq!(t.lap(&plain.token, "/state", &json!({})).await.status, 200);
    let listed = t.get("/agent/sessions", Some("alice")).await;
    let mut labels: Vec<String> = listed.body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["label"].as_str().unwrap_or_default().to_string())
        .collect();
    labels.sort();
    assert_eq!(labels, ["Claude Desktop", "agent"]);
    let owner = t.get("/agent/human/sessions", Some("alice")).await;
    let agents: Vec<String> = owner.body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .flat_map(|s| s["agents"].as_array().cloned().unwrap_or_default())
        .map(|a| a["label"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(agents.contains(&"Claude Desktop".to_string()), "{agents:?}");

    for bad in [json!("x".repeat(65)), json!(""), json!("a\nb"), json!(5)] {
        let a = t
            .post_json("/agent/mint", Some("alice"), None, &json!({ "label": bad }))
            .await;
        assert_eq!(a.status, 400, "{bad}: {:?}", a.body);
        assert!(a.body["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("label must be")));
    }
}

#[tokio::test]
async fn owner_close_sockets_and_claim_are_audited() {
    let (t, audit) = server().await;
    // The owner closes a hosted session.
    let m = t.mint("alice", None).await;
    let closed = t
        .post_json(
            &format!("/agent/human/sessions/{}/close", m.session_id),
            Some("alice"),
            None,
            &json!({}),
        )
        .await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);
    let entry = audit
        .entries()
        .into_iter()
        .find(|e| e.event == AuditEvent::OwnerClose)
        .expect("owner-close audited");
    assert_eq!(entry.detail["sessionId"], m.session_id.as_str());
    assert_eq!(entry.detail["kind"], "hosted");
    assert_eq!(entry.uid.as_deref(), Some("alice"));

    // A paired app drops its socket and claims its session again.
    let paired = t
        .post_json("/agent/mint", Some("alice"), None, &json!({"paired": true}))
        .await;
    let token = paired.body["token"].as_str().expect("token").to_string();
    let tid = paired.body["tid"].as_str().expect("tid").to_string();
    Tab::pair(&t.base, &token).await.close().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Back within the grace window: a resume (the server says `active` at once), then it drops
    // again.
    let mut back = Tab::open(&ws_url(&t.base, &token), &[])
        .await
        .expect("upgrade");
    back.hello(Some(2)).await;
    assert_eq!(back.next().await, json!({"t": "active"}));
    back.close().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let socket_events: Vec<AuditEvent> = audit
        .entries()
        .into_iter()
        .filter(|e| e.tid.as_deref() == Some(tid.as_str()))
        .map(|e| e.event)
        .filter(|e| {
            matches!(
                e,
                AuditEvent::SocketAccept | AuditEvent::SocketClose | AuditEvent::Resume
            )
        })
        .collect();
    assert_eq!(
        socket_events,
        [
            AuditEvent::SocketAccept,
            AuditEvent::SocketClose,
            AuditEvent::Resume,
            AuditEvent::SocketClose
        ]
    );
    let claimed = t
        .post_json(
            "/agent/resume/claim",
            Some("alice"),
            None,
            &json!({ "tid": tid }),
        )
        .await;
    assert_eq!(claimed.status, 200, "{:?}", claimed.body);
    let entry = audit
        .entries()
        .into_iter()
        .find(|e| e.event == AuditEvent::Claim)
        .expect("claim audited");
    assert_eq!(entry.tid.as_deref(), Some(tid.as_str()));
    assert_eq!(entry.detail["pastGrace"], false, "{:?}", entry.detail);
    assert_eq!(AuditEvent::Claim.as_str(), "claim");
}
