//! The operation core, independent of any transport and of any surface
//! (`docs/architecture.md`, one operation end to end).
//!
//! - `table`: every operation declared once (LAP path, MCP tool, description, log label, how the
//!   gate runs it, default timeout, key, request and response types, and its two
//!   implementations).
//! - `gate`: what runs around every call, whatever the surface and the kind of session:
//!   credential → token → backend → rate limit → typed request → handler → activation, log,
//!   audit, idempotency.
//! - `keyed`: a keyed `/message` claimed and answered once, its key passed to the commit that
//!   records it.
//! - `handlers` (a hosted session) and `paired` (the relay to a paired app): one async function
//!   per operation each, taking the call context and the typed request.
//! - `state`: the shared state they read; `options`: the server's options; `error`: `ApiError`.
//!
//! The LAP router, `/agent/mcp` and the OpenAPI document are generated from the table; no
//! surface calls another.

mod call;
pub(crate) mod error;
mod gate;
mod handlers;
mod keyed;
mod options;
#[cfg(feature = "pairing")]
pub(crate) mod paired;
#[cfg(feature = "pairing")]
mod paired_proposals;
mod reply;
mod spec;
mod state;
pub(crate) mod table;
mod tail;
#[cfg(feature = "mcp")]
pub(crate) mod watch;

pub(crate) use call::Caller;
pub use error::ApiError;
pub(crate) use gate::admit;
#[cfg(feature = "mcp")]
pub(crate) use gate::{caller_of, find_caller, take_rate_limit, Credential};
pub(crate) use handlers::dispatch_options;
pub(crate) use keyed::IdempotencyStore;
pub use keyed::IDEMPOTENCY_WINDOW;
#[cfg(feature = "mcp")]
pub use options::McpOptions;
#[cfg(feature = "pairing")]
pub use options::PairingOptions;
pub use options::{ServerOptions, DEFAULT_RATE_LIMIT};
#[cfg(feature = "bridge")]
pub(crate) use reply::from_http;
#[cfg(feature = "mcp")]
pub(crate) use reply::{Outcome, Reply, Success};
pub(crate) use spec::OperationSpec;
#[cfg(feature = "pairing")]
pub(crate) use state::Pairing;
pub(crate) use state::{ServerState, Shared};
pub(crate) use table::run as call;
pub use table::Operation;
pub(crate) use table::OPERATIONS;
