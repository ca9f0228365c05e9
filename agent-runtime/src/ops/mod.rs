//! The operations of the agent surface, independent of any transport.
//!
//! - [`table`]: every operation declared once (LAP path, MCP tool, description, request and
//!   response types, handler).
//! - [`gate`]: what runs around every call, whatever the surface: credential → token →
//!   session → rate limit → typed request → handler → activation, log, audit, idempotency.
//! - [`handlers`]: one async function per operation, taking the resolved caller and the typed
//!   request.
//!
//! The LAP router, `/agent/mcp` and the OpenAPI document are generated from the table; no
//! surface calls another.

mod detached;
pub(crate) mod error;
pub(crate) mod gate;
mod handlers;
mod idempotency;
mod options;
#[cfg(feature = "pairing")]
pub(crate) mod paired;
mod reply;
mod state;
pub(crate) mod table;

use agent_schema::protocol::LogEntry;
use serde::Serialize;
use serde_json::Value;

pub use error::ApiError;
pub(crate) use gate::{admit, Caller};
#[cfg(feature = "mcp")]
pub(crate) use gate::{admit_credential, Credential};
pub(crate) use handlers::dispatch_options;
pub(crate) use idempotency::IdempotencyStore;
pub use idempotency::IDEMPOTENCY_WINDOW_MS;
#[cfg(feature = "mcp")]
pub use options::McpOptions;
#[cfg(feature = "pairing")]
pub use options::PairingOptions;
pub use options::{ServerOptions, DEFAULT_RATE_LIMIT};
#[cfg(feature = "pairing")]
pub(crate) use paired::Pairing;
#[cfg(any(feature = "mcp", feature = "pairing"))]
pub(crate) use reply::Reply;
pub(crate) use state::{ServerState, Shared};
pub(crate) use table::run as call;
pub use table::Operation;

use crate::app::App;
use crate::engine::session::{activity, Session};
use crate::security::{AuditEvent, TokenRecord};

/// What a handler sees: the server, and the caller the gate resolved.
pub(crate) struct Call<'a, A: App> {
    /// The server.
    pub server: &'a ServerState<A>,
    /// The caller's token record.
    pub record: &'a TokenRecord,
    /// The token's session.
    pub session: &'a Session<A>,
}

impl<A: App> Call<'_, A> {
    /// The caller's token id.
    pub(crate) fn tid(&self) -> &str {
        &self.record.tid
    }

    /// `timeoutMs` with `op`'s default, clamped to the server's `maxWaitMs`.
    pub(crate) fn wait_ms(&self, requested: Option<u64>, op: Operation) -> u64 {
        op.wait_ms(requested, self.server.options().max_wait_ms)
    }
}

/// A handler's typed answer plus what the success tail writes.
pub(crate) struct Answer<R> {
    body: R,
    /// The intent of the `read` log entry to write, if the operation logs its reads.
    read: Option<String>,
    /// The audit entry `(event, detail)`.
    audit: (AuditEvent, Value),
}

impl<R: Serialize> Answer<R> {
    /// An answer audited as `lap-call` with `detail`, logging no read.
    fn audited(body: R, detail: Value) -> Self {
        Answer {
            body,
            read: None,
            audit: (AuditEvent::LapCall, detail),
        }
    }

    /// An answer that logs a read with `intent` and is audited as `lap-call {tool}`.
    fn read(body: R, intent: impl Into<String>, tool: &str) -> Self {
        Answer {
            body,
            read: Some(intent.into()),
            audit: (AuditEvent::LapCall, serde_json::json!({ "tool": tool })),
        }
    }

    /// Serializes the body to JSON text once.
    fn serialize(self, what: &str) -> Result<Handled, ApiError> {
        let body = serde_json::to_string(&self.body)
            .map_err(|e| ApiError::internal(format!("{what}: {e}")))?;
        Ok(Handled {
            body,
            read: self.read,
            audit: self.audit,
        })
    }
}

/// A serialized answer plus what the success tail writes.
#[derive(Debug)]
pub(crate) struct Handled {
    /// The 200 body.
    pub body: String,
    /// The intent of the `read` log entry, if any.
    pub read: Option<String>,
    /// The audit entry.
    pub audit: (AuditEvent, Value),
}

/// A log entry of `kind` for the caller `tid`.
fn log_entry(
    kind: agent_schema::protocol::LogKind,
    intent: String,
    tid: &str,
    at: u64,
) -> LogEntry {
    let mut entry = activity::entry(kind, at);
    entry.intent = Some(intent);
    entry.tid = Some(tid.to_string());
    entry
}
