//! Metrics and traces (`docs/operations.md` §Metrics and traces): the name of every metric the
//! runtime records, [`describe_metrics`] for an embedder's recorder, and the small helpers the
//! layers above record through. Metrics go through the `metrics` facade: until the embedder
//! installs a recorder (a Prometheus exporter, say) every call is a no-op. Spans go through
//! `tracing` like the runtime's logs.
//!
//! Names follow Prometheus' conventions (`_total` counters, `_seconds` and `_bytes` units).
//! Label values are fixed words (`&'static str`), never caller data: a token id or a session
//! id is a span field, never a label.
//!
//! This module sits in the foundation layer, beside `clock` and `config`, so that every layer
//! records through it (the security layer's refusals, the engine's stores and sessions, the
//! operation gate, the surfaces); it imports nothing of the crate.

use metrics::{
    describe_counter, describe_gauge, describe_histogram, Counter, Gauge, Histogram, Unit,
};

/// Counter: operations answered, by `operation` (the tool name: `observe`, `send_message`, …),
/// `surface` (`lap`, `mcp`) and `status` (the HTTP status of the answer, `200`, `429`, …; on
/// MCP the status the gate answered, which a tool error carries).
pub const REQUESTS_TOTAL: &str = "agent_requests_total";

/// Histogram (seconds): how long operations took at the gate, by `operation` and `surface`.
pub const REQUEST_DURATION_SECONDS: &str = "agent_request_duration_seconds";

/// Gauge: live sessions in this process, by `kind`: `hosted` (sessions whose writer task
/// runs here) or `paired` (paired sessions with a socket, or within their grace window).
pub const SESSIONS: &str = "agent_sessions";

/// Gauge: live MCP sessions of `/agent/mcp` (the legacy generation's; 2026-07-28 has none).
pub const MCP_SESSIONS: &str = "agent_mcp_sessions";

/// Gauge: open human event streams (SSE, `/agent/human/sessions/{id}/events`).
pub const SSE_SUBSCRIBERS: &str = "agent_sse_subscribers";

/// Gauge: open paired app sockets (`/agent/ws`).
pub const PAIRED_SOCKETS: &str = "agent_paired_sockets";

/// Counter: calls refused 429, by `bucket` (`token`, `identity`, `mint`, `auth-failure`).
pub const RATE_LIMITED_TOTAL: &str = "agent_rate_limited_total";

/// Counter: credentials that did not verify, by `reason` (`missing`, `malformed`, `unknown`,
/// `expired`, `idle`, `revoked`).
pub const AUTH_FAILURES_TOTAL: &str = "agent_auth_failures_total";

/// Gauge: pending proposals (`@requiresConfirm` messages awaiting a decision) of the sessions
/// hosted in this process.
pub const PENDING_PROPOSALS: &str = "agent_pending_proposals";

/// Histogram (seconds): store calls, by `store` (`memory`, `sqlite`, `postgres`) and `op` (the
/// store method: `commit`, `load_session`, `find_by_token_hash`, …).
pub const STORE_OPERATION_DURATION_SECONDS: &str = "agent_store_operation_duration_seconds";

/// Counter: store calls that failed, by `store` and `op`.
pub const STORE_ERRORS_TOTAL: &str = "agent_store_errors_total";

/// Histogram (bytes): the JSON Patch text a commit writes to the commit log.
pub const COMMIT_PATCH_BYTES: &str = "agent_commit_patch_bytes";

/// Counter: times PostgreSQL's `LISTEN` connection was lost and reconnecting began.
pub const LISTENER_RECONNECTS_TOTAL: &str = "agent_listener_reconnects_total";

/// Counter: route gates that could not be evaluated (an evaluation error, e.g. a state that
/// does not match its schema), once per gate and session: the gate stays closed and agents
/// are told it could not be evaluated.
pub const GATE_EVALUATION_FAILURES_TOTAL: &str = "agent_gate_evaluation_failures_total";

/// Counter: `@validates` predicates that could not be evaluated on a message's value (an
/// evaluation error), once per predicate and session: the message is refused and its sender
/// is told the validation could not be evaluated.
pub const VALIDATION_EVALUATION_FAILURES_TOTAL: &str = "agent_validation_evaluation_failures_total";

/// Counter: audit lines the JSON-lines audit sink failed to append.
pub const AUDIT_WRITE_FAILURES_TOTAL: &str = "agent_audit_write_failures_total";

/// Counter: paired calls this replica carried to the replica holding the session's socket
/// (feature `fleet`), by `operation` (the tool name) and `outcome` (`answered`: the holder
/// answered, whatever its status; `failed`: the hop failed, see [`FLEET_HOP_FAILURES_TOTAL`]).
pub(crate) const FLEET_FORWARDED_TOTAL: &str = "agent_fleet_forwarded_total";

/// Histogram (seconds): how long a forwarded call took, from the hop's start to the holder's
/// answer (`operation`).
pub(crate) const FLEET_FORWARD_DURATION_SECONDS: &str = "agent_fleet_forward_duration_seconds";

/// Counter: hops that failed, by `reason` (`unreachable`: no connection or it broke, `silent`:
/// nothing heard within the ping interval, `not-holder`: the replica no longer holds the
/// socket, `refused`: the holder refused the hop (its signature, its body), `malformed`: an
/// answer that does not parse or is over its budget), plus hops refused here for a bad signature
/// (`bad-signature`).
pub(crate) const FLEET_HOP_FAILURES_TOTAL: &str = "agent_fleet_hop_failures_total";

/// Counter: hops this replica served as the holder of a socket, by `operation`.
pub(crate) const FLEET_SERVED_TOTAL: &str = "agent_fleet_served_total";

/// Describes every metric (its help text and unit) to the installed recorder. Call it once,
/// after installing the recorder (`metrics::set_global_recorder`, or an exporter's
/// `install`): an exporter then prints the help text and the unit with each family. Metrics
/// are recorded whether or not it was called.
pub fn describe_metrics() {
    describe_counter!(
        REQUESTS_TOTAL,
        Unit::Count,
        "Operations answered, by operation, surface and HTTP status."
    );
    describe_histogram!(
        REQUEST_DURATION_SECONDS,
        Unit::Seconds,
        "How long operations took at the gate, by operation and surface."
    );
    describe_gauge!(
        SESSIONS,
        Unit::Count,
        "Live sessions in this process, by kind (hosted, paired)."
    );
    describe_gauge!(
        MCP_SESSIONS,
        Unit::Count,
        "Live MCP sessions of /agent/mcp."
    );
    describe_gauge!(
        SSE_SUBSCRIBERS,
        Unit::Count,
        "Open human event streams (SSE)."
    );
    describe_gauge!(
        PAIRED_SOCKETS,
        Unit::Count,
        "Open paired app sockets (/agent/ws)."
    );
    describe_counter!(
        RATE_LIMITED_TOTAL,
        Unit::Count,
        "Calls refused 429, by rate-limit bucket."
    );
    describe_counter!(
        AUTH_FAILURES_TOTAL,
        Unit::Count,
        "Credentials that did not verify, by reason."
    );
    describe_gauge!(
        PENDING_PROPOSALS,
        Unit::Count,
        "Pending proposals of the sessions hosted in this process."
    );
    describe_histogram!(
        STORE_OPERATION_DURATION_SECONDS,
        Unit::Seconds,
        "Store calls, by store and operation."
    );
    describe_counter!(
        STORE_ERRORS_TOTAL,
        Unit::Count,
        "Store calls that failed, by store and operation."
    );
    describe_histogram!(
        COMMIT_PATCH_BYTES,
        Unit::Bytes,
        "The JSON Patch text each commit writes to the commit log."
    );
    describe_counter!(
        LISTENER_RECONNECTS_TOTAL,
        Unit::Count,
        "Times the PostgreSQL LISTEN connection was lost."
    );
    describe_counter!(
        GATE_EVALUATION_FAILURES_TOTAL,
        Unit::Count,
        "Route gates that could not be evaluated, once per gate and session."
    );
    describe_counter!(
        VALIDATION_EVALUATION_FAILURES_TOTAL,
        Unit::Count,
        "@validates predicates that could not be evaluated, once per predicate and session."
    );
    describe_counter!(
        AUDIT_WRITE_FAILURES_TOTAL,
        Unit::Count,
        "Audit lines the JSON-lines sink failed to append."
    );
    describe_counter!(
        FLEET_FORWARDED_TOTAL,
        Unit::Count,
        "Paired calls carried to the replica holding the socket, by operation and outcome."
    );
    describe_histogram!(
        FLEET_FORWARD_DURATION_SECONDS,
        Unit::Seconds,
        "How long forwarded calls took, hop included, by operation."
    );
    describe_counter!(
        FLEET_HOP_FAILURES_TOTAL,
        Unit::Count,
        "Hops between replicas that failed, by reason."
    );
    describe_counter!(
        FLEET_SERVED_TOTAL,
        Unit::Count,
        "Hops served as the holder of a paired socket, by operation."
    );
}

/// One more of a gauge while it lives: incremented when made, decremented when dropped, so the
/// gauge is exact whichever way the thing it counts ends (closed, dropped, a task cancelled).
#[derive(Debug)]
pub(crate) struct Live(Gauge);

impl Live {
    fn of(gauge: Gauge) -> Live {
        gauge.increment(1.0);
        Live(gauge)
    }

    /// A hosted session's writer task.
    pub(crate) fn hosted_session() -> Live {
        Live::of(metrics::gauge!(SESSIONS, "kind" => "hosted"))
    }

    /// A paired session the hub keeps.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) fn paired_session() -> Live {
        Live::of(metrics::gauge!(SESSIONS, "kind" => "paired"))
    }

    /// An MCP session in the registry.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn mcp_session() -> Live {
        Live::of(metrics::gauge!(MCP_SESSIONS))
    }

    /// A human event stream.
    pub(crate) fn sse_subscriber() -> Live {
        Live::of(metrics::gauge!(SSE_SUBSCRIBERS))
    }

    /// A registered paired socket.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) fn paired_socket() -> Live {
        Live::of(metrics::gauge!(PAIRED_SOCKETS))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// A session's pending proposals, as last reported to [`PENDING_PROPOSALS`]: [`Self::set`]
/// moves the gauge by the difference, and dropping it takes back what it reported.
#[derive(Debug, Default)]
pub(crate) struct PendingProposals(usize);

impl PendingProposals {
    /// The session now has `pending` proposals.
    pub(crate) fn set(&mut self, pending: usize) {
        if pending == self.0 {
            return;
        }
        let gauge = metrics::gauge!(PENDING_PROPOSALS);
        if pending > self.0 {
            gauge.increment((pending - self.0) as f64);
        } else {
            gauge.decrement((self.0 - pending) as f64);
        }
        self.0 = pending;
    }
}

impl Drop for PendingProposals {
    fn drop(&mut self) {
        self.set(0);
    }
}

/// The handles of metrics recorded on every call, each registered with the recorder at its
/// first use and reused after: building a metric's key and finding it in the recorder at each
/// call showed in the profile of every read. Slot `i` holds the handle of the `i`-th label set
/// of the caller's numbering. The recorder installed when a handle is first used is the one it
/// records to (install it before serving, as `metrics` asks).
#[derive(Debug)]
pub(crate) struct Handles<H>(Box<[std::sync::OnceLock<H>]>);

impl<H> Handles<H> {
    /// Room for `slots` label sets, none registered yet.
    pub(crate) fn new(slots: usize) -> Self {
        Handles((0..slots).map(|_| std::sync::OnceLock::new()).collect())
    }

    /// The handle of label set `slot`, registered by `register` the first time.
    pub(crate) fn get(&self, slot: usize, register: impl FnOnce() -> H) -> &H {
        self.0[slot].get_or_init(register)
    }
}

/// The surfaces an operation comes in on, as `surface` labels.
pub(crate) const SURFACES: [&str; 2] = ["lap", "mcp"];

/// `agent_requests_total` and `agent_request_duration_seconds`, for `operations` operations
/// numbered by the caller (`docs/operations.md` §Metrics and traces).
#[derive(Debug)]
pub(crate) struct RequestMetrics {
    totals: Handles<Counter>,
    durations: Handles<Histogram>,
}

impl RequestMetrics {
    /// The metrics of `operations` operations.
    pub(crate) fn new(operations: usize) -> Self {
        RequestMetrics {
            totals: Handles::new(operations * SURFACES.len() * STATUS_LABELS.len()),
            durations: Handles::new(operations * SURFACES.len()),
        }
    }

    /// Operation number `index`, named `operation`, came in on `surface` and was answered
    /// with `status` after `seconds`.
    pub(crate) fn request(
        &self,
        (index, operation): (usize, &'static str),
        surface: &'static str,
        status: u16,
        seconds: f64,
    ) {
        let on = SURFACES.iter().position(|s| *s == surface).unwrap_or(0);
        let label = status_label_index(status);
        let slot = (index * SURFACES.len() + on) * STATUS_LABELS.len() + label;
        self.totals
            .get(slot, || {
                metrics::counter!(
                    REQUESTS_TOTAL,
                    "operation" => operation,
                    "surface" => surface,
                    "status" => STATUS_LABELS[label],
                )
            })
            .increment(1);
        self.durations
            .get(index * SURFACES.len() + on, || {
                metrics::histogram!(
                    REQUEST_DURATION_SECONDS,
                    "operation" => operation,
                    "surface" => surface,
                )
            })
            .record(seconds);
    }
}

/// A call was refused 429 by the rate limit's `bucket` (`Bucket::as_str`).
pub(crate) fn rate_limited(bucket: &'static str) {
    metrics::counter!(RATE_LIMITED_TOTAL, "bucket" => bucket).increment(1);
}

/// A credential did not verify, for `reason`.
pub(crate) fn auth_failure(reason: &'static str) {
    metrics::counter!(AUTH_FAILURES_TOTAL, "reason" => reason).increment(1);
}

/// A store call `op` on `store` took `seconds`, and failed when `failed`.
pub(crate) fn store_call(
    duration: &Histogram,
    store: &'static str,
    op: &'static str,
    seconds: f64,
    failed: bool,
) {
    duration.record(seconds);
    if failed {
        metrics::counter!(STORE_ERRORS_TOTAL, "store" => store, "op" => op).increment(1);
    }
}

/// The `agent_store_operation_duration_seconds` handle of `op` on `store`, for [`store_call`].
pub(crate) fn store_duration(store: &'static str, op: &'static str) -> Histogram {
    metrics::histogram!(STORE_OPERATION_DURATION_SECONDS, "store" => store, "op" => op)
}

/// The histogram of the patches commits wrote, in bytes (a session keeps the handle).
pub(crate) fn commit_patch_bytes() -> Histogram {
    metrics::histogram!(COMMIT_PATCH_BYTES)
}

/// PostgreSQL's `LISTEN` connection was lost: reconnecting.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn listener_reconnect() {
    metrics::counter!(LISTENER_RECONNECTS_TOTAL).increment(1);
}

/// A paired call of `operation` was forwarded to the socket's replica: `answered` or not,
/// after `seconds`.
#[cfg(feature = "fleet")]
pub(crate) fn fleet_forwarded(operation: &'static str, answered: bool, seconds: f64) {
    let outcome = if answered { "answered" } else { "failed" };
    metrics::counter!(FLEET_FORWARDED_TOTAL, "operation" => operation, "outcome" => outcome)
        .increment(1);
    metrics::histogram!(FLEET_FORWARD_DURATION_SECONDS, "operation" => operation).record(seconds);
}

/// A hop failed for `reason`.
#[cfg(feature = "fleet")]
pub(crate) fn fleet_hop_failed(reason: &'static str) {
    metrics::counter!(FLEET_HOP_FAILURES_TOTAL, "reason" => reason).increment(1);
}

/// This replica served a hop of `operation` as the socket's holder.
#[cfg(feature = "fleet")]
pub(crate) fn fleet_served(operation: &'static str) {
    metrics::counter!(FLEET_SERVED_TOTAL, "operation" => operation).increment(1);
}

/// A route gate could not be evaluated (logged once per gate and session).
pub(crate) fn gate_evaluation_failed() {
    metrics::counter!(GATE_EVALUATION_FAILURES_TOTAL).increment(1);
}

/// A `@validates` could not be evaluated (logged once per predicate and session).
pub(crate) fn validation_evaluation_failed() {
    metrics::counter!(VALIDATION_EVALUATION_FAILURES_TOTAL).increment(1);
}

/// The audit sink failed to append a line.
pub(crate) fn audit_write_failed() {
    metrics::counter!(AUDIT_WRITE_FAILURES_TOTAL).increment(1);
}

/// The label values of statuses: the statuses the runtime answers, then each class.
const STATUS_LABELS: [&str; 27] = [
    "200", "201", "202", "204", "400", "401", "403", "404", "405", "408", "409", "410", "412",
    "413", "415", "422", "429", "499", "500", "502", "503", "504", "1xx", "2xx", "3xx", "4xx",
    "5xx",
];

/// `status` as a label value.
#[cfg(test)]
fn status_label(status: u16) -> &'static str {
    STATUS_LABELS[status_label_index(status)]
}

/// The index in [`STATUS_LABELS`] of `status`'s label.
fn status_label_index(status: u16) -> usize {
    match status {
        200 => 0,
        201 => 1,
        202 => 2,
        204 => 3,
        400 => 4,
        401 => 5,
        403 => 6,
        404 => 7,
        405 => 8,
        408 => 9,
        409 => 10,
        410 => 11,
        412 => 12,
        413 => 13,
        415 => 14,
        422 => 15,
        429 => 16,
        499 => 17,
        500 => 18,
        502 => 19,
        503 => 20,
        504 => 21,
        _ => match status / 100 {
            1 => 22,
            2 => 23,
            3 => 24,
            4 => 25,
            _ => 26,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_status_is_its_own_label() {
        for label in &STATUS_LABELS[..22] {
            let status: u16 = label.parse().unwrap();
            assert_eq!(status_label(status), *label);
        }
    }

    #[test]
    fn status_labels_are_the_status_or_its_class() {
        assert_eq!(status_label(429), "429");
        assert_eq!(status_label(418), "4xx");
        assert_eq!(status_label(599), "5xx");
        assert_eq!(status_label(302), "3xx");
    }
}
