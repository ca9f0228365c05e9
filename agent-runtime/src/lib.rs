//! The runtime of the agent surface: everything that runs.
//!
//! Pure algorithms (validation, affordances, diff, reads), the session host, tokens and the
//! rest of the security surface, and the LAP / MCP servers.

#![warn(missing_docs)]

pub mod affordances;
pub mod app;
pub mod catalog;
pub mod cel_eval;
pub mod clock;
pub mod config;
pub mod diff;
mod error;
pub mod host;
pub mod lap;
#[cfg(feature = "mcp")]
pub mod mcp;
mod ops;
pub mod reads;
pub mod security;
mod server;
pub mod session;
pub mod validate;

pub use agent_derive::AgentMsg;
pub use agent_schema::{self, AgentContext, AgentDocs, DispatchMode, MessageAnnotations};
pub use app::App;
pub use config::{DispatchPolicy, HostConfig};
pub use error::ApiError;
pub use host::Host;
pub use ops::Operation;
pub use server::{AgentServer, AgentServerBuilder, ServerOptions};
pub use session::Session;
