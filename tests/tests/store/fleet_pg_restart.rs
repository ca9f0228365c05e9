//! A PostgreSQL restart mid-run under a fleet (issue 50, `docs/pairing.md` §A fleet of
//! replicas, failure cases): two relay replicas on one real PostgreSQL, the Rust pairing
//! client paired with one, an agent sending keyed `inc`s through both (so half the calls hop),
//! each key retried until answered 200, while PostgreSQL is shut down (fast shutdown: its
//! connections closed) and started again: once for 1.5 s (the calls wait for it, within the
//! pool's 10 s acquire timeout), once for 13 s (the calls meanwhile answer a clear error, 500
//! `internal` or 503 `paused` with a code in the body, within the call's timeout). Afterwards
//! every key is answered and applied exactly once: nothing lost, nothing twice;
//! and the app's socket stayed open throughout.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tests::lb::{mint_paired, RelayFleet};
use agent_tests::paired::AppProcess;
use serde_json::{json, Value};

use super::fleet_calls::{count, PAIRING};

/// `inc` keyed `key` through `base`, answered (status 0: no answer within 25 s).
async fn keyed_inc(http: &reqwest::Client, base: &str, token: &str, key: &str) -> Answer {
    let resp = http
        .post(format!("{base}/agent/lap/v1/message"))
        .bearer_auth(token)
        .json(&json!({"msg": {"type": "inc"}, "idempotencyKey": key, "waitFor": "idle"}))
        .timeout(Duration::from_secs(25))
        .send()
        .await;
    match resp {
        Ok(r) => {
            let status = r.status().as_u16();
            let replayed = r.headers().contains_key("idempotent-replayed");
            let body: Value = r.json().await.unwrap_or(Value::Null);
            let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
            let detail = body["error"]["detail"].as_str().unwrap_or("").to_owned();
            Answer {
                status,
                code,
                detail,
                replayed,
            }
        }
        Err(e) => Answer {
            status: 0,
            code: String::new(),
            detail: e.to_string(),
            replayed: false,
        },
    }
}

/// One answer to a keyed `inc`.
struct Answer {
    status: u16,
    code: String,
    /// The error's detail, or why no answer came.
    detail: String,
    /// Whether it carried `idempotent-replayed`.
    replayed: bool,
}

// A failure prints what the app printed; `AGENT_TEST_SERVER_LOG=tea_agent_runtime=info` adds the
// replicas' logs. It once failed in about one full run in three: a keyed call whose claim the
// store refused went on without it, and the hop that carried it went silent with no key to give
// back, so its 503 `paused` became the key's answer (now the call answers 500 and applies
// nothing: `keyed_claim_refused.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_restart_mid_run_answers_clear_errors_and_loses_nothing() {
    let mut fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 2, PAIRING, "1s");
    let (token, _) = mint_paired(&fleet.base(0)).await;
    let mut app = AppProcess::start(env!("CARGO_BIN_EXE_paired-counter"), &fleet.base(0), &token);
    app.expect("status Paired").await;
    let http = reqwest::Client::new();

    let stop = Arc::new(AtomicBool::new(false));
    let agent = {
        let bases = [fleet.base(0), fleet.base(1)];
        let (token, stop, http) = (token.clone(), stop.clone(), http.clone());
        tokio::spawn(async move {
            let mut keys = 0i64;
            let mut refusals: BTreeMap<(u16, String), usize> = BTreeMap::new();
            let mut slowest = Duration::ZERO;
            while !stop.load(Ordering::SeqCst) {
                let key = format!("p{keys}");
                let deadline = Instant::now() + Duration::from_secs(60);
                let mut attempt = 0;
                let mut answers: Vec<Answer> = Vec::new();
                loop {
                    let base = &bases[(keys as usize + attempt) % 2];
                    let sent = Instant::now();
                    let answer = keyed_inc(&http, base, &token, &key).await;
                    slowest = slowest.max(sent.elapsed());
                    if answer.status == 200 {
                        break;
                    }
                    *refusals
                        .entry((answer.status, answer.code.clone()))
                        .or_default() += 1;
                    answers.push(answer);
                    if Instant::now() >= deadline {
                        // The first answers and the last: a stuck key repeats itself.
                        let shown: Vec<String> = answers
                            .iter()
                            .take(3)
                            .chain(answers.last())
                            .map(|a| {
                                let replayed = if a.replayed { " (replayed)" } else { "" };
                                format!("{} {}{replayed}: {}", a.status, a.code, a.detail)
                            })
                            .collect();
                        return Err(format!(
                            "{key} not answered within 60 s ({} answers; the first three and \
                             the last): {shown:#?}",
                            answers.len()
                        ));
                    }
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                keys += 1;
            }
            Ok((keys, refusals, slowest))
        })
    };
    // A quick restart: the calls wait for the database (the pool's 10 s acquire timeout).
    tokio::time::sleep(Duration::from_millis(800)).await;
    tokio::task::block_in_place(|| fleet.pg.restart(Duration::from_millis(1500)));
    tokio::time::sleep(Duration::from_secs(3)).await;
    // An outage longer than that: the calls are refused meanwhile.
    tokio::task::block_in_place(|| fleet.pg.restart(Duration::from_secs(13)));
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::SeqCst);
    let (keys, refusals, slowest) = match agent.await.expect("agent") {
        Ok(answered) => answered,
        Err(unanswered) => {
            let printed = app.printed(Duration::from_millis(500)).await;
            panic!("{unanswered}\nthe app printed since it paired: {printed:?}");
        }
    };
    eprintln!(
        "{keys} keys answered 200; refusals meanwhile: {refusals:?}; slowest call {slowest:?}"
    );
    // The app's socket stayed open throughout: a replica waiting on its store still reads the
    // app's pongs, and a lease the outage left unrenewed is not taken for a dead replica's.
    let printed = app.printed(Duration::from_millis(300)).await;
    assert!(
        printed
            .iter()
            .all(|line| !line.starts_with("status Connecting")),
        "the app lost its socket during the restart: {printed:?}"
    );
    // The outage reached the calls: refused, or held until the database came back (a call
    // waits for it within the pool's 10 s acquire timeout, so one may span most of it).
    assert!(
        !refusals.is_empty() || slowest >= Duration::from_secs(5),
        "the restart neither refused nor delayed a call (slowest {slowest:?})"
    );
    for (status, code) in refusals.keys() {
        assert!(
            matches!(
                (*status, code.as_str()),
                (500, "internal") | (503, "paused")
            ),
            "an unclear answer during the restart: {status} {code:?}"
        );
    }
    // Nothing lost, nothing applied twice.
    assert_eq!(
        count(&http, &fleet.base(1), &token, Duration::from_secs(30)).await,
        keys
    );
    app.say("quit").await;
}
