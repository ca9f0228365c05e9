//! Transcripts over real HTTP and MCP (`docs/lap.md` §6.6b, `docs/security.md` §Transcripts):
//! LAP and MCP calls are recorded by the same code, with the token's id and never the token;
//! a request naming the redacted field records only what the agent was answered; the owner
//! alone exports it; a server that does not record answers 404.

use agent_examples::todo::TodoApp;
use agent_tests::mcp::McpAgent;
use agent_tests::TestServer;
use serde_json::json;

#[tokio::test]
async fn lap_and_mcp_calls_are_recorded_and_only_the_owner_exports_them() {
    let t = TestServer::builder(TodoApp::default())
        .config(|c| c.transcripts = true)
        .start()
        .await;
    let a = t.mint("alice", None).await;
    let b = t.mint("alice", Some(&a.session_id)).await;
    let add = json!({"msg": {"type": "add", "title": "buy milk"}});
    assert_eq!(t.lap(&a.token, "/message", &add).await.status, 200);
    // The redacted field, named: the agent is answered without it, and so is the transcript.
    let asked = t
        .lap(&a.token, "/query-state", &json!({"path": "/apiKey"}))
        .await;
    assert_eq!(asked.body["found"], false, "{}", asked.body);
    let mcp = McpAgent::connect(&t.base, &b.token).await;
    let state = mcp.call("get_state", json!({})).await;
    assert!(state["state"].get("apiKey").is_none(), "{state}");
    mcp.close().await;

    let path = format!("/agent/human/sessions/{}/transcript", a.session_id);
    let exported = t.get(&path, Some("alice")).await;
    assert_eq!(exported.status, 200, "{}", exported.body);
    let file = exported.body.to_string();
    assert!(!file.contains("sk-demo-secret"), "{file}");
    assert!(!file.contains(&a.token) && !file.contains(&b.token));
    assert_eq!(exported.body["format"], "agent-transcript");
    assert_eq!(exported.body["version"], 1);
    assert_eq!(exported.body["app"]["name"], "todo");
    let calls: Vec<(String, String)> = exported.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["kind"], "call");
            let op = e["op"].as_str().unwrap().to_string();
            (e["tid"].as_str().unwrap().to_string(), op)
        })
        .collect();
    assert_eq!(
        calls,
        [
            (a.tid.clone(), "send_message".to_string()),
            (a.tid.clone(), "query_state".to_string()),
            // `connect_session` observes the app: the agent got that answer too.
            (b.tid.clone(), "observe".to_string()),
            (b.tid.clone(), "get_state".to_string()),
        ]
    );
    let first = &exported.body["entries"][0];
    assert_eq!(first["request"], add);
    assert_eq!(first["status"], 200);
    assert_eq!(first["answer"]["status"], "dispatched");

    // One token's entries only.
    let only_b = t
        .get(&format!("{path}?tid={}", b.tid), Some("alice"))
        .await
        .body;
    assert_eq!(only_b["tid"], b.tid.as_str());
    assert_eq!(only_b["entries"].as_array().map(Vec::len), Some(2));
    // Another owner learns nothing, an agent token is refused.
    assert_eq!(t.get(&path, Some("mallory")).await.status, 403);
    let with_bearer = t
        .http
        .get(format!("{}{path}", t.base))
        .bearer_auth(&a.token)
        .send()
        .await
        .unwrap();
    assert_eq!(with_bearer.status().as_u16(), 403);
}

#[tokio::test]
async fn a_server_that_does_not_record_answers_404() {
    let t = TestServer::builder(TodoApp::default()).start().await;
    let a = t.mint("alice", None).await;
    let add = json!({"msg": {"type": "add", "title": "x"}});
    assert_eq!(t.lap(&a.token, "/message", &add).await.status, 200);
    let path = format!("/agent/human/sessions/{}/transcript", a.session_id);
    let answer = t.get(&path, Some("alice")).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert_eq!(answer.body["error"]["code"], "not-found");
    let session = t.server.host().session(&a.session_id).unwrap();
    assert_eq!(session.transcript(None).entries, Vec::new());
}
