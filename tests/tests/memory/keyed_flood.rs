//! A flood of keyed `/message`s over the host's budget (issue 49, `docs/lap.md` §5.7,
//! `docs/stores.md` §Memory): twenty counter sessions, each agent sending 150 `inc`s with
//! an `idempotencyKey` each, through the operation table in this process, under a 2 MiB budget.
//! The idempotency answers count against the budget with the rings: the host stays within it,
//! the oldest answers are shed, and a repeat of a shed key answers 409 `answer-not-kept`, never
//! applies its message again; the newest answers are still replayed.

use agent_examples::counter::Counter;
use agent_tests::resident::MIB;
use serde_json::json;
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::testing::Agent;
use tea_agent_runtime::{AgentServer, Operation};

const SESSIONS: usize = 20;
const MESSAGES: u64 = 150;

fn keyed(key: &str, msg: serde_json::Value) -> serde_json::Value {
    json!({"msg": msg, "waitFor": "idle", "idempotencyKey": key})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_flood_sheds_answers_and_never_applies_one_twice() {
    let _serial = crate::SERIAL.lock().await;
    let budget = 2 * MIB as usize;
    let mut config = HostConfig::default();
    config.transcripts = true;
    config.budgets.retained_bytes = budget;
    let server = AgentServer::builder(Counter)
        .host_config(config)
        .build()
        .await
        .expect("server");
    let host = server.host().clone();
    let mut agents = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        let session = host
            .create_session(Some(format!("visitor-{i}")))
            .expect("session");
        let agent = Agent::mint(&server, session.id()).await.expect("agent");
        agents.push((session, agent));
    }
    let mut most = 0;
    for n in 0..MESSAGES {
        let calls = agents.iter().map(|(_, agent)| async move {
            let (status, answer) = agent
                .call(
                    Operation::Message,
                    keyed(&format!("k{n}"), json!({"type": "inc"})),
                )
                .await;
            assert_eq!(status, 200, "{answer}");
        });
        futures::future::join_all(calls).await;
        most = most.max(host.retained_bytes());
    }
    assert!(
        most > budget / 2,
        "{most} bytes retained at most: the budget never bound"
    );
    assert!(
        host.retained_bytes() <= budget,
        "{} bytes retained; the budget is {budget}",
        host.retained_bytes()
    );

    let (session, agent) = &agents[0];
    assert_eq!(session.published().seq, MESSAGES);
    // The first key's answer was shed: the same message is refused, not applied again.
    let (status, shed) = agent
        .call(Operation::Message, keyed("k0", json!({"type": "inc"})))
        .await;
    assert_eq!(status, 409, "{shed}");
    assert_eq!(shed["error"]["code"], json!("conflict"), "{shed}");
    assert_eq!(shed["error"]["reason"], json!("answer-not-kept"), "{shed}");
    // Another message under that key is the usual conflict.
    let (status, other) = agent
        .call(Operation::Message, keyed("k0", json!({"type": "dec"})))
        .await;
    assert_eq!(status, 409, "{other}");
    assert!(other["error"].get("reason").is_none(), "{other}");
    assert!(
        other["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("different message")),
        "{other}"
    );
    // The newest answer is kept: replayed, not applied again.
    let last = format!("k{}", MESSAGES - 1);
    let (status, replayed) = agent
        .call(Operation::Message, keyed(&last, json!({"type": "inc"})))
        .await;
    assert_eq!(status, 200, "{replayed}");
    assert_eq!(replayed["seq"], json!(MESSAGES), "{replayed}");
    assert_eq!(session.published().seq, MESSAGES);
    let (_, state) = agent.call(Operation::State, json!({})).await;
    assert_eq!(state["state"]["count"], json!(MESSAGES), "{state}");
}
