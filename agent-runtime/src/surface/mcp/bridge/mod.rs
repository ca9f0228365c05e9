//! `agent-bridge` (`docs/lap.md` §8, `docs/mcp.md`): an MCP server over stdio that forwards the
//! tools to any LAP server over HTTP. One binding per process (`{url, token, cached
//! description}`): given at start (`--url`/`--token`, or `AGENT_LAP_URL`/`AGENT_TOKEN`), so no
//! token goes through the conversation, or made and replaced by `connect_session {url,
//! token}`; a `connect` prompt tells the model how to connect.

mod http;

use parking_lot::Mutex;
use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, ListPromptsResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptArgument, PromptMessage, ProtocolVersion, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{json, Value};

pub(crate) use http::{Budgets, HttpForwarder};

use super::calls::{self, ResolvedCall, ToolCatalog};
use super::format::{failure, success, NOT_CONNECTED_BRIDGE};
use super::forward::{connect_flow, forward_tool, DescriptionCache};
use super::tools::{Surface, ToolAction};

/// The bridge's server name.
pub(crate) const BRIDGE_NAME: &str = "agent-bridge";

const CONNECT_PROMPT: &str = "connect";

/// The user message of the `connect` prompt.
pub(crate) fn connect_prompt_text(url: &str, token: &str) -> String {
    format!(
        "Connect to the app: call the connect_session tool with url \"{url}\" and token \"{token}\". Then call observe to read the state and actions, use send_message to act, and use narrate to tell the user what you are doing during multi-step work."
    )
}

struct Connection {
    forwarder: HttpForwarder,
    cache: DescriptionCache,
}

/// The bridge's MCP server handler.
pub(crate) struct Bridge {
    tools: ToolCatalog,
    client: reqwest::Client,
    budgets: Budgets,
    binding: Mutex<Option<Arc<Connection>>>,
}

impl Default for Bridge {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("budgets", &self.budgets)
            .field("connected", &self.binding.lock().is_some())
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// A bridge with the default budgets.
    pub(crate) fn new() -> Self {
        Self::with_budgets(Budgets::default())
    }

    /// A bridge with other time budgets.
    pub(crate) fn with_budgets(budgets: Budgets) -> Self {
        Bridge {
            tools: ToolCatalog::new(Surface::Bridge),
            client: reqwest::Client::new(),
            budgets,
            binding: Mutex::new(None),
        }
    }

    /// A bridge bound at start to the LAP server at `url` with `token`: tools forward at once,
    /// and `connect_session` still rebinds.
    pub(crate) fn bound(url: &str, token: &str) -> Self {
        let bridge = Self::new();
        *bridge.binding.lock() = Some(bridge.connection(url, token));
        bridge
    }

    fn connection(&self, url: &str, token: &str) -> Arc<Connection> {
        Arc::new(Connection {
            forwarder: HttpForwarder::new(self.client.clone(), url, token, self.budgets),
            cache: DescriptionCache::default(),
        })
    }

    async fn connect(&self, url: &str, token: &str) -> CallToolResponse {
        let connection = self.connection(url, token);
        *self.binding.lock() = Some(connection.clone());
        match connect_flow(&connection.forwarder, &connection.cache).await {
            Ok(result) => result.into(),
            Err(text) => {
                let mut binding = self.binding.lock();
                if binding
                    .as_ref()
                    .is_some_and(|c| Arc::ptr_eq(c, &connection))
                {
                    *binding = None;
                }
                failure(text).into()
            }
        }
    }
}

fn text_arg<'a>(args: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
        .with_server_info(Implementation::new(BRIDGE_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions(if self.binding.lock().is_some() {
            "This server drives a running app over its LAP URL and is already connected to \
             it: start with observe, then send_message."
        } else {
            "This server drives a running app over its LAP URL. Start with connect_session \
             (the user gives you the URL and an agt_… token, or use the connect prompt), then \
             observe and send_message."
        })
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        calls::supported_protocol_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(self.tools.list())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (spec, args) = match self.tools.resolve(request)? {
            ResolvedCall::Run(spec, args) => (spec, args),
            ResolvedCall::Refused(refusal) => return Ok(refusal.into()),
        };
        Ok(match spec.action {
            ToolAction::Connect => {
                self.connect(text_arg(&args, "url"), text_arg(&args, "token"))
                    .await
            }
            ToolAction::Disconnect => {
                *self.binding.lock() = None;
                success(json!({"status": "disconnected"})).into()
            }
            ToolAction::Run(op) => {
                let connection = self.binding.lock().clone();
                match connection {
                    None => failure(NOT_CONNECTED_BRIDGE).into(),
                    Some(c) => forward_tool(&c.forwarder, &c.cache, op, args).await.into(),
                }
            }
        })
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let arguments = vec![
            PromptArgument::new("url")
                .with_description("The app's LAP base URL, e.g. http://127.0.0.1:8787/agent/lap/v1")
                .with_required(true),
            PromptArgument::new("token")
                .with_description("The agent token (agt_…) from the app's connect panel")
                .with_required(true),
        ];
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            CONNECT_PROMPT,
            Some("Connect to an app with its LAP URL and an agent token"),
            Some(arguments),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != CONNECT_PROMPT {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let arg = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| ErrorData::invalid_params(format!("{key} is required"), None))
        };
        let (url, token) = (arg("url")?, arg("token")?);
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            connect_prompt_text(&url, &token),
        )]);
        result.description = Some("Connect to the app".into());
        Ok(result.into())
    }
}

/// Serves the bridge on stdin/stdout until the client closes the stream.
pub async fn serve_stdio() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve(Bridge::new()).await
}

/// Serves the bridge on stdin/stdout, bound from the start to the LAP server at `lap_url` with
/// `token` (`connect_session` still rebinds it).
pub async fn serve_stdio_bound(
    lap_url: &str,
    token: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve(Bridge::bound(lap_url, token)).await
}

async fn serve(bridge: Bridge) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let running = bridge.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_prompt_names_url_token_and_the_tool() {
        let text = connect_prompt_text("http://127.0.0.1:1/agent/lap/v1", "agt_x");
        assert_eq!(
            text,
            "Connect to the app: call the connect_session tool with url \"http://127.0.0.1:1/agent/lap/v1\" and token \"agt_x\". Then call observe to read the state and actions, use send_message to act, and use narrate to tell the user what you are doing during multi-step work."
        );
    }
}
