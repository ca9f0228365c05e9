//! The audit trail (docs/lap.md §3.4): entries, the sink trait and three sinks.
//!
//! Entry `{at, tid, uid, event, detail}`; `tid` and `uid` may be null. The default sink emits
//! one `tracing` event per entry (target `agent_audit`, level INFO) carrying the entry as one
//! JSON field named `entry`.

use parking_lot::Mutex;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::{self, BoxFuture, FutureExt as _};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;

/// The `tracing` target of audit events.
pub(super) const AUDIT_TARGET: &str = "agent_audit";

/// What an audit entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditEvent {
    /// A successful mint; detail `{origin, sessionId}`.
    Mint,
    /// A throttled mint or MCP allocation; detail `{endpoint}` (plus `reason`).
    RateLimited,
    /// A successful revoke; detail `{}`.
    Revoke,
    /// A successful LAP call other than `/message`.
    LapCall,
    /// `/message` answered `dispatched`; detail `{variant, status}`.
    MsgDispatched,
    /// `/message` answered `rejected`; detail `{variant, status}`.
    MsgBlocked,
    /// `/message` stored a proposal; detail `{variant, confirmId}`.
    ConfirmProposed,
    /// The human approved a proposal; detail `{variant, confirmId, by}` (plus `edited`).
    ConfirmApproved,
    /// The human rejected a proposal, or it expired; detail `{variant, confirmId, by}`.
    ConfirmRejected,
    /// The proposing agent token withdrew its proposal (`/withdraw`); detail
    /// `{variant, confirmId}`.
    ConfirmWithdrawn,
    /// The human undid an agent's commit; detail `{seq, undid, variant, by}` (`seq` the
    /// undo's own commit, `undid` the commits it reverted).
    CommitUndone,
    /// A running effect was cancelled; detail `{work, seq, variant, by}` (`by`: `human`,
    /// `agent`, `mcp-client`), with `aborted: true` when it ignored the signal past the grace.
    WorkCancelled,
    /// MCP initialize with a bad bearer; detail `{endpoint, code}`.
    AuthFailed,
    /// A stored session could not be loaded: its state no longer deserializes and
    /// `App::migrate` could not carry it over (it stays in the store untouched); detail
    /// `{sessionId, reason}`. Once per session and process.
    SessionNotMigrated,
    /// A paired app claimed its session again with a new token (`/agent/resume/claim`);
    /// detail `{path}`.
    Claim,
    /// A paired app's socket came back within the grace window; detail `{sessionId}`.
    Resume,
    /// A paired app's socket was accepted; detail `{sessionId}`.
    SocketAccept,
    /// A paired app's socket closed; detail `{sessionId, reason}`.
    SocketClose,
    /// The host closed a session unused for its idle time; detail `{sessionId, idleMs}`.
    SessionExpired,
    /// The owner closed a session from the human routes; detail `{sessionId, kind}`.
    OwnerClose,
    /// A store write the caller was waiting for failed, and the caller was answered an error
    /// (nothing was granted); detail `{op, path?}` (the database's text goes to the log only).
    StoreFailed,
    /// A full store made room by deleting an idle stored session without a live agent
    /// (`docs/stores.md` §Bounds on disk); detail `{sessionId, lastUsedAt, reason}`.
    SessionEvicted,
    /// An OAuth client registered itself (RFC 7591); detail `{clientId, clientName}`.
    OauthRegistered,
    /// A person answered a consent page; detail `{clientId, sessionId, scope, approved}`.
    OauthConsent,
    /// An authorization code was exchanged: a grant and its first tokens; detail
    /// `{clientId, grant, sessionId, scope}`.
    OauthGranted,
    /// A refresh token was rotated; detail `{clientId, grant}`.
    OauthRefreshed,
    /// A grant or a token was revoked (RFC 7009, a reused refresh token or code); detail
    /// `{clientId?, grant?, reason}`.
    OauthRevoked,
    /// An OAuth request was refused (a bad code, verifier, redirect, client, resource or
    /// scope); detail `{endpoint, error, description?}`.
    OauthRefused,
}

impl AuditEvent {
    /// The wire spelling (`mint`, `rate-limited`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            AuditEvent::Mint => "mint",
            AuditEvent::RateLimited => "rate-limited",
            AuditEvent::Revoke => "revoke",
            AuditEvent::LapCall => "lap-call",
            AuditEvent::MsgDispatched => "msg-dispatched",
            AuditEvent::MsgBlocked => "msg-blocked",
            AuditEvent::ConfirmProposed => "confirm-proposed",
            AuditEvent::ConfirmApproved => "confirm-approved",
            AuditEvent::ConfirmRejected => "confirm-rejected",
            AuditEvent::ConfirmWithdrawn => "confirm-withdrawn",
            AuditEvent::CommitUndone => "commit-undone",
            AuditEvent::WorkCancelled => "work-cancelled",
            AuditEvent::AuthFailed => "auth-failed",
            AuditEvent::SessionNotMigrated => "session-not-migrated",
            AuditEvent::Claim => "claim",
            AuditEvent::Resume => "resume",
            AuditEvent::SocketAccept => "socket-accept",
            AuditEvent::SocketClose => "socket-close",
            AuditEvent::SessionExpired => "session-expired",
            AuditEvent::OwnerClose => "owner-close",
            AuditEvent::StoreFailed => "store-failed",
            AuditEvent::SessionEvicted => "session-evicted",
            AuditEvent::OauthRegistered => "oauth-registered",
            AuditEvent::OauthConsent => "oauth-consent",
            AuditEvent::OauthGranted => "oauth-granted",
            AuditEvent::OauthRefreshed => "oauth-refreshed",
            AuditEvent::OauthRevoked => "oauth-revoked",
            AuditEvent::OauthRefused => "oauth-refused",
        }
    }
}

impl fmt::Display for AuditEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One audit entry, serialized as `{"at","tid","uid","event","detail"}` in that order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When (ms since the epoch).
    pub at: u64,
    /// The token concerned, if any.
    pub tid: Option<String>,
    /// The identity concerned, if any.
    pub uid: Option<String>,
    /// What happened.
    pub event: AuditEvent,
    /// Event-specific detail (an object).
    pub detail: Value,
}

impl AuditEntry {
    /// An entry without `tid` and `uid`.
    pub fn new(at: u64, event: AuditEvent, detail: Value) -> Self {
        AuditEntry {
            at,
            tid: None,
            uid: None,
            event,
            detail,
        }
    }

    /// Sets the token id.
    pub fn with_tid(mut self, tid: impl Into<String>) -> Self {
        self.tid = Some(tid.into());
        self
    }

    /// Sets the identity (none leaves it null).
    pub fn with_uid(mut self, uid: Option<impl Into<String>>) -> Self {
        self.uid = uid.map(Into::into);
        self
    }

    /// `mint` with detail `{origin, sessionId}`.
    pub fn mint(at: u64, tid: &str, uid: Option<&str>, origin: &str, session_id: &str) -> Self {
        AuditEntry::new(
            at,
            AuditEvent::Mint,
            json!({ "origin": origin, "sessionId": session_id }),
        )
        .with_tid(tid)
        .with_uid(uid)
    }

    /// `rate-limited` with detail `{endpoint}` (e.g. `/agent/mint`).
    pub fn rate_limited(at: u64, uid: Option<&str>, endpoint: &str) -> Self {
        AuditEntry::new(at, AuditEvent::RateLimited, json!({ "endpoint": endpoint })).with_uid(uid)
    }

    /// `revoke` with detail `{}`.
    pub fn revoke(at: u64, tid: &str, uid: Option<&str>) -> Self {
        AuditEntry::new(at, AuditEvent::Revoke, json!({}))
            .with_tid(tid)
            .with_uid(uid)
    }

    /// A `store-failed {op}` entry: a store write a caller of token `tid` waited for failed.
    pub(crate) fn store_failed(at: u64, op: &str, tid: &str, uid: Option<&str>) -> Self {
        AuditEntry::new(at, AuditEvent::StoreFailed, json!({ "op": op }))
            .with_tid(tid)
            .with_uid(uid)
    }

    /// The entry as one line of JSON.
    pub fn to_json(&self) -> String {
        // Serializing plain data into a string cannot fail; keep a total fallback anyway.
        serde_json::to_string(self).unwrap_or_else(|e| {
            json!({ "at": self.at, "event": self.event.as_str(), "error": e.to_string() })
                .to_string()
        })
    }
}

/// Where audit entries go. `write` is awaited on HTTP paths; a sink reports its own failures
/// (a write error must not fail the request).
pub trait AuditSink: Send + Sync {
    /// Records one entry.
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()>;

    /// Whether an entry written now would be recorded; `true` by default. The server builds no
    /// entry of a successful call while it is `false` (one is written per LAP call, so a sink
    /// that drops them, as [`TracingAuditSink`] does without a subscriber for its target, saves
    /// their building); a refusal's entry is always written.
    fn enabled(&self) -> bool {
        true
    }

    /// Completes when every entry written so far is stored (a shutdown waits for it,
    /// `docs/operations.md` §Shutdown); at once by default.
    fn flush(&self) -> BoxFuture<'static, ()> {
        futures::future::ready(()).boxed()
    }
}

impl<T: AuditSink + ?Sized> AuditSink for Arc<T> {
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()> {
        (**self).write(entry)
    }

    fn enabled(&self) -> bool {
        (**self).enabled()
    }

    fn flush(&self) -> BoxFuture<'static, ()> {
        (**self).flush()
    }
}

/// The default sink: one `tracing` event per entry, target `agent_audit`, level INFO, with the
/// entry's JSON in the field `entry`. The event is emitted when `write` is called.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingAuditSink;

impl AuditSink for TracingAuditSink {
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()> {
        // Built only when a subscriber records it: audit runs on every LAP call.
        if self.enabled() {
            tracing::info!(target: AUDIT_TARGET, entry = %entry.to_json());
        }
        future::ready(()).boxed()
    }

    fn enabled(&self) -> bool {
        tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO)
    }
}

/// One readable line per entry on standard error (`audit <event> tid=… uid=… <detail>`), for
/// local development ([`crate::AgentServerBuilder::local_development`]): what the agent did
/// shows in the terminal without a `tracing` subscriber.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrAuditSink;

impl AuditSink for StderrAuditSink {
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()> {
        eprintln!("{}", readable_line(&entry));
        future::ready(()).boxed()
    }
}

/// `audit <event>[ tid=…][ uid=…][ <detail JSON>]`.
fn readable_line(entry: &AuditEntry) -> String {
    let mut line = format!("audit {}", entry.event);
    if let Some(tid) = &entry.tid {
        line.push_str(&format!(" tid={tid}"));
    }
    if let Some(uid) = &entry.uid {
        line.push_str(&format!(" uid={uid}"));
    }
    let empty = entry.detail.is_null() || entry.detail.as_object().is_some_and(|o| o.is_empty());
    if !empty {
        line.push(' ');
        line.push_str(&entry.detail.to_string());
    }
    line
}

/// Appends one JSON line per entry to a file. Writes are serialized (one at a time, in the
/// order they take the lock) and flushed; a failed write is reported through `tracing` (WARN)
/// and never fails the caller.
#[derive(Clone)]
pub struct JsonLinesAuditSink {
    path: Arc<PathBuf>,
    file: Arc<tokio::sync::Mutex<tokio::fs::File>>,
    /// Appends started and not finished, and the signal of each one finishing.
    in_flight: Arc<(std::sync::atomic::AtomicUsize, tokio::sync::Notify)>,
}

impl fmt::Debug for JsonLinesAuditSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesAuditSink")
            .field("path", &self.path)
            .finish()
    }
}

impl JsonLinesAuditSink {
    /// Opens (creating it when missing) `path` for appending.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .await?;
        Ok(JsonLinesAuditSink {
            path: Arc::new(path),
            file: Arc::new(tokio::sync::Mutex::new(file)),
            in_flight: Default::default(),
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AuditSink for JsonLinesAuditSink {
    /// The append runs as its own tokio task when a runtime is available, so a caller that
    /// stops waiting (a dropped request) never leaves half a line behind; the returned future
    /// completes when the line is written.
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()> {
        let file = Arc::clone(&self.file);
        let path = Arc::clone(&self.path);
        let mut line = entry.to_json();
        line.push('\n');
        let in_flight = Arc::clone(&self.in_flight);
        in_flight
            .0
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let append = async move {
            let mut file = file.lock().await;
            let result = match file.write_all(line.as_bytes()).await {
                Ok(()) => file.flush().await,
                Err(e) => Err(e),
            };
            drop(file);
            in_flight
                .0
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            in_flight.1.notify_waiters();
            if let Err(error) = result {
                crate::telemetry::audit_write_failed();
                tracing::warn!(
                    target: AUDIT_TARGET,
                    path = %path.display(),
                    %error,
                    "audit write failed"
                );
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let task = runtime.spawn(append);
                async move {
                    // A failed task (panic, runtime shutdown) has nothing left to report.
                    let _ = task.await;
                }
                .boxed()
            }
            Err(_) => append.boxed(),
        }
    }

    /// Waits for every append started so far, then asks the file system to store the file.
    fn flush(&self) -> BoxFuture<'static, ()> {
        let in_flight = Arc::clone(&self.in_flight);
        let file = Arc::clone(&self.file);
        async move {
            loop {
                let finished = in_flight.1.notified();
                if in_flight.0.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                    break;
                }
                finished.await;
            }
            if let Err(error) = file.lock().await.sync_data().await {
                tracing::warn!(target: AUDIT_TARGET, %error, "audit flush failed");
            }
        }
        .boxed()
    }
}

/// Collects entries in memory (for tests). Clones share the same list.
#[derive(Debug, Clone, Default)]
pub struct MemoryAuditSink {
    entries: Arc<Mutex<Vec<AuditEntry>>>,
}

impl MemoryAuditSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the entries written so far, in order.
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.entries.lock().clone()
    }

    /// The events written so far, in order.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.entries.lock().iter().map(|e| e.event).collect()
    }

    /// The number of entries written.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.entries.lock().is_empty()
    }

    /// Forgets the entries written so far.
    pub fn clear(&self) {
        self.entries.lock().clear();
    }
}

impl AuditSink for MemoryAuditSink {
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()> {
        self.entries.lock().push(entry);
        future::ready(()).boxed()
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
