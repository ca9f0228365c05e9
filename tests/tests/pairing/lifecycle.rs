//! The life cycle of a paired token on the wire (`docs/pairing.md`): revocation, supersede,
//! pending-resume and its grace window, resume/claim with rotation, oversized frames, a
//! socket lost mid-call.

use agent_tests::paired::{assert_paused, call, mint, server, status_of, GRACE_MS};
use agent_tests::tab::{ws_url, Tab};
use serde_json::json;

#[tokio::test]
async fn revoke_pushes_revoked_and_closes() {
    let t = server().await;
    let m = mint(&t).await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let a = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(a.body, json!({"status": "revoked"}));
    let (closed, frames) = tab.closed().await;
    assert!(closed);
    assert_eq!(frames, vec![json!({"t": "revoked"})]);
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 403);
    assert_eq!(status_of(&t, &m.tid).await, "revoked");
    assert_eq!(
        Tab::open(&ws_url(&t.base, &m.token), &[]).await.err(),
        Some(403)
    );
}

#[tokio::test]
async fn a_newer_socket_supersedes_and_the_old_version_is_refused() {
    let t = server().await;
    let m = mint(&t).await;
    let mut first = Tab::pair(&t.base, &m.token).await;
    let pending = call(&t, &m.token, "/state", json!({}));
    let _ = first.rpc("get_state").await;
    let mut second = Tab::pair(&t.base, &m.token).await;
    assert!(first.closed().await.0);
    // The waiter moved with the tid: the new socket answers later calls.
    let a = pending.await.unwrap();
    assert_eq!(a.status, 504);
    let pending = call(&t, &m.token, "/state", json!({}));
    let (id, _) = second.rpc("get_state").await;
    second.reply(&id, json!({"state": 2})).await;
    assert_eq!(pending.await.unwrap().body, json!({"state": 2}));
    // A client below lapVersion 2 gets its ack, then is closed.
    let mut old = Tab::open(&ws_url(&t.base, &m.token), &[]).await.unwrap();
    old.hello(Some(1)).await;
    let (closed, frames) = old.closed().await;
    assert!(closed);
    assert_eq!(frames[0]["t"], "hello-ack");
}

#[tokio::test]
async fn pending_resume_grace_then_paused_expired() {
    let t = server().await;
    let m = mint(&t).await;
    let tab = Tab::pair(&t.base, &m.token).await;
    tab.close().await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(status_of(&t, &m.tid).await, "pending-resume");
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_paused(&a, "pending");
    assert_eq!(a.headers["retry-after"], "1");
    // Re-pair within grace: `active` at once.
    let mut tab = Tab::open(&ws_url(&t.base, &m.token), &[]).await.unwrap();
    assert_eq!(tab.next().await, json!({"t": "active"}));
    assert_eq!(status_of(&t, &m.tid).await, "active");
    tab.close().await;
    tokio::time::sleep(std::time::Duration::from_millis(GRACE_MS + 100)).await;
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_paused(&a, "expired");
    assert!(a.headers.get("retry-after").is_none());
    assert_eq!(
        Tab::open(&ws_url(&t.base, &m.token), &[]).await.err(),
        Some(401)
    );
}

#[tokio::test]
async fn resume_claim_rotates_the_token() {
    let t = server().await;
    let m = mint(&t).await;
    Tab::pair(&t.base, &m.token).await.close().await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let a = t
        .post_json(
            "/agent/resume/list",
            Some("alice"),
            None,
            &json!({"tids": [m.tid, "x"]}),
        )
        .await;
    assert_eq!(a.body["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(a.body["sessions"][0]["tid"], m.tid.as_str());
    assert_eq!(a.body["sessions"][0]["status"], "pending-resume");
    let a = t
        .post_json(
            "/agent/resume/list",
            Some("bob"),
            None,
            &json!({"tids": [m.tid]}),
        )
        .await;
    assert_eq!(a.body, json!({"sessions": []}));
    let a = t
        .post_json(
            "/agent/resume/claim",
            Some("bob"),
            None,
            &json!({"tid": m.tid}),
        )
        .await;
    assert_eq!(
        (a.status, a.body),
        (403, json!({"error": {"code": "revoked"}}))
    );
    let a = t
        .post_json(
            "/agent/resume/claim",
            Some("alice"),
            None,
            &json!({"tid": m.tid}),
        )
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["tid"], m.tid.as_str());
    let new_token = a.body["token"].as_str().unwrap().to_string();
    assert_ne!(new_token, m.token);
    assert!(a.body["wsUrl"].as_str().unwrap().ends_with("/agent/ws"));
    assert_eq!(status_of(&t, &m.tid).await, "active");
    // The old token is gone; the new one pairs.
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 401);
    assert_eq!(
        Tab::open(&ws_url(&t.base, &m.token), &[]).await.err(),
        Some(401)
    );
    let mut tab = Tab::pair(&t.base, &new_token).await;
    let pending = call(&t, &new_token, "/state", json!({}));
    let (id, _) = tab.rpc("get_state").await;
    tab.reply(&id, json!({"state": "resumed"})).await;
    assert_eq!(pending.await.unwrap().body, json!({"state": "resumed"}));
    // A second claim finds nothing pending.
    let a = t
        .post_json(
            "/agent/resume/claim",
            Some("alice"),
            None,
            &json!({"tid": m.tid}),
        )
        .await;
    assert_eq!(a.status, 403);
}

#[tokio::test]
async fn frames_over_4_mib_are_refused() {
    let t = server().await;
    let m = mint(&t).await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let big = format!(
        r#"{{"t":"log-append","entry":{{"detail":"{}"}}}}"#,
        "x".repeat(4 * 1024 * 1024)
    );
    let _ = tab.send_text(big).await;
    assert!(tab.closed().await.0);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_paused(&a, "pending");
    // Just under the limit passes (and is not kept in the log: over the entry budget).
    let mut tab = Tab::open(&ws_url(&t.base, &m.token), &[]).await.unwrap();
    assert_eq!(tab.next().await, json!({"t": "active"}));
    let fits = format!(
        r#"{{"t":"log-append","entry":{{"detail":"{}"}}}}"#,
        "x".repeat(4 * 1024 * 1024 - 100)
    );
    tab.send_text(fits).await.unwrap();
    tab.hello(Some(2)).await;
    assert_eq!(tab.next().await["t"], "hello-ack");
}

#[tokio::test]
async fn a_socket_lost_mid_call_answers_paused_and_pending_confirmation() {
    let t = server().await;
    let m = mint(&t).await;
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let read = call(&t, &m.token, "/state", json!({}));
    let _ = tab.rpc("get_state").await;
    let message = call(
        &t,
        &m.token,
        "/message",
        json!({"msg": {"type": "reset"}, "timeoutMs": 5000}),
    );
    let (id, _) = tab.rpc("send_message").await;
    tab.reply(
        &id,
        json!({"status": "pending-confirmation", "confirmId": "c9"}),
    )
    .await;
    let started = std::time::Instant::now();
    // Let the server read the reply before the socket goes.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    tab.close().await;
    let a = read.await.unwrap();
    assert_paused(&a, "pending");
    let a = message.await.unwrap();
    assert_eq!(
        a.body,
        json!({"status": "pending-confirmation", "confirmId": "c9"})
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
}
