//! Host options shared by every session.

use crate::clock::{SharedClock, SystemClock};
use std::sync::Arc;

/// How strictly incoming payloads are validated (`semantics.md` §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DispatchPolicy {
    /// Extra keys are accepted silently (unless the schema denies them).
    #[default]
    Lenient,
    /// Extra keys are errors, and unknown-typed fields raise `untyped-field` warnings.
    Strict,
}

/// Options of a [`crate::Host`].
#[derive(Clone)]
pub struct HostConfig {
    /// Validation policy for agent and human dispatches.
    pub policy: DispatchPolicy,
    /// Age after which a pending confirmation expires (default 10 minutes).
    pub confirm_max_age_ms: u64,
    /// Events a session keeps for event-stream replay (default 256).
    pub event_history: usize,
    /// Source of wall-clock time.
    pub clock: SharedClock,
    /// Open sessions the host holds at most (default 1024); creating one more fails with
    /// [`crate::host::CreateSessionError::Capacity`]. Bounds memory whoever mints.
    pub max_sessions: usize,
    /// Open sessions one owner holds at most (default 16); an owner at the cap mints further
    /// tokens for one of their sessions (`{"session": id}`) instead.
    pub max_sessions_per_owner: usize,
    /// A session unused for this long (no request looked it up, nothing committed or logged)
    /// is closed and dropped, freeing its slot (default [`DEFAULT_SESSION_IDLE_MS`], 30
    /// minutes; 0 disables). Its agent tokens then answer 503 `paused`.
    pub session_idle_ms: u64,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            policy: DispatchPolicy::Lenient,
            confirm_max_age_ms: 600_000,
            event_history: 256,
            clock: Arc::new(SystemClock),
            max_sessions: 1024,
            max_sessions_per_owner: 16,
            session_idle_ms: DEFAULT_SESSION_IDLE_MS,
        }
    }
}

impl std::fmt::Debug for HostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("policy", &self.policy)
            .field("confirm_max_age_ms", &self.confirm_max_age_ms)
            .field("event_history", &self.event_history)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_owner", &self.max_sessions_per_owner)
            .field("session_idle_ms", &self.session_idle_ms)
            .finish_non_exhaustive()
    }
}

/// Default of [`HostConfig::session_idle_ms`]: 30 minutes.
pub const DEFAULT_SESSION_IDLE_MS: u64 = 30 * 60 * 1000;

/// The body cap on every route that reads a body (`lap.md` §3.5).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
