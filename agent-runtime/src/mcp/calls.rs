//! What both MCP surfaces answer the same way, around their own tool execution: the protocol
//! versions they accept, `tools/list`, and resolving a `tools/call` to a declared tool with
//! checked arguments.

use std::borrow::Cow;

use rmcp::model::{CallToolRequestParams, CallToolResult, ListToolsResult, ProtocolVersion};
use rmcp::ErrorData;
use serde_json::{Map, Value};

use super::args::check_args;
use super::format::failure;
use super::tools::{self, Surface, ToolSpec};

/// Every protocol version up to the newest one that still uses `initialize`.
pub fn supported_protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(
        &ProtocolVersion::LATEST_WITH_INITIALIZE,
    ))
}

/// The `tools/list` answer of a surface: its 16 tools, in declaration order.
pub fn list_tools(surface: Surface) -> ListToolsResult {
    ListToolsResult::with_all_items(tools::tools(surface).map(|t| t.to_tool()).collect())
}

/// A `tools/call` resolved against a surface's declarations.
pub enum ResolvedCall {
    /// A declared tool with arguments that passed its checks.
    Run(&'static ToolSpec, Map<String, Value>),
    /// Arguments refused: answered as a tool error, nothing is forwarded.
    Refused(CallToolResult),
}

/// Finds the tool a call names and checks its arguments. An unknown tool is a protocol error
/// (`invalid_params`), as MCP asks; bad arguments are a tool error with the refusal text.
pub fn resolve(
    surface: Surface,
    request: &CallToolRequestParams,
) -> Result<ResolvedCall, ErrorData> {
    let Some(spec) = tools::find(surface, &request.name) else {
        return Err(ErrorData::invalid_params(
            format!("unknown tool: {}", request.name),
            None,
        ));
    };
    Ok(match check_args(spec, request.arguments.as_ref()) {
        Ok(args) => ResolvedCall::Run(spec, args),
        Err(refusal) => ResolvedCall::Refused(failure(refusal)),
    })
}
