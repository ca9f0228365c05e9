//! A big session's resident memory (`docs/stores.md` §Memory): the todo example as its own
//! process on its default store (a SQLite file) takes 60,000 todos over LAP, as three
//! `bulkAdd`s of 20,000, and its resident size (`VmRSS`) must get under [`CEILING`] times
//! the state's JSON size once the big commits' freed memory is given back (`malloc_trim`).
//! A debug build lands at 5.2–5.6 times (7.8–10 while a message was read from a clone of its
//! JSON tree, about 37 before the compact snapshot trees, 51–62 before the release).

use std::path::PathBuf;

use agent_tests::process::{lap, mint, ServerProcess};
use agent_tests::resident::resident_bytes;
use agent_tests::temp::TempDir;
use serde_json::{json, Value};

/// The growth allowed, as a multiple of the state's JSON size (issue 23).
const CEILING: f64 = 8.0;

fn rss_bytes(pid: u32) -> f64 {
    let bytes = resident_bytes(Some(pid));
    assert!(bytes > 0, "no VmRSS for process {pid}");
    bytes as f64
}

#[tokio::test]
async fn sixty_thousand_todos_stay_under_the_ceiling() {
    let dir = TempDir::new("session-memory");
    let server = ServerProcess::start(
        &PathBuf::from(env!("CARGO_BIN_EXE_todo-server")),
        &[
            "--db",
            &dir.file("todo.db"),
            "--rate-limit",
            "1000000/second",
        ],
    );
    let minted = mint(&reqwest::Client::new(), &server.base, json!({})).await;
    let token = minted["token"].as_str().expect("token");
    let add = json!({"msg": {"type": "add", "title": "first"}, "waitFor": "idle"});
    assert_eq!(lap(&server.base, token, "/message", add).await.0, 200);
    let (_, first) = lap(&server.base, token, "/state", json!({})).await;
    let todos_before = first["state"]["todos"].as_array().map_or(0, Vec::len);
    let before = rss_bytes(server.pid());

    for round in 0..3 {
        let todos: Vec<Value> = (0..20_000)
            .map(|i| json!({"title": format!("todo number {i} of round {round}")}))
            .collect();
        let bulk = json!({"msg": {"type": "bulkAdd", "todos": todos}, "waitFor": "idle"});
        let (status, answer) = lap(&server.base, token, "/message", bulk).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["status"], "dispatched", "{answer}");
    }
    let (status, state) = lap(&server.base, token, "/state", json!({})).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(
        state["state"]["todos"].as_array().map(Vec::len),
        Some(todos_before + 60_000)
    );
    let state_bytes = state["state"].to_string().len() as f64;
    drop(state);

    // The release comes a second after the last big commit, and again five seconds later:
    // the growth must get under the ceiling within eight seconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
    let ratio = loop {
        let ratio = (rss_bytes(server.pid()) - before) / state_bytes;
        if ratio <= CEILING || std::time::Instant::now() > deadline {
            break ratio;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };

    eprintln!(
        "RSS grew {ratio:.1}× a {:.1} MiB state",
        state_bytes / 1048576.0
    );
    assert!(
        ratio <= CEILING,
        "RSS grew {ratio:.1}× the state's JSON size (ceiling {CEILING}×)"
    );
}
