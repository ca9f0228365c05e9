//! The operation core, independent of any transport and of any surface
//! (`docs/architecture.md`, one operation end to end).
//!
//! - `table`: every operation declared once (LAP path, MCP tool, description, log label, how the
//!   gate runs it, default timeout, key, request and response types, and the
//!   [`backend::SessionBackend`] method that answers it).
//! - `gate`: what runs around every call, whatever the surface and the kind of session:
//!   credential → token → backend → rate limit → typed request → handler → activation, log,
//!   audit, idempotency.
//! - `keyed`: a keyed `/message` claimed and answered once, its key passed to the commit that
//!   records it.
//! - `backend`: [`backend::SessionBackend`], what answers a token's session, one method per
//!   operation: `hosted_backend` (a session of this process, `hosted`; the pairing client
//!   answers a server's `rpc` frames through it too) and `paired_backend` (the relay to a paired
//!   app, `paired` and `paired_proposals`).
//! - `context`: what one call carries to its backend and back (`Call`,
//!   `Answered`, `Serialized`).
//! - `state`: the shared state they read; `options`: the server's options; `error`: `ApiError`.
//! - `budget`: an answer over a budget of characters as it is answered instead (MCP's
//!   `result_budget_chars`, LAP's `budgetChars`).
//! - `traced`: one operation's `agent.op` span and request metrics, made by the surface that
//!   took the call and finished with its answer.
//!
//! The LAP router, `/agent/mcp` and the OpenAPI document are generated from the table; no
//! surface calls another.

mod backend;
pub(crate) mod budget;
pub(crate) mod cancel;
mod context;
pub(crate) mod error;
#[cfg(feature = "fleet")]
pub(crate) mod fleet;
#[cfg(feature = "fleet")]
pub(crate) mod fleet_holder;
mod gate;
pub(crate) mod hosted;
mod hosted_backend;
mod keyed;
mod options;
#[cfg(feature = "pairing")]
pub(crate) mod paired;
#[cfg(feature = "pairing")]
mod paired_backend;
#[cfg(feature = "pairing")]
mod paired_proposals;
mod reply;
mod spec;
mod state;
pub(crate) mod table;
mod tail;
pub(crate) mod traced;
mod transcript;
#[cfg(feature = "mcp")]
pub(crate) mod watch;

pub(crate) use backend::Caller;
pub use error::ApiError;
pub(crate) use gate::admit;
#[cfg(feature = "mcp")]
pub(crate) use gate::{caller_of, take_rate_limit, verify_mcp_bearer};
pub(crate) use gate::{find_caller, Credential};
pub(crate) use hosted::dispatch_options;
#[cfg(feature = "mcp")]
pub(crate) use hosted::message_answer;
#[cfg(feature = "pairing-client")]
pub(crate) use keyed::Claim;
pub(crate) use keyed::IdempotencyStore;
pub use keyed::IDEMPOTENCY_WINDOW;
#[cfg(feature = "mcp")]
pub use options::McpOptions;
#[cfg(feature = "oauth")]
pub use options::OAuthOptions;
#[cfg(feature = "pairing")]
pub use options::PairingOptions;
pub use options::{ServerOptions, DEFAULT_RATE_LIMIT};
#[cfg(feature = "bridge")]
pub(crate) use reply::from_http;
pub(crate) use reply::Reply;
#[cfg(feature = "pairing-client")]
pub(crate) use reply::StoredAnswer;
#[cfg(feature = "mcp")]
pub(crate) use reply::{Outcome, Success};
pub(crate) use spec::OperationSpec;
#[cfg(feature = "mcp")]
pub(crate) use spec::ToolHints;
#[cfg(feature = "pairing")]
pub(crate) use state::Pairing;
pub(crate) use state::{FleetLimits, ServerFields, ServerState};
pub(crate) use table::perform;
pub use table::Operation;
pub(crate) use table::OPERATIONS;
