//! The shared state every operation reads: the host and its sessions, the security building
//! blocks (tokens, identity, rate limits, origins), the options, the idempotency records, the
//! revocation channel and the paired sessions' hub. Surfaces receive a [`ServerState`] (cheap
//! to clone); the top-level `server` builds it and mounts the surfaces around it.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::keyed::IdempotencyStore;
use super::options::ServerOptions;
use crate::app::App;
use crate::clock::SharedClock;
use crate::engine::host::Host;
use crate::engine::host::LiveAgents;
use crate::engine::store::IdempotencyRecords;
use crate::security::{
    AuditEntry, AuditEvent, AuditSink, AuthThrottle, Bucket, Failure, FleetLimiter,
    GovernorRateLimiter, Identity, OriginPolicy, RateLimited, RateLimiter, Refusal, TokenStore,
};

/// The fields of a [`ServerState`].
pub(crate) struct ServerFields<A: App> {
    pub(crate) host: Host<A>,
    pub(crate) tokens: Arc<dyn TokenStore>,
    pub(crate) identity: Identity,
    pub(crate) limiter: Arc<dyn RateLimiter>,
    /// Anonymous mints per client address (`ServerOptions::anonymous_mint_rate`).
    pub(crate) anonymous_mints: GovernorRateLimiter,
    /// With a fleet's store (PostgreSQL) the limits drawn from its shared buckets instead
    /// (`docs/stores.md` §Limits across replicas): the rate limit (unless the builder was
    /// given a limiter of its own) and the anonymous mints.
    pub(crate) fleet: Option<FleetLimits>,
    /// The client addresses blocked for failing to authenticate too often.
    pub(crate) auth_throttle: AuthThrottle,
    /// The per-call metrics' handles.
    pub(crate) request_metrics: Arc<crate::telemetry::RequestMetrics>,
    pub(crate) origin: OriginPolicy,
    pub(crate) options: ServerOptions,
    pub(crate) idempotency: IdempotencyStore,
    /// Where first answers of keyed calls are also kept, with a durable store.
    pub(crate) durable_idempotency: Option<Arc<dyn IdempotencyRecords>>,
    /// When the stored answers past the window were last deleted (ms; `ops/keyed/durable.rs`).
    pub(crate) durable_idempotency_swept: std::sync::atomic::AtomicU64,
    /// Revoked tids, so in-flight long polls of that token end with 403.
    pub(crate) revocations: broadcast::Sender<String>,
    /// Set by [`crate::AgentServer::start_draining`]: readiness answers 503.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// `true` once [`crate::AgentServer::begin_shutdown`] ran: long polls and event streams
    /// end, paired sockets close, mints and MCP sessions are refused.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    /// Paired sockets and which tokens are paired.
    #[cfg(feature = "pairing")]
    pub(crate) pairing: Pairing,
    /// Where the MCP session ids issued are kept (durable stores only).
    #[cfg(feature = "mcp")]
    pub(crate) mcp_bindings: Option<Arc<dyn crate::engine::store::McpBindings>>,
    /// OAuth's clients and grants, when it is on (`ServerOptions::oauth`).
    #[cfg(feature = "oauth")]
    pub(crate) oauth: Option<Arc<crate::security::oauth::OAuth>>,
}

/// The limits a fleet shares through its store (`docs/stores.md` §Limits across replicas).
pub(crate) struct FleetLimits {
    /// `ServerOptions::rate_limit` (buckets `token`, `identity`, `mint`); `None` when the
    /// builder was given a limiter, which is then used.
    pub(crate) rate: Option<FleetLimiter>,
    /// `ServerOptions::anonymous_mint_rate`.
    pub(crate) anonymous_mints: FleetLimiter,
}

/// The state shared by every operation and surface. Cheap to clone.
pub(crate) struct ServerState<A: App> {
    inner: Arc<ServerFields<A>>,
}

impl<A: App> Clone for ServerState<A> {
    fn clone(&self) -> Self {
        ServerState {
            inner: self.inner.clone(),
        }
    }
}

impl<A: App> ServerState<A> {
    /// The state around `shared`.
    pub(crate) fn new(shared: ServerFields<A>) -> Self {
        ServerState {
            inner: Arc::new(shared),
        }
    }

    /// A handle that does not keep the server alive (a background task's: it ends with the
    /// server).
    #[cfg(feature = "fleet")]
    pub(crate) fn downgrade(&self) -> std::sync::Weak<ServerFields<A>> {
        Arc::downgrade(&self.inner)
    }

    /// The server behind a [`Self::downgrade`]d handle, while it lives.
    #[cfg(feature = "fleet")]
    pub(crate) fn upgrade(weak: &std::sync::Weak<ServerFields<A>>) -> Option<Self> {
        weak.upgrade().map(|inner| ServerState { inner })
    }

    /// The host.
    pub(crate) fn host(&self) -> &Host<A> {
        &self.inner.host
    }

    /// The token store.
    pub(crate) fn tokens(&self) -> &Arc<dyn TokenStore> {
        &self.inner.tokens
    }

    /// Whether the server is draining (`docs/operations.md` §Health).
    pub(crate) fn is_draining(&self) -> bool {
        self.inner
            .draining
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Marks the server as draining.
    pub(crate) fn start_draining(&self) {
        self.inner
            .draining
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the server is shutting down (`docs/operations.md` §Shutdown).
    pub(crate) fn is_stopping(&self) -> bool {
        *self.inner.stopping.borrow()
    }

    /// Starts the shutdown: draining, and every [`Self::stopped`] resolves.
    pub(crate) fn begin_stopping(&self) {
        self.start_draining();
        self.inner.stopping.send_replace(true);
    }

    /// Resolves once the server is shutting down (at once if it is).
    pub(crate) fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut stopping = self.inner.stopping.subscribe();
        async move {
            // The sender lives as long as the state; a closed channel cannot happen while
            // anyone waits, and would mean the server is gone: stop too.
            let _ = stopping.wait_for(|stopping| *stopping).await;
        }
    }

    /// The per-call metrics' handles, for [`super::traced::Traced::start`].
    pub(crate) fn request_metrics(&self) -> &Arc<crate::telemetry::RequestMetrics> {
        &self.inner.request_metrics
    }

    /// The options.
    pub(crate) fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    /// Who the caller is: the resolver, the identity cookie, anonymous mode.
    pub(crate) fn identity(&self) -> &Identity {
        &self.inner.identity
    }

    /// The rate limiter of this process (the failed-authentication throttle's buckets).
    pub(crate) fn limiter(&self) -> &Arc<dyn RateLimiter> {
        &self.inner.limiter
    }

    /// Takes one call of `key` from `bucket` of the rate limit: the fleet's shared bucket
    /// with a PostgreSQL store, else the limiter (the same bucket in this process).
    pub(crate) async fn take_rate(&self, key: &str, bucket: Bucket) -> Result<(), Refusal> {
        match self.inner.fleet.as_ref().and_then(|f| f.rate.as_ref()) {
            Some(fleet) => fleet.check(key, bucket).await,
            None => self
                .inner
                .limiter
                .check(key, bucket)
                .await
                .map_err(Refusal::Limited),
        }
    }

    /// Takes one anonymous mint of client address `address`: the fleet's shared bucket with
    /// a PostgreSQL store, else this process's.
    pub(crate) async fn take_anonymous_mint(&self, address: &str) -> Result<(), Refusal> {
        match &self.inner.fleet {
            Some(fleet) => fleet.anonymous_mints.check(address, Bucket::Mint).await,
            None => self
                .inner
                .anonymous_mints
                .check(address, Bucket::Mint)
                .map_err(Refusal::Limited),
        }
    }

    /// Where the host finds whether a stored session has a live agent (a full store evicts
    /// only sessions without one).
    pub(crate) fn live_agents(&self) -> LiveAgents<'_> {
        LiveAgents {
            tokens: &*self.inner.tokens,
            #[cfg(feature = "mcp")]
            mcp: self
                .mcp_bindings()
                .map(|m| &**m as &dyn crate::engine::store::McpBindings),
            #[cfg(not(feature = "mcp"))]
            mcp: None,
        }
    }

    /// Before a credential from client `address` is looked up: 429 `rate-limited` while the
    /// address is blocked for failing too often (`docs/security.md` §Rate limits). `address`
    /// is made only when some address is blocked (no address formatted while none is).
    pub(crate) fn auth_blocked_by(
        &self,
        address: impl FnOnce() -> String,
    ) -> Result<(), RateLimited> {
        self.inner.auth_throttle.check_by(address, self.now())
    }

    /// A credential from client `address` failed at `endpoint`: counted in the address's
    /// `auth-failure` bucket. While the bucket lasts, `audit` (the failure's own entry, if
    /// any) is written; the failure that empties it blocks the address and writes one
    /// `rate-limited {endpoint, reason: "auth-failures", retryAfterMs, refused}` entry instead.
    pub(crate) async fn auth_failed(
        &self,
        address: &str,
        endpoint: &str,
        audit: Option<AuditEntry>,
    ) {
        let now = self.now();
        let failure = self
            .inner
            .auth_throttle
            .failed(&**self.limiter(), address, now)
            .await;
        match failure {
            Failure::Counted => {
                if let Some(entry) = audit {
                    self.audit(entry).await;
                }
            }
            Failure::Blocked {
                retry_after_ms,
                refused,
            } => {
                let detail = serde_json::json!({
                    "endpoint": endpoint,
                    "reason": "auth-failures",
                    "retryAfterMs": retry_after_ms,
                    "refused": refused,
                });
                self.audit(AuditEntry::new(now, AuditEvent::RateLimited, detail))
                    .await;
            }
        }
    }

    /// The cross-origin policy.
    pub(crate) fn origin(&self) -> &OriginPolicy {
        &self.inner.origin
    }

    /// The in-process idempotency records.
    pub(crate) fn idempotency(&self) -> &IdempotencyStore {
        &self.inner.idempotency
    }

    /// Where first answers of keyed calls are also kept (durable stores only).
    pub(crate) fn durable_idempotency(&self) -> Option<&Arc<dyn IdempotencyRecords>> {
        self.inner.durable_idempotency.as_ref()
    }

    /// When the stored answers past the window were last deleted (ms).
    pub(crate) fn durable_idempotency_swept(&self) -> &std::sync::atomic::AtomicU64 {
        &self.inner.durable_idempotency_swept
    }

    /// Revoked tids, for in-flight calls and sockets of that token.
    pub(crate) fn revocations(&self) -> &broadcast::Sender<String> {
        &self.inner.revocations
    }

    /// The paired sessions' hub and options.
    #[cfg(feature = "pairing")]
    pub(crate) fn pairing(&self) -> &Pairing {
        &self.inner.pairing
    }

    /// Where the MCP session ids issued are kept (durable stores only).
    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_bindings(&self) -> Option<&Arc<dyn crate::engine::store::McpBindings>> {
        self.inner.mcp_bindings.as_ref()
    }

    /// OAuth's clients and grants, when it is on.
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth(&self) -> Option<&Arc<crate::security::oauth::OAuth>> {
        self.inner.oauth.as_ref()
    }

    /// The OAuth issuer: `OAuthOptions::issuer`, else the origin of `parts` (whose `Host`
    /// the routes' allow-list checked).
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_issuer(&self, parts: &axum::http::request::Parts) -> String {
        match &self.options().oauth.issuer {
            Some(issuer) => issuer.clone(),
            None => self.origin().request_origin(parts).url(""),
        }
    }

    pub(crate) fn clock(&self) -> &SharedClock {
        &self.inner.host.config().clock
    }

    pub(crate) fn now(&self) -> u64 {
        self.clock().now_ms()
    }

    pub(crate) fn audit_sink(&self) -> &Arc<dyn AuditSink> {
        self.inner.host.audit_sink()
    }

    /// Writes an audit entry and waits for the sink (writes on HTTP paths are awaited).
    pub(crate) async fn audit(&self, entry: AuditEntry) {
        self.audit_sink().write(entry).await;
    }
}

#[cfg(feature = "pairing")]
/// The pairing state of a server: the live hub, the options and the recent anonymous paired
/// mints (times, for `anonymous_mints_per_minute`).
pub(crate) struct Pairing {
    pub(crate) hub: crate::engine::paired::hub::Hub,
    pub(crate) options: super::options::PairingOptions,
    pub(crate) anonymous_mints: parking_lot::Mutex<std::collections::VecDeque<u64>>,
    /// This replica in its fleet (feature `fleet`), when `options.fleet_address` is set.
    #[cfg(feature = "fleet")]
    pub(crate) fleet: Option<Arc<crate::engine::paired::fleet::Fleet>>,
}

#[cfg(feature = "pairing")]
impl Pairing {
    pub(crate) fn new(options: super::options::PairingOptions, entry_bytes: usize) -> Self {
        let limits = crate::engine::paired::link::Limits {
            outcome_ms: crate::clock::millis(options.outcome_ttl),
            grace_ms: crate::clock::millis(options.grace),
            entry_bytes,
            log_bytes: options.log_bytes,
            outcome_bytes: options.outcome_bytes,
            outcomes_bytes: options.outcomes_bytes,
            watch_bytes: options.watch_bytes,
            outbound_bytes: options.outbound_bytes,
        };
        Pairing {
            hub: crate::engine::paired::hub::Hub::new(limits),
            options,
            anonymous_mints: Default::default(),
            #[cfg(feature = "fleet")]
            fleet: None,
        }
    }

    /// Takes one anonymous paired mint at `now`; `Err(retry_after_ms)` when the minute's
    /// allowance is spent.
    pub(crate) fn take_anonymous_mint(&self, now: u64) -> Result<(), u64> {
        const MINUTE: u64 = 60_000;
        let mut mints = self.anonymous_mints.lock();
        while mints.front().is_some_and(|at| at + MINUTE <= now) {
            mints.pop_front();
        }
        if mints.len() >= self.options.anonymous_mints_per_minute {
            let oldest = mints.front().copied().unwrap_or(now);
            return Err((oldest + MINUTE).saturating_sub(now).max(1));
        }
        mints.push_back(now);
        Ok(())
    }
}
