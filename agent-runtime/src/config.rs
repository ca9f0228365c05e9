//! Host options shared by every session.

use crate::clock::{SharedClock, SystemClock};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

/// How strictly incoming payloads are validated (`docs/semantics.md` §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispatchPolicy {
    /// Extra keys are accepted silently (unless the schema denies them).
    #[default]
    Lenient,
    /// Extra keys are errors, and unknown-typed fields raise `untyped-field` warnings.
    Strict,
}

/// Whether an agent's dispatch must pass the action's `@routeGated` gate and be listed by
/// `list_actions` in the current state (`docs/semantics.md` §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionGates {
    /// A closed gate, or an action `list_actions` does not offer now, refuses the agent's
    /// `send_message` and `would_dispatch` with `rejected` `unavailable` (the human's
    /// dispatches are never gated).
    #[default]
    Enforced,
    /// The reference protocol's meaning: gates and bindings only shape what `list_actions`
    /// offers; an agent may still send any variant that is not `@humanOnly`.
    Advisory,
}

/// Options of a [`crate::Host`]. Start from `HostConfig::default()` and set the fields you
/// need (`#[non_exhaustive]`: a new option never breaks a caller).
///
/// It deserializes from a configuration file (`docs/operations.md` §Configuration): field
/// names as here, every field optional (its default), durations spelled as `humantime` reads
/// them (`"90s"`, `"10m"`, `"30days"`), an unknown key an error that names it. The clock is not
/// configurable from a file.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct HostConfig {
    /// Validation policy for agent and human dispatches.
    pub policy: DispatchPolicy,
    /// Whether route gates and the action list refuse an agent's dispatch (default
    /// [`ActionGates::Enforced`]).
    pub action_gates: ActionGates,
    /// Age after which a pending confirmation expires (default 10 minutes).
    #[serde(with = "humantime_serde")]
    pub confirm_max_age: Duration,
    /// Events a session keeps for event-stream replay (default 256).
    pub event_history: usize,
    /// Source of wall-clock time.
    #[serde(skip)]
    pub clock: SharedClock,
    /// Open sessions the host holds at most (default 1024); creating one more fails with
    /// [`crate::engine::host::CreateSessionError::Capacity`]. Bounds memory whoever mints.
    pub max_sessions: usize,
    /// Open sessions one owner holds at most (default 16); an owner at the cap mints further
    /// tokens for one of their sessions (`{"session": id}`) instead.
    pub max_sessions_per_owner: usize,
    /// A session unused for this long (no request looked it up, nothing committed or logged)
    /// is closed and dropped, freeing its slot (default [`DEFAULT_SESSION_IDLE`], 30
    /// minutes; 0 disables). Its agent tokens then answer 503 `paused`.
    #[serde(with = "humantime_serde")]
    pub session_idle: Duration,
    /// With a store: a stored session unused for this long (no load, no commit; its
    /// `updated_at`) is deleted from the store, and its tokens answer 503 `paused` (default
    /// [`DEFAULT_STORED_SESSION_TTL`], 30 days; 0 keeps stored sessions until closed).
    /// `docs/stores.md` §Bounds on disk.
    #[serde(with = "humantime_serde")]
    pub stored_session_ttl: Duration,
    /// How long a cancelled effect has to end after its cancellation signal before its task
    /// is aborted (default [`DEFAULT_CANCEL_GRACE`], 5 seconds; `docs/semantics.md` §5.6).
    #[serde(with = "humantime_serde")]
    pub cancel_grace: Duration,
    /// Whether sessions record their agents' calls and answers, and the human's decisions on
    /// their proposals, in a transcript (`Session::transcript`, the console's export,
    /// `docs/security.md` §Transcripts). Off by default: a transcript keeps in memory what the
    /// agents sent (text they typed, possibly the user's data) for the session's owner to
    /// export, which an app author turns on knowingly (the examples do).
    pub transcripts: bool,
    /// Byte budgets of what a session or token keeps (see [`Budgets`]).
    pub budgets: Budgets,
}

/// The default [`HostConfig::cancel_grace`]: 5 seconds.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            policy: DispatchPolicy::Lenient,
            action_gates: ActionGates::Enforced,
            confirm_max_age: Duration::from_secs(600),
            event_history: 256,
            clock: Arc::new(SystemClock),
            max_sessions: 1024,
            max_sessions_per_owner: 16,
            session_idle: DEFAULT_SESSION_IDLE,
            stored_session_ttl: DEFAULT_STORED_SESSION_TTL,
            cancel_grace: DEFAULT_CANCEL_GRACE,
            transcripts: false,
            budgets: Budgets::default(),
        }
    }
}

impl HostConfig {
    /// [`Self::session_idle`] in the clock's milliseconds (0: disabled).
    pub(crate) fn session_idle_ms(&self) -> u64 {
        crate::clock::millis(self.session_idle)
    }

    /// [`Self::stored_session_ttl`] in the clock's milliseconds (0: disabled).
    pub(crate) fn stored_session_ttl_ms(&self) -> u64 {
        crate::clock::millis(self.stored_session_ttl)
    }
}

impl std::fmt::Debug for HostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("policy", &self.policy)
            .field("action_gates", &self.action_gates)
            .field("confirm_max_age", &self.confirm_max_age)
            .field("event_history", &self.event_history)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_owner", &self.max_sessions_per_owner)
            .field("session_idle", &self.session_idle)
            .field("stored_session_ttl", &self.stored_session_ttl)
            .field("transcripts", &self.transcripts)
            .field("budgets", &self.budgets)
            .finish_non_exhaustive()
    }
}

/// Default of [`HostConfig::session_idle`]: 30 minutes.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// Default of [`HostConfig::stored_session_ttl`]: 30 days.
pub const DEFAULT_STORED_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The body cap on every route that reads a body (`docs/lap.md` §3.5).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Byte budgets: what one session or one token may make the host keep. Sizes are the JSON
/// encoding of what is kept. A call that would go over a budget is refused with a clear error
/// (413, 400 or 429, the limit in the detail); kept state is never truncated silently. Rings
/// (the activity log, the event history) drop their oldest entries to stay within their totals,
/// as they do for their entry counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Budgets {
    /// A narration text, and the whole entry it makes, in bytes (default 16 KiB); more is 413.
    /// Log entries built from messages summarize their payload, and drop a `stateDiff` that
    /// would take an entry past this size (saying so in `detail`).
    pub log_entry_bytes: usize,
    /// Bytes the activity log of a session keeps in all (default 1 MiB); the oldest entries
    /// go first.
    pub log_total_bytes: usize,
    /// Bytes one event of the history may take (default 64 KiB); a larger event is sent live
    /// but not kept, so a later replay across it gets a snapshot.
    pub event_bytes: usize,
    /// Bytes the event history of a session keeps in all (default 4 MiB); the oldest events go
    /// first (a replay from before them gets a snapshot).
    pub event_history_bytes: usize,
    /// A proposal's message and reason in bytes (default 32 KiB); more is 413. An edited
    /// approval over it is 400.
    pub confirm_bytes: usize,
    /// Pending confirmations a session holds at most (default 64); one more is 429.
    pub max_pending_confirms: usize,
    /// Bytes the pending confirmations of a session hold in all (default 1 MiB); more is 429.
    pub pending_confirm_bytes: usize,
    /// An idempotency record's key and message in bytes (default 256 KiB); a keyed `/message`
    /// over it is 413.
    pub idempotency_record_bytes: usize,
    /// Bytes the idempotency records of one token hold in all, answers included (default
    /// 4 MiB); a keyed `/message` past it is 429 until the oldest record expires.
    pub idempotency_token_bytes: usize,
    /// Period of the sweep that drops expired idempotency records (default 30 s).
    #[serde(with = "humantime_serde")]
    pub idempotency_sweep: Duration,
    /// Recent commit patches a session keeps for `/state {sinceSeq}` and `/wait {sinceSeq}`
    /// (default 256); the oldest go first (`docs/semantics.md` §8.7).
    pub patch_history: usize,
    /// Bytes those patches hold in all (default 1 MiB); the oldest go first, and a patch over
    /// it on its own is not kept (a `sinceSeq` before it gets the whole state).
    pub patch_history_bytes: usize,
    /// Bytes all the host's sessions retain in all: their rings (event histories, activity
    /// logs, recent commit patches, transcripts) and the answers of keyed `/message`s, counted
    /// as what their entries take on the heap with the allocator's slack: past it, the oldest
    /// entries across every session go first, and one session's rings hold at most an eighth
    /// of it (past that, its own oldest go first). Pending confirmations, running work and
    /// keyed calls still running count too, but are never shed: the rings give way to them
    /// (`docs/stores.md` §Memory).
    ///
    /// The default follows the machine: an eighth of the memory the process may use (the
    /// cgroup's limit when there is one, else the machine's `MemTotal`), at most
    /// [`DEFAULT_RETAINED_BYTES`] (256 MiB, the default on a machine of 2 GiB or more) and at
    /// least 16 MiB; 256 MiB where neither can be read.
    pub retained_bytes: usize,
    /// Entries a session's transcript keeps (default 256); the oldest go first.
    pub transcript_entries: usize,
    /// Bytes a session's transcript keeps in all (default 1 MiB); the oldest entries go first.
    pub transcript_bytes: usize,
    /// Bytes of one recorded request or answer (default 64 KiB); a larger one is left out of
    /// its entry (`null`), and the entry says so.
    pub transcript_entry_bytes: usize,
}

/// Default of [`Budgets::retained_bytes`] on a machine of 2 GiB or more, and its ceiling
/// below that: 256 MiB.
pub const DEFAULT_RETAINED_BYTES: usize = 256 * 1024 * 1024;

/// The least default of [`Budgets::retained_bytes`], on a small machine: 16 MiB.
const LEAST_RETAINED_BYTES: usize = 16 * 1024 * 1024;

/// The default of [`Budgets::retained_bytes`] on this machine: an eighth of
/// [`memory_limit`], within [`LEAST_RETAINED_BYTES`] ..= [`DEFAULT_RETAINED_BYTES`] (read once).
fn default_retained_bytes() -> usize {
    static DEFAULT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| retained_for(memory_limit()))
}

/// An eighth of `memory` (bytes), within the least and the default; the default when unknown.
fn retained_for(memory: Option<u64>) -> usize {
    match memory {
        Some(bytes) => usize::try_from(bytes / 8)
            .unwrap_or(usize::MAX)
            .clamp(LEAST_RETAINED_BYTES, DEFAULT_RETAINED_BYTES),
        None => DEFAULT_RETAINED_BYTES,
    }
}

/// The memory this process may use: the lower of its cgroup's limit (v2 `memory.max`, v1
/// `memory.limit_in_bytes`) and the machine's `MemTotal`; `None` where neither reads.
fn memory_limit() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let total = read("/proc/meminfo").and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|path| read(path))
    // "max" (v2) or a huge number (v1) when unlimited: not a limit.
    .and_then(|text| text.trim().parse::<u64>().ok())
    .filter(|&limit| limit < (1 << 60));
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            log_entry_bytes: 16 * 1024,
            log_total_bytes: 1024 * 1024,
            event_bytes: 64 * 1024,
            event_history_bytes: 4 * 1024 * 1024,
            confirm_bytes: 32 * 1024,
            max_pending_confirms: 64,
            pending_confirm_bytes: 1024 * 1024,
            idempotency_record_bytes: 256 * 1024,
            idempotency_token_bytes: 4 * 1024 * 1024,
            idempotency_sweep: Duration::from_secs(30),
            patch_history: 256,
            patch_history_bytes: 1024 * 1024,
            retained_bytes: default_retained_bytes(),
            transcript_entries: 256,
            transcript_bytes: 1024 * 1024,
            transcript_entry_bytes: 64 * 1024,
        }
    }
}

/// A refusal for going over a [`Budgets`] limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} is {size}{unit}; the limit is {limit}")]
pub struct OverBudget {
    /// What was measured (`text`, `msg`, `pending confirmations`, …).
    pub what: String,
    /// Its size (bytes, or a count when `unit` is empty).
    pub size: usize,
    /// `" bytes"`, or empty for a count.
    pub unit: &'static str,
    /// The limit.
    pub limit: usize,
    /// A total is full (429) rather than one item too large (413).
    pub full: bool,
    /// When a full total frees up, in ms (429 only).
    pub retry_after_ms: Option<u64>,
}

impl OverBudget {
    /// One item over its size limit (413).
    pub fn too_large(what: impl Into<String>, size: usize, limit: usize) -> Self {
        OverBudget {
            what: what.into(),
            size,
            unit: " bytes",
            limit,
            full: false,
            retry_after_ms: None,
        }
    }

    /// A total that one more item would take past its limit (429).
    pub fn full(what: impl Into<String>, size: usize, limit: usize, retry: Option<u64>) -> Self {
        OverBudget {
            what: what.into(),
            size,
            unit: " bytes",
            limit,
            full: true,
            retry_after_ms: retry,
        }
    }

    /// A count that one more item would take past its limit (429).
    pub fn full_count(what: impl Into<String>, n: usize, limit: usize, retry: Option<u64>) -> Self {
        OverBudget {
            unit: "",
            ..OverBudget::full(what, n, limit, retry)
        }
    }

    /// Checks `size <= limit` for one item (413 when not).
    pub fn check(what: &str, size: usize, limit: usize) -> Result<(), OverBudget> {
        if size > limit {
            Err(OverBudget::too_large(what, size, limit))
        } else {
            Ok(())
        }
    }
}

/// The length of `value`'s compact JSON encoding, without building it.
pub(crate) fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, value);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_default_retained_budget_follows_the_machine() {
        const MIB: u64 = 1024 * 1024;
        assert_eq!(retained_for(None), DEFAULT_RETAINED_BYTES);
        assert_eq!(retained_for(Some(24 * 1024 * MIB)), DEFAULT_RETAINED_BYTES);
        assert_eq!(retained_for(Some(2048 * MIB)), DEFAULT_RETAINED_BYTES);
        assert_eq!(retained_for(Some(1024 * MIB)), 128 * MIB as usize);
        assert_eq!(retained_for(Some(512 * MIB)), 64 * MIB as usize);
        assert_eq!(retained_for(Some(64 * MIB)), LEAST_RETAINED_BYTES);
        let here = Budgets::default().retained_bytes;
        assert!((LEAST_RETAINED_BYTES..=DEFAULT_RETAINED_BYTES).contains(&here));
        assert_eq!(here, retained_for(memory_limit()));
    }

    #[test]
    fn the_host_config_deserializes_with_defaults() {
        let config: HostConfig = serde_json::from_value(json!({
            "policy": "strict",
            "action_gates": "advisory",
            "session_idle": "10m",
            "stored_session_ttl": "7days",
            "budgets": {"log_total_bytes": 4096, "idempotency_sweep": "5s"},
        }))
        .expect("reads");
        assert_eq!(config.policy, DispatchPolicy::Strict);
        assert_eq!(config.action_gates, ActionGates::Advisory);
        assert_eq!(config.session_idle, Duration::from_secs(600));
        assert_eq!(config.stored_session_ttl, Duration::from_secs(7 * 86_400));
        assert_eq!(config.budgets.log_total_bytes, 4096);
        assert_eq!(config.budgets.idempotency_sweep, Duration::from_secs(5));
        assert_eq!(config.budgets.event_bytes, Budgets::default().event_bytes);
        assert_eq!(config.max_sessions, HostConfig::default().max_sessions);
        let e = serde_json::from_value::<HostConfig>(json!({"budgets": {"log_bytes": 1}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `log_bytes`"), "{e}");
        assert!(serde_json::from_value::<HostConfig>(json!({"clock": 1})).is_err());
    }

    #[test]
    fn json_len_is_the_compact_encoding() {
        let v = json!({"a":[1,2,"x\"y"],"b":null});
        assert_eq!(json_len(&v), v.to_string().len());
    }
}
