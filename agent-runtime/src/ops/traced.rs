//! One operation as traces and metrics see it (`docs/operations.md` §Metrics and traces): an
//! `agent.op` span from the moment a surface takes the call to its answer, with the operation,
//! the surface, the MCP protocol generation, and, once the gate verified the credential, the
//! session and the token id (never the token); at the end, the answer's status and the
//! duration, in the span and in `agent_requests_total` / `agent_request_duration_seconds`.
//!
//! The surface makes the [`Traced`] and passes it down with the call (nothing global): the
//! caller is filled in once the gate verified it ([`Traced::caller`]), and the call is
//! recorded with its answer's status when it ends.

use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::http::StatusCode;
use tracing::field::Empty;
use tracing::Span;

use super::table::Operation;
use crate::security::TokenRecord;
use crate::telemetry::RequestMetrics;

/// Where a call came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Via {
    /// `lap` or `mcp`.
    surface: &'static str,
    /// On MCP, the protocol generation the call came in on: `session` (2025-03-26 through
    /// 2025-11-25, with `initialize` and a session) or `stateless` (2026-07-28).
    mcp_generation: Option<&'static str>,
}

impl Via {
    /// A LAP route (or the bridge, which calls LAP).
    pub(crate) const LAP: Via = Via {
        surface: "lap",
        mcp_generation: None,
    };

    /// `/agent/mcp`, on `generation`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) const fn mcp(generation: &'static str) -> Via {
        Via {
            surface: "mcp",
            mcp_generation: Some(generation),
        }
    }
}

/// An operation being answered: its span, and what its metrics need at the end. Clones share
/// one call (the surface keeps one, the in-process forwarder of an MCP tool another); the last
/// to go records the answer: the status of the gate's last reply ([`Self::answered`]), or 499
/// when the call was dropped before any (its client went away, its task was cancelled), as
/// proxies log a client that closed the request.
#[derive(Debug, Clone)]
pub(crate) struct Traced(Arc<Call>);

#[derive(Debug)]
struct Call {
    span: Span,
    started: Instant,
    /// The operation's number and name, for its metrics.
    operation: (usize, &'static str),
    metrics: Arc<RequestMetrics>,
    surface: &'static str,
    /// The status answered so far (0: none yet).
    status: AtomicU16,
    /// Not an operation after all (an MCP tool name that resolved to none): nothing recorded.
    discarded: AtomicBool,
}

impl Traced {
    /// `op`, taken by a surface now.
    pub(crate) fn start(op: Operation, via: Via, metrics: &Arc<RequestMetrics>) -> Traced {
        let operation = op.spec().tool;
        let span = tracing::info_span!(
            "agent.op",
            operation,
            surface = via.surface,
            session = Empty,
            token_id = Empty,
            mcp_generation = via.mcp_generation,
            status = Empty,
            duration_ms = Empty,
        );
        Traced(Arc::new(Call {
            span,
            started: Instant::now(),
            operation: (op as usize, operation),
            metrics: metrics.clone(),
            surface: via.surface,
            status: AtomicU16::new(0),
            discarded: AtomicBool::new(false),
        }))
    }

    /// The span, to run the call in (`tracing::Instrument`).
    pub(crate) fn span(&self) -> &Span {
        &self.0.span
    }

    /// The gate verified the caller's credential to `record`: its session and token id.
    pub(crate) fn caller(&self, record: &TokenRecord) {
        // A disabled span records nothing, but finding each field by name costs.
        if !self.0.span.is_disabled() {
            self.0.span.record("session", record.session_id.as_str());
            self.0.span.record("token_id", record.tid.as_str());
        }
    }

    /// The gate answered `status` (a later answer of the same call replaces it).
    pub(crate) fn answered(&self, status: StatusCode) {
        self.0.status.store(status.as_u16(), Ordering::Relaxed);
    }

    /// Answered with `status`: recorded once the last clone goes.
    pub(crate) fn finish(self, status: StatusCode) {
        self.answered(status);
    }

    /// The call turned out to be no operation: nothing is recorded.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn discard(&self) {
        self.0.discarded.store(true, Ordering::Relaxed);
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if *self.discarded.get_mut() {
            return;
        }
        let status = match *self.status.get_mut() {
            0 => 499,
            status => status,
        };
        let elapsed = self.started.elapsed();
        if !self.span.is_disabled() {
            self.span.record("status", status);
            self.span
                .record("duration_ms", elapsed.as_secs_f64() * 1000.0);
        }
        self.metrics
            .request(self.operation, self.surface, status, elapsed.as_secs_f64());
    }
}
