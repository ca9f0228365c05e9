//! A big session's resident memory (`docs/stores.md` §Memory): the todo example as its own
//! process on its default store (a SQLite file) takes 60,000 todos over LAP, as three
//! `bulkAdd`s of 20,000, and its resident size (`VmRSS`) may grow by at most
//! [`CEILING`] times the state's JSON size. Without giving a big commit's freed memory back
//! (`malloc_trim`) it grows by 53–62 times; with it, about 37.

use std::path::PathBuf;

use agent_tests::process::{lap, mint, ServerProcess};
use agent_tests::resident::resident_bytes;
use agent_tests::temp::TempDir;
use serde_json::{json, Value};

/// The growth allowed, as a multiple of the state's JSON size.
const CEILING: f64 = 45.0;

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
    // The save effect's commit, and the release after the last big commit.
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    let grown = rss_bytes(server.pid()) - before;

    let (status, state) = lap(&server.base, token, "/state", json!({})).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(
        state["state"]["todos"].as_array().map(Vec::len),
        Some(todos_before + 60_000)
    );
    let state_bytes = state["state"].to_string().len() as f64;
    let ratio = grown / state_bytes;
    eprintln!(
        "RSS grew {:.0} MiB for a {:.1} MiB state: {ratio:.1}×",
        grown / 1048576.0,
        state_bytes / 1048576.0
    );
    assert!(
        ratio <= CEILING,
        "RSS grew {ratio:.1}× the state's JSON size (ceiling {CEILING}×)"
    );
}
