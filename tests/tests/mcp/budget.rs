//! MCP answers within a budget (`docs/mcp.md` §Answers within a budget): with 50,000 todos,
//! every result is within `McpOptions::result_budget_chars` and says `truncated` where it cut,
//! and an agent that follows the calls it names reads every todo, on both protocol
//! generations. LAP takes the same budget as `budgetChars` and is unchanged without it.

use std::collections::VecDeque;
use std::time::Instant;

use agent_examples::todo::TodoApp;
use agent_tests::mcp::{call, ok, text};
use agent_tests::{Minted, TestServer};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{json, Value};

use super::actions::{legacy, server, stateless, Listener};

/// The default budget.
const BUDGET: usize = 40_000;
const TODOS: usize = 50_000;

/// A todo server whose session holds `TODOS` todos (two of the app's own, the rest added in
/// a few `bulkAdd` messages).
async fn seeded() -> (TestServer<TodoApp>, Minted) {
    let t = server(TodoApp::default()).await;
    let m = t.mint("alice", None).await;
    let mut added = 2;
    while added < TODOS {
        let n = (TODOS - added).min(10_000);
        let todos: Vec<Value> = (0..n)
            .map(|i| json!({"title": format!("todo {}", added + i)}))
            .collect();
        // A commit of 10,000 todos can take past the default timeout on a loaded machine
        // (a debug build): waited for up to a minute, so the session holds them all after.
        let body = json!({"msg": {"type": "bulkAdd", "todos": todos}, "waitFor": "idle",
                          "timeoutMs": 60_000});
        let a = t.lap(&m.token, "/message", &body).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.body["status"], "dispatched", "{}", a.body["reason"]);
        assert_eq!(a.body["drain"]["timedOut"], false, "{}", a.body["drain"]);
        added += n;
    }
    (t, m)
}

/// The real todos, read through LAP (no budget).
async fn real_todos(t: &TestServer<TodoApp>, m: &Minted) -> Vec<Value> {
    let a = t.lap(&m.token, "/state", &json!({"path": "/todos"})).await;
    assert_eq!(a.status, 200);
    a.body["state"].as_array().expect("todos").clone()
}

/// Calls `tool` and returns its result's JSON, checked within the budget.
async fn within(client: &Listener, tool: &str, args: Value) -> Value {
    let result = call(client.peer(), tool, args.clone()).await;
    let size = text(&result).chars().count();
    assert!(size <= BUDGET, "{tool} {args}: {size} characters");
    ok(&result)
}

/// Follows every `read` of `answer`'s elided parts of `/todos`, and the pages' `nextOffset`,
/// into `todos` (by index). Answers how many calls it made.
async fn follow(client: &Listener, answer: &Value, todos: &mut [Option<Value>]) -> usize {
    let mut reads: VecDeque<Value> = VecDeque::new();
    let push_elided = |answer: &Value, reads: &mut VecDeque<Value>| {
        for part in answer["elided"].as_array().into_iter().flatten() {
            assert_eq!(part["read"]["tool"], "query_state", "{part}");
            reads.push_back(part["read"]["arguments"].clone());
        }
    };
    push_elided(answer, &mut reads);
    let mut calls = 0;
    while let Some(args) = reads.pop_front() {
        assert_eq!(args["path"], "/todos", "{args}");
        let page = within(client, "query_state", args.clone()).await;
        calls += 1;
        assert_eq!(page["found"], true, "{page}");
        assert_eq!(page["total"], todos.len(), "{page}");
        let offset = page["offset"].as_u64().unwrap() as usize;
        for (i, todo) in page["value"].as_array().unwrap().iter().enumerate() {
            todos[offset + i] = Some(todo.clone());
        }
        push_elided(&page, &mut reads);
        if let Some(next) = page["nextOffset"].as_u64() {
            let mut args = args.clone();
            args["offset"] = json!(next);
            reads.push_back(args);
        }
        assert!(calls < 10_000, "the reads do not end");
    }
    calls
}

/// Every answer an agent reads of the seeded session through `client` fits the budget and
/// says `truncated`; a dispatch over the budget names the read that replaces its diff.
async fn every_answer_fits(client: &Listener) {
    let observe = within(client, "observe", json!({})).await;
    assert_eq!(observe["truncated"], true);
    assert!(observe["actions"].is_array() && observe["description"].is_object());
    let elided = &observe["elided"][0];
    assert_eq!(elided["path"], "/state/todos");
    assert!(elided["size"].as_u64().unwrap() >= TODOS as u64);

    let described = within(client, "describe_app", json!({})).await;
    assert!(described["schemaHash"].is_string());

    let resource = client
        .peer()
        .read_resource(ReadResourceRequestParams::new("agent://state"))
        .await
        .expect("resources/read");
    let ResourceContents::TextResourceContents { text: body, .. } = &resource.contents[0] else {
        panic!("not text");
    };
    assert!(
        body.chars().count() <= BUDGET,
        "agent://state: {}",
        body.len()
    );
    let resource: Value = serde_json::from_str(body).unwrap();
    assert_eq!(resource["truncated"], true);
    assert_eq!(resource["elided"][0]["path"], "/state/todos");

    // A dispatch whose diff is over the budget: its seq, and the read that replaces the diff.
    let new: Vec<Value> = (0..400)
        .map(|i| json!({"title": format!("more {i}")}))
        .collect();
    let sent = within(client, "do_bulkAdd", json!({"todos": new})).await;
    assert_eq!(sent["status"], "dispatched", "{sent}");
    assert_eq!(sent["truncated"], true);
    assert!(sent.get("stateDiff").is_none());
    let seq = sent["seq"].as_u64().expect("seq");
    assert_eq!(sent["read"]["tool"], "get_state");
    let since = sent["read"]["arguments"]["sinceSeq"]
        .as_u64()
        .expect("sinceSeq");
    assert!(since < seq, "{sent}");
    // The patch since then is over the budget as well: the whole state, bounded.
    let diff = within(client, "get_state", sent["read"]["arguments"].clone()).await;
    assert_eq!(diff["truncated"], true, "{diff}");
    assert_eq!(diff["read"], json!({"tool": "get_state", "arguments": {}}));
    println!(
        "observe {} chars, agent://state {}, describe_app {}, do_bulkAdd {}, get_state \
         sinceSeq {}",
        observe.to_string().len(),
        body.len(),
        described.to_string().len(),
        sent.to_string().len(),
        diff.to_string().len(),
    );
}

/// Reads the bounded state, then every todo by the calls it names; answers them.
async fn read_every_todo(client: &Listener, total: usize) -> Vec<Value> {
    let started = Instant::now();
    let state = within(client, "get_state", json!({})).await;
    assert_eq!(state["truncated"], true);
    let mut todos: Vec<Option<Value>> = vec![None; total];
    for (i, todo) in state["state"]["todos"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        todos[i] = Some(todo.clone());
    }
    let calls = follow(client, &state, &mut todos).await;
    println!(
        "get_state {} chars; {total} todos read in {calls} query_state pages in {:?}",
        state.to_string().len(),
        started.elapsed()
    );
    todos
        .into_iter()
        .map(|t| t.expect("every todo read"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_fits_the_budget_and_the_reads_it_names_read_everything() {
    let started = Instant::now();
    let (t, m) = seeded().await;
    println!("seeded {TODOS} todos in {:?}", started.elapsed());

    let sessionless = stateless(&t, Some(&m.token)).await;
    let (session, _heard) = legacy(&t, Some(&m.token)).await;
    every_answer_fits(&sessionless).await;
    every_answer_fits(&session).await;

    // The state stands still now: both agents read all of it, side by side.
    let real = real_todos(&t, &m).await;
    let (a, b) = tokio::join!(
        read_every_todo(&sessionless, real.len()),
        read_every_todo(&session, real.len())
    );
    assert!(
        a == real,
        "the todos read on 2026-07-28 differ from the state"
    );
    assert!(
        b == real,
        "the todos read on 2025-11-25 differ from the state"
    );
    println!("in all {:?}", started.elapsed());
    let _ = sessionless.cancel().await;
    let _ = session.cancel().await;
}

#[tokio::test]
async fn lap_bounds_an_answer_only_when_asked() {
    let (t, m) = seeded().await;
    let whole = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(whole.status, 200);
    assert!(whole.body.get("truncated").is_none());
    assert_eq!(
        whole.body["state"]["todos"].as_array().unwrap().len(),
        TODOS
    );

    let bounded = t
        .lap(&m.token, "/state", &json!({"budgetChars": 10_000}))
        .await;
    assert_eq!(bounded.status, 200);
    assert!(bounded.body.to_string().len() <= 10_000);
    assert_eq!(bounded.body["truncated"], true);
    assert_eq!(
        bounded.body["elided"][0]["read"]["arguments"]["path"],
        "/todos"
    );

    let page = json!({"path": "/todos", "offset": 10, "limit": 5, "budgetChars": 10_000});
    let page = t.lap(&m.token, "/query-state", &page).await;
    assert_eq!(page.body["value"].as_array().unwrap().len(), 5);
    assert_eq!(page.body["total"], TODOS);
    assert_eq!(page.body["nextOffset"], 15);
    assert!(page.body.get("truncated").is_none());

    let refused = t.lap(&m.token, "/state", &json!({"budgetChars": 0})).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
}
