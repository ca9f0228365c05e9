//! MCP (`lap.md` §7, §8): the 16 tools, declared once and served by two surfaces.
//!
//! - [`server`]: `/agent/mcp` on the app server, MCP Streamable HTTP on rmcp's
//!   `StreamableHttpService` behind an admission layer that bounds the sessions; forwarded tools
//!   run in-process through the LAP router with the session's bound token.
//! - [`bridge`]: the `agent-bridge` stdio server, forwarding to any LAP server over HTTP.
//!
//! Everything the two share lives here: the tool declarations ([`tools`]), argument checking
//! ([`args`]), result formatting ([`format`](mod@format)) and the forwarding logic behind the [`Forwarder`]
//! trait ([`forward`]).

pub mod args;
#[cfg(feature = "bridge")]
pub mod bridge;
pub mod calls;
pub mod format;
pub mod forward;
pub mod server;
pub mod tools;

pub use format::LapAnswer;
pub use forward::{DescriptionCache, Forwarder};
pub use server::{McpOptions, McpSessions, MCP_PATH};
pub use tools::{Surface, ToolAction, ToolSpec};
