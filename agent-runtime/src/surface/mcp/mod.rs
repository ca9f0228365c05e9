//! MCP (`docs/lap.md` §7, §8): the 19 tools, declared once and served by two surfaces.
//!
//! - `server`: `/agent/mcp` on the app server, MCP Streamable HTTP on rmcp's
//!   `StreamableHttpService` behind an admission layer that bounds the sessions; a tool runs
//!   its operation through the operation gate with the session's bound token.
//! - `bridge` (feature `bridge`): the `agent-bridge` stdio server, forwarding to any LAP server
//!   over HTTP.
//!
//! Everything the two share lives here: the tool list and input schemas, generated from the
//! operation table (`tools`), argument checks derived from those schemas (`args`), result
//! formatting (`format`) and the forwarding logic behind the `Forwarder` trait (`forward`).

pub(crate) mod action_tools;
pub(crate) mod app_view;
pub(crate) mod args;
#[cfg(feature = "bridge")]
pub(crate) mod bridge;
pub(crate) mod calls;
pub(crate) mod endpoint;
pub(crate) mod format;
pub(crate) mod forward;
pub(crate) mod resources;
pub(crate) mod tools;

pub use endpoint::{AtCapacity, BoundToken, McpOptions, McpSessions, MCP_PATH};
