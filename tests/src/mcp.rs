//! MCP client helpers on rmcp's own client: calling tools and reading their results (a success
//! carries `structuredContent` equal to the JSON of its one text block), and [`McpAgent`], an
//! agent on `/agent/mcp` over Streamable HTTP bound to a token with `connect_session`; and
//! [`send_raw`], a raw HTTP request to `/agent/mcp` read back without a client.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, ServiceExt as _};
use serde_json::{json, Value};

use tea_agent_runtime::app::App;

use crate::{Minted, TestServer};

/// Calls a tool (arguments must be a JSON object) and returns its raw result.
pub async fn call(peer: &Peer<RoleClient>, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("tool arguments must be an object: {args}")
    };
    peer.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .expect("tools/call")
}

/// The text of a result's first content block (empty when there is none).
pub fn text(result: &CallToolResult) -> String {
    let wire = serde_json::to_value(result).expect("result serializes");
    wire["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `structuredContent` of a success, checked equal to the JSON of its one text block.
pub fn ok(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "tool failed: {}", text(result));
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let parsed: Value = serde_json::from_str(&text(result)).expect("text content is JSON");
    assert_eq!(parsed, structured, "text and structuredContent differ");
    assert_eq!(result.content.len(), 1, "one text block");
    structured
}

/// The text of a tool error (which carries no `structuredContent`).
pub fn err(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "expected a tool error");
    assert!(result.structured_content.is_none());
    text(result)
}

/// A connected MCP agent.
pub struct McpAgent {
    client: RunningService<RoleClient, ()>,
}

impl McpAgent {
    /// Initializes an MCP session on `<base>/agent/mcp` and binds it to `token`.
    pub async fn connect(base: &str, token: &str) -> McpAgent {
        let transport = StreamableHttpClientTransport::from_uri(format!("{base}/agent/mcp"));
        let client = ().serve(transport).await.expect("MCP initialize");
        let agent = McpAgent { client };
        let connected = agent
            .call("connect_session", json!({ "token": token }))
            .await;
        assert_eq!(connected["status"], "connected", "{connected}");
        agent
    }

    /// Calls a tool that must succeed and returns its `structuredContent`.
    pub async fn call(&self, name: &str, args: Value) -> Value {
        ok(&call(self.client.peer(), name, args).await)
    }

    /// Ends the MCP session.
    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// The confirmation flows of the counter's `delete` (`@requiresConfirm`), the same on every MCP
/// surface: approved by `user` while the agent's call waits (`delete 99` → `confirmed`), then
/// parked past its wait, approved, and polled with `get_confirm_result` (`delete 42`).
pub async fn confirmation_flows<A: App>(
    peer: &Peer<RoleClient>,
    t: &TestServer<A>,
    user: &str,
    m: &Minted,
) {
    let waiting = {
        let peer = peer.clone();
        tokio::spawn(async move {
            let msg = json!({"msg": {"type": "delete", "id": "99"}, "timeoutMs": 5000, "reason": "cleanup"});
            call(&peer, "send_message", msg).await
        })
    };
    let id = t.next_confirm_id(user, m).await;
    let approve = json!({"decision": "approve"});
    assert_eq!(t.decide(user, m, &id, approve.clone()).await.0, 200);
    let confirmed = ok(&waiting.await.expect("join"));
    assert_eq!(confirmed["status"], "confirmed", "{confirmed}");
    assert_eq!(confirmed["stateAfter"]["lastDelete"], "99");

    let parked = ok(&call(
        peer,
        "send_message",
        json!({"msg": {"type": "delete", "id": "42"}, "timeoutMs": 50}),
    )
    .await);
    assert_eq!(parked["status"], "pending-confirmation", "{parked}");
    let id = parked["confirmId"].as_str().expect("confirmId").to_owned();
    let still = ok(&call(
        peer,
        "get_confirm_result",
        json!({"confirmId": id, "timeoutMs": 10}),
    )
    .await);
    assert_eq!(still, json!({"status": "still-pending"}));
    assert_eq!(t.decide(user, m, &id, approve).await.0, 200);
    let result = ok(&call(
        peer,
        "get_confirm_result",
        json!({"confirmId": id, "timeoutMs": 1000}),
    )
    .await);
    assert_eq!(result["status"], "confirmed", "{result}");
    assert_eq!(result["stateAfter"]["lastDelete"], "42");
}

/// `wait_for_change` with nothing happening → `timeout`; then with `args` while `user`
/// dispatches `inc` on the human route → `changed`, which is returned.
pub async fn wait_for_change_flow<A: App>(
    peer: &Peer<RoleClient>,
    t: &TestServer<A>,
    user: &str,
    m: &Minted,
    args: Value,
) -> Value {
    let quiet = ok(&call(peer, "wait_for_change", json!({"timeoutMs": 100})).await);
    assert_eq!(quiet["status"], "timeout", "{quiet}");
    let waiting = {
        let peer = peer.clone();
        tokio::spawn(async move { call(&peer, "wait_for_change", args).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let human = t.human_dispatch(user, m, json!({"type": "inc"})).await;
    assert_eq!(human.body["status"], "dispatched", "{}", human.body);
    let changed = ok(&waiting.await.expect("join"));
    assert_eq!(changed["status"], "changed", "{changed}");
    changed
}

/// A raw `/agent/mcp` answer: status, `mcp-session-id`, `retry-after` and the body (JSON, or
/// the last SSE `data:` line that is JSON; `null` otherwise).
#[derive(Debug)]
pub struct RawAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The `mcp-session-id` header.
    pub session: Option<String>,
    /// The `retry-after` header.
    pub retry_after: Option<String>,
    /// The body.
    pub body: Value,
}

/// A `tools/call` of `tool` on `{base}/agent/mcp` in the stateless generation (2026-07-28:
/// no session, the protocol in `_meta` and headers), with `bearer` when given; `client` names
/// the caller in `clientInfo`.
pub fn stateless_tool_call(
    http: &reqwest::Client,
    base: &str,
    bearer: Option<&str>,
    client: &str,
    tool: &str,
    arguments: Value,
) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let req = http
        .post(format!("{base}/agent/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string());
    match bearer {
        Some(bearer) => req.header("authorization", format!("Bearer {bearer}")),
        None => req,
    }
}

/// Sends `req` and reads its answer, which must end within 10 s.
pub async fn send_raw(req: reqwest::RequestBuilder) -> RawAnswer {
    let resp = req.send().await.expect("request");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (session, retry_after) = (header("mcp-session-id"), header("retry-after"));
    let status = resp.status().as_u16();
    let bytes = tokio::time::timeout(std::time::Duration::from_secs(10), resp.bytes())
        .await
        .expect("the answer ends")
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let body = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .next_back()
            .unwrap_or(Value::Null)
    });
    RawAnswer {
        status,
        session,
        retry_after,
        body,
    }
}
