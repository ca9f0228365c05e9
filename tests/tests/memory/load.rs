//! Load: 100 concurrent agents, each sending 100 messages to its own session over loopback,
//! lose nothing, and the server keeps answering other callers meanwhile.

use std::time::{Duration, Instant};

use agent_examples::counter::Counter;
use agent_tests::TestServer;
use serde_json::json;

const AGENTS: usize = 100;
const MESSAGES: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_agents_times_hundred_messages_lose_nothing() {
    let _serial = crate::SERIAL.lock().await;
    let t = TestServer::builder(Counter)
        .rate_limit("1000000/minute")
        .start()
        .await;
    let mut agents = Vec::new();
    for i in 0..AGENTS {
        agents.push(t.mint(&format!("user-{i}"), None).await);
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(AGENTS)
        .build()
        .unwrap();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for m in agents.clone() {
        let (client, base) = (client.clone(), t.base.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..MESSAGES {
                let r = client
                    .post(format!("{base}/agent/lap/v1/message"))
                    .bearer_auth(&m.token)
                    .body(json!({"msg":{"type":"inc"},"waitFor":"idle"}).to_string())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
            }
        }));
    }
    // Meanwhile a reader still gets answers promptly.
    let probe = &agents[0];
    let mut worst = Duration::ZERO;
    while tasks.iter().any(|t| !t.is_finished()) {
        let t0 = Instant::now();
        let a = t
            .lap(&probe.token, "/state", &json!({"path":"/count"}))
            .await;
        assert_eq!(a.status, 200);
        worst = worst.max(t0.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    for m in &agents {
        let a = t.lap(&m.token, "/state", &json!({"path":"/count"})).await;
        assert_eq!(a.body["state"], MESSAGES as i64, "a message was lost");
    }
    assert!(
        worst < Duration::from_secs(5),
        "a read took {worst:?} under load"
    );
    eprintln!(
        "{} messages in {elapsed:?} ({:.0}/s), slowest concurrent read {worst:?}",
        AGENTS * MESSAGES,
        (AGENTS * MESSAGES) as f64 / elapsed.as_secs_f64()
    );
}
