//! Confirmation in the MCP client (`docs/mcp.md` §Confirmation in the client,
//! `McpOptions::confirm_in_client`): on a legacy session with rmcp's client and an elicitation
//! handler (approve, reject, decline, edits valid and invalid, the console deciding first, the
//! option off), and on 2026-07-28 over raw HTTP (the `input_required` shape, a retry that
//! approves, and `requestState`s tampered, replayed, expired or of another token, all refused
//! with nothing decided).

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::{call, err, ok};
use agent_tests::{Minted, TestServer};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, ServiceExt as _};
use serde_json::{json, Value};
use tea_agent_runtime::clock::ManualClock;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
use tokio::sync::{mpsc, oneshot};

const USER: &str = "alice";

async fn server(on: bool, audit: Arc<MemoryAuditSink>) -> TestServer<Counter> {
    TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .options(|o| o.mcp.confirm_in_client = on)
        .audit(audit)
        .start()
        .await
}

/// One form the client was asked to show, and where its answer goes.
struct Asked {
    params: ElicitRequestParams,
    reply: oneshot::Sender<ElicitResult>,
}

/// A client that declares elicitation and hands every form to the test; a form the server
/// cancels (`notifications/cancelled`) is reported on `cancelled`.
#[derive(Clone)]
struct FormClient {
    asked: mpsc::UnboundedSender<Asked>,
    cancelled: mpsc::UnboundedSender<()>,
}

impl ClientHandler for FormClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(Default::default());
        ClientConfig::new(capabilities, Implementation::new("form-client", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (reply, answer) = oneshot::channel();
        let _ = self.asked.send(Asked {
            params: request,
            reply,
        });
        let cancel = ElicitResult::new(ElicitationAction::Cancel);
        tokio::select! {
            answer = answer => Ok(answer.unwrap_or(cancel)),
            () = context.ct.cancelled() => {
                let _ = self.cancelled.send(());
                Ok(cancel)
            }
        }
    }
}

/// A legacy MCP session of a client with a form, bound to `m`'s token.
async fn form_client(
    t: &TestServer<Counter>,
    m: &Minted,
) -> (
    RunningService<RoleClient, FormClient>,
    mpsc::UnboundedReceiver<Asked>,
    mpsc::UnboundedReceiver<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (cancelled, cancels) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/agent/mcp", t.base));
    let client = FormClient {
        asked: tx,
        cancelled,
    }
    .serve(transport)
    .await
    .expect("initialize");
    let connected = ok(&call(client.peer(), "connect_session", json!({"token": m.token})).await);
    assert_eq!(connected["status"], "connected", "{connected}");
    (client, rx, cancels)
}

fn accept(content: Value) -> ElicitResult {
    let mut result = ElicitResult::new(ElicitationAction::Accept);
    result.content = Some(content);
    result
}

fn message_of(params: &ElicitRequestParams) -> String {
    match params {
        ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
        other => panic!("not a form: {other:?}"),
    }
}

/// Sends `delete {id}` on a task; answers the form the client is asked with `answer` and
/// returns the call's result.
async fn delete_answered(
    client: &RunningService<RoleClient, FormClient>,
    asked: &mut mpsc::UnboundedReceiver<Asked>,
    id: &str,
    answer: ElicitResult,
) -> rmcp::model::CallToolResult {
    let peer = client.peer().clone();
    let args = json!({"msg": {"type": "delete", "id": id}, "reason": "cleanup"});
    let waiting = tokio::spawn(async move { call(&peer, "send_message", args).await });
    let form = asked.recv().await.expect("a form");
    let _ = form.reply.send(answer);
    waiting.await.expect("join")
}

#[tokio::test]
async fn legacy_client_approves_rejects_and_edits() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = server(true, audit.clone()).await;
    let m = t.mint(USER, None).await;
    let (client, mut asked, _cancels) = form_client(&t, &m).await;

    // The form shows the proposal while the console shows it too.
    let peer = client.peer().clone();
    let args = json!({"msg": {"type": "delete", "id": "42"}, "reason": "cleanup"});
    let waiting = tokio::spawn(async move { call(&peer, "send_message", args).await });
    let form = asked.recv().await.expect("a form");
    let message = message_of(&form.params);
    for part in [
        "delete a row",
        "deleting cannot be undone",
        "cleanup",
        r#"{"id":"42"}"#,
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    let schema = serde_json::to_value(&form.params).expect("params");
    assert_eq!(
        schema["requestedSchema"]["properties"]["payload"]["default"],
        r#"{"id":"42"}"#
    );
    assert_eq!(t.pending(USER, &m).await.len(), 1, "the console shows it");
    let _ = form.reply.send(accept(json!({"decision": "approve"})));
    let approved = ok(&waiting.await.expect("join"));
    assert_eq!(approved["status"], "confirmed", "{approved}");
    assert_eq!(approved["stateAfter"]["lastDelete"], "42");
    let by_client = audit
        .entries()
        .into_iter()
        .any(|e| e.event == AuditEvent::ConfirmApproved && e.detail["by"] == "client");
    assert!(by_client, "the approval is audited as the client's");

    // Reject in the form, and decline it: both reject.
    let rejected = ok(&delete_answered(
        &client,
        &mut asked,
        "43",
        accept(json!({"decision": "reject"})),
    )
    .await);
    assert_eq!(
        rejected,
        json!({"status": "rejected", "reason": "user-cancelled"})
    );
    let declined = ElicitResult::new(ElicitationAction::Decline);
    let rejected = ok(&delete_answered(&client, &mut asked, "44", declined).await);
    assert_eq!(rejected["status"], "rejected", "{rejected}");

    // An edited payload is approved as edited.
    let edit = accept(json!({"decision": "approve", "payload": "{\"id\": \"7\"}"}));
    let edited = ok(&delete_answered(&client, &mut asked, "45", edit).await);
    assert_eq!(edited["status"], "confirmed", "{edited}");
    assert_eq!(edited["stateAfter"]["lastDelete"], "7");
    assert_eq!(edited["msg"], json!({"type": "delete", "id": "7"}));

    // An edit the console would refuse is refused the same way; the proposal stays pending.
    let bad = accept(json!({"decision": "approve", "payload": "{\"id\": 5}"}));
    let refused = err(&delete_answered(&client, &mut asked, "46", bad).await);
    assert!(refused.contains("still pending"), "{refused}");
    let pending = t.pending(USER, &m).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["payload"], json!({"id": "46"}));

    // Cancelled: nothing decided, answered as without the option.
    let cancelled = ElicitResult::new(ElicitationAction::Cancel);
    let parked = ok(&delete_answered(&client, &mut asked, "47", cancelled).await);
    assert_eq!(parked["status"], "pending-confirmation", "{parked}");
    assert_eq!(t.pending(USER, &m).await.len(), 2);

    // The action tool asks the same way.
    let peer = client.peer().clone();
    let args = json!({"id": "48", "_reason": "tidy"});
    let waiting = tokio::spawn(async move { call(&peer, "do_delete", args).await });
    let form = asked.recv().await.expect("a form");
    assert!(message_of(&form.params).contains("tidy"));
    let _ = form.reply.send(accept(json!({"decision": "approve"})));
    let approved = ok(&waiting.await.expect("join"));
    assert_eq!(approved["stateAfter"]["lastDelete"], "48", "{approved}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn legacy_console_decides_first() {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = server(true, audit).await;
    let m = t.mint(USER, None).await;
    let (client, mut asked, mut cancels) = form_client(&t, &m).await;
    let peer = client.peer().clone();
    let args = json!({"msg": {"type": "delete", "id": "9"}});
    let waiting = tokio::spawn(async move { call(&peer, "send_message", args).await });
    let form = asked.recv().await.expect("a form");
    // The human rejects in the console while the form is open: the call answers that.
    let id = t.next_confirm_id(USER, &m).await;
    assert_eq!(
        t.decide(USER, &m, &id, json!({"decision": "reject"}))
            .await
            .0,
        200
    );
    let answered = ok(&waiting.await.expect("join"));
    assert_eq!(
        answered,
        json!({"status": "rejected", "reason": "user-cancelled"})
    );
    // The client is told to close its form.
    let told = tokio::time::timeout(Duration::from_secs(5), cancels.recv()).await;
    assert_eq!(told.ok().flatten(), Some(()), "the form is cancelled");
    // The form's late approval decides nothing.
    let _ = form.reply.send(accept(json!({"decision": "approve"})));
    let state = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(
        state.body["state"]["lastDelete"],
        Value::Null,
        "{}",
        state.body
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn option_off_asks_no_client() {
    let t = server(false, Arc::new(MemoryAuditSink::new())).await;
    let m = t.mint(USER, None).await;
    let (client, mut asked, _cancels) = form_client(&t, &m).await;
    let args = json!({"msg": {"type": "delete", "id": "1"}, "timeoutMs": 50});
    let parked = ok(&call(client.peer(), "send_message", args).await);
    assert_eq!(parked["status"], "pending-confirmation", "{parked}");
    assert!(asked.try_recv().is_err(), "no form with the option off");
    let _ = client.cancel().await;
}

/// A raw 2026-07-28 client with a bearer, declaring elicitation.
struct Stateless {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Stateless {
    fn new(t: &TestServer<Counter>, token: &str) -> Self {
        Stateless {
            http: reqwest::Client::new(),
            url: format!("{}/agent/mcp", t.base),
            token: token.to_owned(),
        }
    }

    /// `tools/call` of `tool` with `extra` params (`inputResponses`, `requestState`); answers
    /// the JSON-RPC `result`.
    async fn call(&self, tool: &str, arguments: Value, extra: Value) -> Value {
        let mut params = json!({"name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }});
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let resp = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(body.to_string())
            .send()
            .await
            .expect("request");
        let text = resp.text().await.expect("body");
        let message: Value = serde_json::from_str(&text)
            .ok()
            .or_else(|| {
                text.lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .filter_map(|d| serde_json::from_str(d.trim()).ok())
                    .next_back()
            })
            .unwrap_or_else(|| panic!("not JSON: {text}"));
        assert!(message.get("error").is_none(), "{message}");
        message["result"].clone()
    }

    /// `delete {id}`: the `input_required` result.
    async fn propose(&self, id: &str) -> Value {
        let args = json!({"msg": {"type": "delete", "id": id}, "reason": "tidy"});
        self.call("send_message", args, json!({})).await
    }

    /// The retry of `delete` with `state` and the form's `answer`.
    async fn retry(&self, state: &str, answer: Value) -> Value {
        let args = json!({"msg": {"type": "delete", "id": "ignored"}});
        let extra = json!({"requestState": state, "inputResponses": {"confirm": answer}});
        self.call("send_message", args, extra).await
    }
}

fn approve() -> Value {
    json!({"action": "accept", "content": {"decision": "approve"}})
}

fn state_of(result: &Value) -> String {
    result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned()
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

#[tokio::test]
async fn stateless_input_required_and_retry() {
    let clock = ManualClock::new(1_000_000);
    let t = TestServer::builder(Counter)
        .rate_limit("100000/minute")
        .options(|o| o.mcp.confirm_in_client = true)
        .config(|c| c.clock = Arc::new(clock.clone()))
        .start()
        .await;
    let m = t.mint(USER, None).await;
    let client = Stateless::new(&t, &m.token);

    let asked = client.propose("42").await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let request = &asked["inputRequests"]["confirm"];
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["mode"], "form", "{asked}");
    let message = request["params"]["message"].as_str().expect("message");
    assert!(message.contains("deleting cannot be undone") && message.contains("tidy"));
    assert_eq!(t.pending(USER, &m).await.len(), 1, "the console shows it");
    let state = state_of(&asked);

    // Tampered: one character of the tag changed. Nothing decided.
    let mut tampered = state.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    let refused = error_text(&client.retry(&tampered, approve()).await);
    assert!(refused.contains("does not verify"), "{refused}");
    // Another token's requestState.
    let other = t.mint(USER, Some(&m.session_id)).await;
    let foreign = Stateless::new(&t, &other.token);
    let refused = error_text(&foreign.retry(&state, approve()).await);
    assert!(refused.contains("another agent token"), "{refused}");
    assert_eq!(t.pending(USER, &m).await.len(), 1, "nothing decided");

    // The genuine retry approves, answered as send_message answers a confirmed message.
    let confirmed = client.retry(&state, approve()).await;
    assert_eq!(
        confirmed["structuredContent"]["status"], "confirmed",
        "{confirmed}"
    );
    assert_eq!(
        confirmed["structuredContent"]["stateAfter"]["lastDelete"],
        "42"
    );
    // Replayed: refused, already decided.
    let refused = error_text(&client.retry(&state, approve()).await);
    assert!(refused.contains("already approved"), "{refused}");

    // Expired: past the option's ten minutes on the server's clock.
    let asked = client.propose("43").await;
    let state = state_of(&asked);
    clock.advance(10 * 60 * 1000 + 1);
    let refused = error_text(&client.retry(&state, approve()).await);
    assert!(refused.contains("expired"), "{refused}");

    // A rejection in the form rejects.
    let asked = client.propose("44").await;
    let reject = json!({"action": "accept", "content": {"decision": "reject"}});
    let rejected = client.retry(&state_of(&asked), reject).await;
    assert_eq!(
        rejected["structuredContent"],
        json!({"status": "rejected", "reason": "user-cancelled"})
    );
}
