//! An agent on `/agent/mcp`: rmcp's own client over Streamable HTTP, bound to a token with
//! `connect_session`, calling tools and checking that every success carries `structuredContent`
//! equal to its JSON text.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Value};

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

    /// Calls a tool and returns its raw result.
    pub async fn call_raw(&self, name: &str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("tool arguments must be an object")
        };
        self.client
            .peer()
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
            .expect("tools/call")
    }

    /// Calls a tool that must succeed and returns its `structuredContent` (checked equal to
    /// the JSON in its text content).
    pub async fn call(&self, name: &str, args: Value) -> Value {
        let result = self.call_raw(name, args).await;
        let wire = serde_json::to_value(&result).expect("result serializes");
        assert_ne!(result.is_error, Some(true), "{name} failed: {wire}");
        let text: Value = serde_json::from_str(wire["content"][0]["text"].as_str().expect("text"))
            .expect("text content is JSON");
        let structured = result.structured_content.expect("structuredContent");
        assert_eq!(text, structured, "text and structuredContent differ");
        structured
    }

    /// Ends the MCP session.
    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}
