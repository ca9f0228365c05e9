//! What both MCP surfaces answer the same way, around their own tool execution: the protocol
//! versions they accept, `tools/list`, and resolving a `tools/call` to a declared tool with
//! checked arguments.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, JsonObject, ListToolsResult, ProtocolVersion, Tool,
};
use rmcp::ErrorData;
use serde_json::{Map, Value};

use super::args::check_args;
use super::format::failure;
use super::tools::{self, Surface, ToolAction, ToolSpec};
use crate::security::scopes;

#[cfg_attr(not(feature = "bridge"), allow(dead_code))] // the bridge's, declared beside the server's
/// Every protocol version up to the newest one that still uses `initialize` (the bridge, a
/// stdio server with one client).
pub(crate) fn supported_protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(
        &ProtocolVersion::LATEST_WITH_INITIALIZE,
    ))
}

/// The versions `/agent/mcp` serves: the `initialize` generation with sessions and the
/// sessionless one (2026-07-28) (`docs/mcp.md` §Two generations).
pub(crate) fn server_protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
}

/// A surface's 19 tools with their input schemas, generated once.
#[derive(Debug, Clone)]
pub(crate) struct ToolCatalog {
    specs: Vec<ToolSpec>,
    listed: Vec<Tool>,
}

/// A `tools/call` resolved against a surface's declarations.
pub(crate) enum ResolvedCall {
    /// A declared tool with arguments that passed its checks.
    Run(ToolSpec, Map<String, Value>),
    /// Arguments refused: answered as a tool error, nothing runs.
    Refused(CallToolResult),
}

impl ToolCatalog {
    /// The tools of `surface`, in listing order.
    pub(crate) fn new(surface: Surface) -> Self {
        let specs: Vec<ToolSpec> = tools::tools(surface).collect();
        let listed = specs.iter().map(|s| s.to_tool()).collect();
        ToolCatalog { specs, listed }
    }

    /// The `tools/list` answer.
    pub(crate) fn list(&self) -> ListToolsResult {
        ListToolsResult::with_all_items(self.listed.clone())
    }

    /// The tools a credential granted `scope` may call (`None`: every scope, all of them):
    /// the listing of a read-only grant leaves out the tools that act
    /// (`docs/authorization.md` §Scopes).
    pub(crate) fn listed_for(&self, scope: Option<&str>) -> Vec<Tool> {
        self.specs
            .iter()
            .zip(&self.listed)
            .filter(|(spec, _)| match spec.action {
                ToolAction::Run(op) => scopes::allows(scope, op.spec().scope),
                ToolAction::Connect | ToolAction::Disconnect => true,
            })
            .map(|(_, tool)| tool.clone())
            .collect()
    }

    /// Whether `name` is one of the surface's declared tools (not an action tool).
    pub(crate) fn declares(&self, name: &str) -> bool {
        self.specs.iter().any(|t| t.name == name)
    }

    /// Finds the tool a call names and checks its arguments. An unknown tool is a protocol
    /// error (`invalid_params`), as MCP asks; bad arguments are a tool error with the refusal
    /// text.
    pub(crate) fn resolve(
        &self,
        request: CallToolRequestParams,
    ) -> Result<ResolvedCall, ErrorData> {
        let Some(i) = self.specs.iter().position(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        };
        let spec = self.specs[i];
        let schema: &Arc<JsonObject> = &self.listed[i].input_schema;
        Ok(match check_args(&spec, schema, request.arguments) {
            Ok(args) => ResolvedCall::Run(spec, args),
            Err(refusal) => ResolvedCall::Refused(failure(refusal)),
        })
    }
}
