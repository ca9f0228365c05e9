//! MCP client helpers on rmcp's own client: calling tools and reading their results (a success
//! carries `structuredContent` equal to the JSON of its one text block), and [`McpAgent`], an
//! agent on `/agent/mcp` over Streamable HTTP bound to a token with `connect_session`.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, ServiceExt as _};
use serde_json::{json, Value};

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
