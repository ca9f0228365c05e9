//! Fleets on PostgreSQL: two counter-server processes on one database (a real server the test
//! starts), agents spread over both at random. Commits are compare-and-set on (session,
//! sequence) and a replica that loses applies the message again on the stored state, so no
//! `inc` is lost or applied twice; then one replica is killed mid-run and the other finishes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use agent_tests::counter_server;
use agent_tests::postgres::PgServer;
use agent_tests::process::ServerProcess;
use serde_json::{json, Value};

const AGENTS: usize = 20;

fn coin() -> bool {
    uuid::Uuid::new_v4().as_bytes()[0] & 1 == 1
}

/// What happened to one `inc`.
enum Sent {
    Dispatched,
    /// The request may have reached the replica, but no answer came back.
    Lost,
}

/// Sends one `inc` to `bases[0]` or `bases[1]` at random; a replica that refuses the
/// connection (killed) is skipped, since the request never reached it.
async fn inc(
    http: &reqwest::Client,
    bases: &[String; 2],
    dead: &[AtomicBool; 2],
    token: &str,
) -> Sent {
    let mut pick = usize::from(coin());
    loop {
        if dead[pick].load(Ordering::SeqCst) {
            pick = 1 - pick;
        }
        let resp = http
            .post(format!("{}/agent/lap/v1/message", bases[pick]))
            .bearer_auth(token)
            .json(&json!({"msg": {"type": "inc"}}))
            .send()
            .await;
        match resp {
            Ok(r) => {
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap_or(Value::Null);
                assert_eq!(status, 200, "{body}");
                assert_eq!(body["status"], "dispatched", "{body}");
                return Sent::Dispatched;
            }
            Err(e) if e.is_connect() => {
                dead[pick].store(true, Ordering::SeqCst);
                pick = 1 - pick;
            }
            Err(_) => return Sent::Lost,
        }
    }
}

/// Waits until the human sees a pending proposal on the replica at `base`; its id.
async fn pending_on(human: &reqwest::Client, base: &str, session: &str) -> String {
    for _ in 0..500 {
        let detail: Value = human
            .get(format!("{base}/agent/human/sessions/{session}"))
            .send()
            .await
            .expect("detail")
            .json()
            .await
            .expect("json");
        if let Some(id) = detail["pending"][0]["id"].as_str() {
            return id.to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("no pending proposal reached the other replica");
}

async fn stored_count(url: &str, session: &str) -> (i64, u64) {
    let (seq, state) = agent_tests::stored_session(url, session).await;
    (state["count"].as_i64().expect("count"), seq)
}

/// Runs `AGENTS` agents sending `each` `inc`s; `kill_after` kills replica 0 once that many
/// were sent. Answers (dispatched, lost).
async fn run(
    bases: &[String; 2],
    tokens: &[String],
    each: usize,
    kill: Option<(usize, ServerProcess)>,
) -> (usize, usize) {
    let dead = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    let sent = Arc::new(AtomicUsize::new(0));
    let dispatched = Arc::new(AtomicUsize::new(0));
    let lost = Arc::new(AtomicUsize::new(0));
    let killer = kill.map(|(after, process)| {
        let sent = sent.clone();
        tokio::spawn(async move {
            while sent.load(Ordering::SeqCst) < after {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            process.kill();
        })
    });
    let mut agents = Vec::new();
    for token in tokens.iter().take(AGENTS) {
        let token = token.clone();
        let (bases, dead, sent, dispatched, lost) = (
            bases.clone(),
            dead.clone(),
            sent.clone(),
            dispatched.clone(),
            lost.clone(),
        );
        agents.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            for _ in 0..each {
                sent.fetch_add(1, Ordering::SeqCst);
                match inc(&http, &bases, &dead, &token).await {
                    Sent::Dispatched => dispatched.fetch_add(1, Ordering::SeqCst),
                    Sent::Lost => lost.fetch_add(1, Ordering::SeqCst),
                };
            }
        }));
    }
    for a in agents {
        a.await.expect("agent");
    }
    if let Some(k) = killer {
        k.await.expect("killer");
    }
    (
        dispatched.load(Ordering::SeqCst),
        lost.load(Ordering::SeqCst),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_one_session_without_losing_an_inc() {
    let pg = PgServer::start();
    let url = pg.url();
    let args = ["--db", url.as_str(), "--rate-limit", "100000/second"];
    let a = counter_server!().args(args).start();
    let b = counter_server!().args(args).start();
    let bases = [a.base.clone(), b.base.clone()];

    // One human; the identity cookie minted on A works on B (one signing key in the
    // database), and so do the tokens.
    let human = agent_tests::browser();
    let first: Value = human
        .post(format!("{}/agent/mint", bases[0]))
        .json(&json!({}))
        .send()
        .await
        .expect("mint")
        .json()
        .await
        .expect("json");
    let session = first["sessionId"].as_str().expect("session").to_owned();
    let mut tokens = vec![first["token"].as_str().expect("token").to_owned()];
    for i in 1..AGENTS {
        let resp = human
            .post(format!("{}/agent/mint", bases[i % 2]))
            .json(&json!({"session": session}))
            .send()
            .await
            .expect("mint");
        assert_eq!(resp.status().as_u16(), 200, "mint {i} on replica {}", i % 2);
        let minted: Value = resp.json().await.expect("json");
        tokens.push(minted["token"].as_str().expect("token").to_owned());
    }

    // 20 agents × 50 inc, spread over both replicas.
    let (dispatched, lost) = run(&bases, &tokens, 50, None).await;
    assert_eq!((dispatched, lost), (AGENTS * 50, 0));
    let (count, seq) = stored_count(&url, &session).await;
    assert_eq!(count, 1000, "every dispatched inc applied exactly once");
    assert_eq!(seq, 1000);

    // A proposal parked on A is approved through B; A's waiting agent learns it (the
    // replicas wake each other with LISTEN/NOTIFY).
    let parked = {
        let (base, token) = (bases[0].clone(), tokens[0].clone());
        tokio::spawn(async move {
            let resp = reqwest::Client::new()
                .post(format!("{base}/agent/lap/v1/message"))
                .bearer_auth(token)
                .json(&json!({"msg": {"type": "delete", "id": "9"}, "timeoutMs": 50000}))
                .send()
                .await
                .expect("propose");
            resp.json::<Value>().await.expect("json")
        })
    };
    let confirm_id = pending_on(&human, &bases[1], &session).await;
    let resp = human
        .post(format!(
            "{}/agent/human/sessions/{session}/confirms/{confirm_id}",
            bases[1]
        ))
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .expect("approve");
    assert_eq!(resp.status().as_u16(), 200);
    let answer = tokio::time::timeout(std::time::Duration::from_secs(60), parked)
        .await
        .expect("the parked agent is woken")
        .expect("task");
    assert_eq!(answer["status"], "confirmed", "{answer}");
    assert_eq!(answer["stateAfter"]["lastDelete"], "9", "{answer}");
    assert_eq!(answer["stateAfter"]["count"], 1000, "{answer}");

    // Again with replica A killed (SIGKILL) mid-run: B finishes. An inc whose answer was
    // lost with A may or may not have committed; every dispatched one did, once.
    drop(b);
    let b = counter_server!().args(args).start();
    let bases = [a.base.clone(), b.base.clone()];
    let (dispatched, lost) = run(&bases, &tokens, 10, Some((100, a))).await;
    assert_eq!(dispatched + lost, AGENTS * 10);
    let (count, _) = stored_count(&url, &session).await;
    let after = usize::try_from(count - 1000).expect("no inc went missing");
    // (The approved delete left the count alone.)
    assert!(
        dispatched <= after && after <= dispatched + lost,
        "applied {after}, dispatched {dispatched}, lost in flight {lost}"
    );
    // The survivor answers with the stored state.
    let resp = reqwest::Client::new()
        .post(format!("{}/agent/lap/v1/message", b.base))
        .bearer_auth(&tokens[0])
        .json(&json!({"msg": {"type": "inc"}, "waitFor": "idle"}))
        .send()
        .await
        .expect("inc");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(stored_count(&url, &session).await.0, count + 1);
}
