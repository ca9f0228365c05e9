//! Issue 37 items 1–2 on a paired session: the todo app hosted by the Rust pairing client, its
//! `import` driven through the server. The client sends the work's progress as `progress`
//! frames (the server's `hello-ack` lists them) and the agent's MCP call hears them as
//! `notifications/progress`; the agent's `/cancel` is relayed as `cancel_work` and the client
//! cancels the agent's own work on its session (the human's is refused 403); an MCP client's
//! `notifications/cancelled` reaches the client as `rpc-cancel`, which cancels the work the
//! call's message started (`docs/pairing.md` §Frames).

use std::time::Duration;

use agent_examples::todo::TodoApp;
use agent_tests::TestServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{json, Value};
use tea_agent_runtime::pairing::client::{PairingClient, PairingConfig, PairingStatus};
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::{Host, Session};
use tea_agent_schema::protocol::WaitFor;
use tokio::sync::mpsc;

/// An MCP client that keeps the progress it hears.
#[derive(Clone)]
struct Heard(mpsc::UnboundedSender<ProgressNotificationParam>);

impl ClientHandler for Heard {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

/// Waits until `session` runs work `pick` accepts, and answers its id.
async fn running(session: &Session<TodoApp>, pick: impl Fn(&Value) -> bool) -> u64 {
    for _ in 0..1000 {
        let work = serde_json::to_value(session.running_work()).unwrap();
        if let Some(w) = work.as_array().unwrap().iter().find(|w| pick(w)) {
            return w["id"].as_u64().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "no such work ran: {}",
        serde_json::to_value(session.running_work()).unwrap()
    );
}

/// Waits until nothing runs on `session`.
async fn idle(session: &Session<TodoApp>) {
    for _ in 0..1000 {
        if session.running_work().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the work did not end");
}

fn todos(session: &Session<TodoApp>) -> usize {
    session.state()["todos"].as_array().expect("todos").len()
}

fn call(msg: Value) -> ClientRequest {
    let arguments = json!({"msg": msg, "waitFor": "drained", "timeoutMs": 20000});
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("send_message")
            .with_arguments(arguments.as_object().unwrap().clone()),
    ))
}

#[tokio::test]
async fn a_paired_apps_import_reports_progress_and_is_cancelled_through_the_relay() {
    let app = TodoApp {
        import_step: Duration::from_millis(30),
        ..TodoApp::default()
    };
    let t = TestServer::builder(app)
        .rate_limit("100000/minute")
        .pairing(|p| {
            p.native_apps = true;
            p.mint_paired = true;
        })
        .start()
        .await;
    let minted = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    let token = minted.body["token"].as_str().unwrap().to_string();
    let host = Host::new(app).unwrap();
    let session = host.create_session(None).unwrap();
    let client =
        PairingClient::new(&host, session.clone(), PairingConfig::new(&t.base, &token)).spawn();
    client
        .wait_for(Duration::from_secs(10), |s| *s == PairingStatus::Paired)
        .await;

    // Progress: rmcp sends a progressToken with every call; the relay's rpc hears the app's
    // `progress` frames and the call hears them as notifications, rising, before its result.
    let (tx, mut heard) = mpsc::unbounded_channel();
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}/agent/mcp", t.base));
    config = config.auth_header(token.clone());
    let agent: RunningService<RoleClient, Heard> = Heard(tx)
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize");
    let start = todos(&session);
    let answer = agent
        .send_request(call(json!({"type": "import", "count": 60})))
        .await
        .expect("send_message");
    let answer = serde_json::to_value(answer).unwrap();
    let text = answer["content"][0]["text"].as_str().unwrap();
    let body: Value = serde_json::from_str(text).unwrap();
    assert_eq!(body["status"], "dispatched", "{body}");
    let mut reports = Vec::new();
    while let Ok(p) = heard.try_recv() {
        reports.push(p);
    }
    assert!(!reports.is_empty(), "no progress was heard");
    assert!(
        reports.windows(2).all(|w| w[0].progress < w[1].progress),
        "{reports:?}"
    );
    assert!(reports.iter().all(|p| p.total == Some(60.0)), "{reports:?}");
    assert_eq!(todos(&session) - start, 60);

    // The agent's `/cancel` is relayed: the client cancels the agent's own work.
    let waiting = t.spawn_lap(
        &token,
        "/message",
        json!({"msg": {"type": "import", "count": 1000}, "waitFor": "drained",
               "timeoutMs": 20000}),
    );
    let work = running(&session, |w| w["startedBy"] == "agent").await;
    let cancelled = t.lap(&token, "/cancel", &json!({"all": true})).await;
    assert_eq!(
        cancelled.body,
        json!({"status": "cancelled", "cancelled": [work]}),
        "{}",
        cancelled.body
    );
    let answer = waiting.await.unwrap();
    assert_eq!(
        answer.body["drain"]["cancelled"],
        json!([{"id": work, "by": "agent"}]),
        "{}",
        answer.body
    );
    idle(&session).await;
    let again = t.lap(&token, "/cancel", &json!({"all": true})).await;
    assert_eq!(again.body["status"], "not-running", "{}", again.body);

    // The human's work is not the agent's: refused 403, and it goes on.
    let mut idle_only = DispatchOptions::default();
    idle_only.wait_for = WaitFor::Idle;
    session
        .dispatch_as_human(&json!({"type": "import", "count": 1000}), idle_only)
        .await
        .expect("the human's import");
    let human = running(&session, |w| w["startedBy"] == "human").await;
    let refused = t.lap(&token, "/cancel", &json!({"work": human})).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "forbidden");
    assert!(session.cancel_work(human));
    idle(&session).await;

    // The MCP client gives up on its call: `notifications/cancelled` reaches the app as
    // `rpc-cancel`, and the import the call's message started stops.
    let before = todos(&session);
    let handle = agent
        .peer()
        .send_cancellable_request(
            call(json!({"type": "import", "count": 1000})),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    running(&session, |w| w["startedBy"] == "agent").await;
    handle.cancel(Some("enough".into())).await.expect("cancel");
    idle(&session).await;
    assert!(todos(&session) - before < 500);
    let log = serde_json::to_value(session.recent_log(20, None)).unwrap();
    assert!(
        log.as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "cancelled"
                && e["detail"] == "cancelled by the agent's MCP client"),
        "{log}"
    );

    agent.cancel().await.unwrap();
    client.stop().await;
}
