//! MCP over `/agent/mcp`: the actions (and the default bindings that offer them), its bounds (in
//! memory and on the stores), the fast call path, the HTTP transport and the listen slots; the
//! guide's clients of the notes app (`guide_clients`: curl, the Python and TypeScript SDKs). One
//! test binary; each module was a test file of its own.

mod actions;
mod app_view;
mod bounds;
mod bounds_durable;
mod budget;
mod client_confirm;
mod default_bindings;
#[cfg(feature = "full")]
mod document_server;
mod fast_call;
mod guide_clients;
mod host_quirks;
#[cfg(feature = "full")]
mod hosts;
mod http;
mod notes;
#[cfg(feature = "full")]
mod oauth;
#[cfg(feature = "full")]
mod oauth_cimd;
#[cfg(feature = "full")]
mod oauth_durable;
#[cfg(feature = "full")]
mod oauth_flow;
#[cfg(feature = "full")]
mod oauth_rmcp;
mod priming;
mod python_sdk;
mod scoped_tokens;
mod slots;
mod tool_list;
mod undo;
