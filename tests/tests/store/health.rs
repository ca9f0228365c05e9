//! The probes (`docs/operations.md` §Health): `/agent/healthz` answers whatever the `Host`
//! and whatever the store; `/agent/readyz` is 503 while the store does not answer (a real
//! PostgreSQL whose database refuses connections), while its change listener reconnects, and
//! once the server drains; and it says which, in fixed words.

use std::time::{Duration, Instant};

use agent_examples::counter::Counter;
use agent_tests::postgres::PgServer;
use agent_tests::TestServer;
use serde_json::{json, Value};
use tea_agent_runtime::store::Stores;

/// A probe as a kubelet sends it: to the pod's address, which no allow-list names.
async fn probe(t: &TestServer<Counter>, path: &str) -> (u16, Value, String) {
    let resp = t
        .request(reqwest::Method::GET, path)
        .header("host", "10.1.2.3:8080")
        .send()
        .await
        .expect("probe");
    let status = resp.status().as_u16();
    let cache = resp
        .headers()
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = resp.json().await.expect("JSON");
    (status, body, cache)
}

/// Probes `/agent/readyz` until `want(status, body)` (20 s at most); the last answer.
async fn readyz_until(t: &TestServer<Counter>, want: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body, _) = probe(t, "/agent/readyz").await;
        if want(status, &body) || Instant::now() > deadline {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn probes_answer_on_the_pods_address_and_readiness_ends_with_draining() {
    let t = TestServer::builder(Counter).start().await;
    let (status, body, cache) = probe(&t, "/agent/healthz").await;
    assert_eq!((status, body), (200, json!({"status": "alive"})));
    assert_eq!(cache, "no-store");
    let (status, body, _) = probe(&t, "/agent/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"status": "ready", "checks": {"store": "ok", "listener": "not-shared", "draining": false, "fleet": "off"}})
    );
    // The exemption is the probes' alone: an agent route on that address is refused.
    let describe = t
        .request(reqwest::Method::GET, "/agent/lap/v1/describe")
        .header("host", "10.1.2.3:8080")
        .send()
        .await
        .expect("describe");
    assert_eq!(describe.status().as_u16(), 403);

    t.server.start_draining();
    assert!(t.server.is_draining());
    let (status, body, _) = probe(&t, "/agent/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not-ready");
    assert_eq!(body["checks"]["draining"], true);
    // Still alive, and still serving.
    assert_eq!(probe(&t, "/agent/healthz").await.0, 200);
    let m = t.mint("alice", None).await;
    assert_eq!(t.lap(&m.token, "/observe", &json!({})).await.status, 200);
}

#[tokio::test]
async fn readiness_is_false_while_postgres_refuses_and_true_again_after() {
    let pg = PgServer::start();
    let admin_pool = sqlx::PgPool::connect(&pg.url()).await.expect("admin pool");
    sqlx::query("CREATE DATABASE agent")
        .execute(&admin_pool)
        .await
        .expect("create database");
    let url = format!("{}/agent", pg.url().rsplit_once('/').expect("a database").0);
    let stores = Stores::open(&url).await.expect("store");
    let t = TestServer::builder(Counter).stores(&stores).start().await;
    // A session watched: the store's change listener runs.
    let m = t.mint("alice", None).await;
    assert_eq!(t.lap(&m.token, "/observe", &json!({})).await.status, 200);
    let (status, body) = readyz_until(&t, |s, _| s == 200).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["checks"]["store"], "ok");

    // The database goes away: no new connection, every open one ended.
    sqlx::query("ALTER DATABASE agent ALLOW_CONNECTIONS false")
        .execute(&admin_pool)
        .await
        .expect("refuse connections");
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'agent'")
        .execute(&admin_pool)
        .await
        .expect("terminate backends");
    let (status, body) = readyz_until(&t, |s, b| {
        s == 503 && b["checks"]["store"] != "ok" && b["checks"]["listener"] == "reconnecting"
    })
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not-ready");
    assert!(
        ["unreachable", "timeout"].contains(&body["checks"]["store"].as_str().unwrap()),
        "{body}"
    );
    assert_eq!(body["checks"]["listener"], "reconnecting");
    // Nothing of the failure is told: fixed words only.
    assert!(!body.to_string().contains("agent\""), "{body}");
    assert_eq!(probe(&t, "/agent/healthz").await.0, 200);

    // Back: ready again, the listener connected again.
    sqlx::query("ALTER DATABASE agent ALLOW_CONNECTIONS true")
        .execute(&admin_pool)
        .await
        .expect("allow connections");
    let (status, body) = readyz_until(&t, |s, b| {
        s == 200 && b["checks"]["listener"] == "listening"
    })
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["checks"]["store"], "ok");
    assert_eq!(body["checks"]["listener"], "listening");
}
