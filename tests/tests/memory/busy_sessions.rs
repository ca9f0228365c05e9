//! A thousand busy sessions within the host's budget (issue 49, `docs/stores.md` §Memory):
//! 1,000 counter sessions, each with an agent calling `/message` through the operation table
//! in this process (`tea_agent_runtime::testing::Agent`: the gate, the transcript, the log, the
//! events, the commit ring, as over LAP), with transcripts on. The rings' entries (a
//! `/message` answer is about 2 KB of JSON, a transcript holds one per call) outgrow the
//! budget: it binds, and this process grows by no more than the budget plus its slack. What
//! the sessions lost to it answers clearly: a `sinceSeq` older than the kept patches gets the
//! whole state, a transcript counts what it dropped, and the newest of everything is kept.
//!
//! By default 60 messages each under a 64 MiB budget, so that a debug build runs it in about
//! 40 s; `BUSY_MESSAGES=230 BUSY_BUDGET_MIB=256` is the load with the 256 MiB default
//! (about 150 s in a debug build). The same load on the counter example as its own process,
//! over loopback, in a release build: `cargo bench -p agent-tests --bench busy_sessions`.

use std::time::Instant;

use agent_examples::counter::Counter;
use agent_tests::load::env_or;
use agent_tests::resident::{resident_bytes, MIB};
use serde_json::json;
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::testing::Agent;
use tea_agent_runtime::{AgentServer, Operation};

const SESSIONS: usize = 1_000;
/// What the process may grow by beyond the budget: the sessions themselves (about 15 KiB each
/// idle), the allocator's slack (freed memory it keeps in pages that still hold live
/// entries), the test's own agents.
const SLACK: u64 = 64 * MIB;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_busy_sessions_stay_within_the_budget() {
    let _serial = crate::SERIAL.lock().await;
    let messages = env_or("BUSY_MESSAGES", 60);
    let budget = (env_or("BUSY_BUDGET_MIB", 64) * MIB) as usize;
    let mut config = HostConfig::default();
    config.max_sessions = SESSIONS;
    config.max_sessions_per_owner = SESSIONS;
    config.transcripts = true;
    config.budgets.retained_bytes = budget;
    let server = AgentServer::builder(Counter)
        .host_config(config)
        .build()
        .await
        .expect("server");
    let host = server.host().clone();
    let before = resident_bytes(None);
    let mut agents = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        let session = host
            .create_session(Some(format!("visitor-{i}")))
            .expect("session");
        let agent = Agent::mint(&server, session.id()).await.expect("agent");
        agents.push((session, agent));
    }
    let idle = resident_bytes(None);
    let started = Instant::now();
    let body = json!({"msg": {"type": "inc"}, "waitFor": "idle"});
    let mut most = 0;
    for round in 0..messages {
        let calls = agents.iter().map(|(_, agent)| {
            let body = body.clone();
            async move {
                let (status, answer) = agent.call(Operation::Message, body).await;
                assert_eq!(status, 200, "{answer}");
            }
        });
        futures::future::join_all(calls).await;
        most = most.max(host.retained_bytes());
        if round % 20 == 19 {
            eprintln!(
                "after {} messages each ({:.0} s): the rings retain {} MiB, resident +{} MiB",
                round + 1,
                started.elapsed().as_secs_f64(),
                host.retained_bytes() as u64 / MIB,
                resident_bytes(None).saturating_sub(before) / MIB
            );
        }
    }
    let after = resident_bytes(None);
    eprintln!(
        "{SESSIONS} sessions: resident +{} MiB idle, +{} MiB after {messages} messages each \
         in {:.0} s; the rings retain {} MiB at most (budget {} MiB)",
        idle.saturating_sub(before) / MIB,
        after.saturating_sub(before) / MIB,
        started.elapsed().as_secs_f64(),
        most as u64 / MIB,
        budget as u64 / MIB
    );
    // The budget bound, and held.
    assert!(
        most > budget * 9 / 10,
        "the rings held only {most} bytes: the budget never bound"
    );
    assert!(
        most <= budget,
        "the rings retained {most} bytes; the budget is {budget}"
    );
    assert!(
        after.saturating_sub(before) <= budget as u64 + SLACK,
        "the process grew by {} MiB; the budget is {} MiB, plus {} MiB",
        after.saturating_sub(before) / MIB,
        budget as u64 / MIB,
        SLACK / MIB
    );

    // What the first session lost answers clearly, never wrongly.
    let (session, agent) = &agents[0];
    assert_eq!(session.published().seq, messages);
    // A version older than the kept patches: the whole state, no diff.
    let (status, old) = agent.call(Operation::State, json!({"sinceSeq": 1})).await;
    assert_eq!(status, 200, "{old}");
    assert_eq!(old["state"]["count"], json!(messages), "{old}");
    assert!(old.get("stateDiff").is_none(), "{old}");
    assert_eq!(old["seq"], json!(messages));
    // The newest commit's patch is kept: a diff.
    let (_, recent) = agent
        .call(Operation::State, json!({"sinceSeq": messages - 1}))
        .await;
    assert_eq!(recent["stateDiff"][0]["value"], json!(messages), "{recent}");
    // The transcript starts in the middle and says how much went; its entries are the newest.
    let transcript = session.transcript(None);
    assert!(transcript.dropped > 0, "nothing was dropped");
    assert!(
        !transcript.entries.is_empty(),
        "the newest calls are kept too"
    );
    // The activity log keeps the newest entries.
    let log = session.recent_log(1, None);
    assert_eq!(log.len(), 1);
}
