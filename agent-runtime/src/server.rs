//! The agent server: a [`Host`] plus the security surface (tokens, identity, rate limits,
//! audit, origins) and the options of `lap.md` §1. [`AgentServer::router`] hands the app one
//! axum `Router` to merge into its own.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::app::App;
use crate::clock::SharedClock;
use crate::host::Host;
use crate::ops::IdempotencyStore;
use crate::security::{loopback_hosts, AllowedHosts, HOST_REFUSED_DETAIL};
use crate::security::{
    AuditEntry, AuditSink, ConfigError, GovernorRateLimiter, Identity, IdentityCookie, IdentityKey,
    IdentityResolver, InMemoryTokenStore, OriginPolicy, RateLimitSpec, RateLimiter, TokenStore,
    TrustProxy, DEFAULT_IDENTITY_COOKIE_NAME,
};

/// Default per-token LAP limit.
pub const DEFAULT_RATE_LIMIT: &str = "30/minute";

/// Options of the HTTP surface (`lap.md` §1).
#[derive(Clone)]
pub struct ServerOptions {
    /// A caller without identity may mint, and gets an `anon-…` identity cookie.
    pub allow_anonymous: bool,
    /// Number of trusted appending proxies.
    pub trust_proxy: TrustProxy,
    /// The host app serves TLS itself (request origins are `https`).
    pub tls: bool,
    /// Base path of the LAP endpoints.
    pub lap_base_path: String,
    /// Inactivity expiry of tokens; `None` disables it.
    pub sliding_ttl_ms: Option<u64>,
    /// Extra origins accepted for cookie-authenticated POSTs.
    pub allowed_origins: Vec<String>,
    /// Upper clamp of `timeoutMs` on `/message`, `/wait`, `/confirm-result`.
    pub max_wait_ms: u64,
    /// Name of the identity cookie.
    pub identity_cookie_name: String,
    /// Signing key of the identity cookie (`None`: 32 random bytes per process).
    pub identity_key: Option<IdentityKey>,
    /// Per-token LAP rate limit (also used for mint, keyed by identity).
    pub rate_limit: RateLimitSpec,
    /// `Host` values accepted on every route but `/agent/mcp` (which has its own
    /// `mcp.allowed_hosts`, same default): a name matches any port, `name:port` only that
    /// port. Default [`loopback_hosts`] (`localhost`, `127.0.0.1`, `::1`); a deployment lists
    /// its own host names; empty accepts any host. Others get 403 `forbidden`.
    pub allowed_hosts: Vec<String>,
    /// The MCP endpoint `/agent/mcp` (`lap.md` §7.3).
    #[cfg(feature = "mcp")]
    pub mcp: crate::mcp::McpOptions,
    /// `/agent/ws` and paired sessions (`pairing.md`).
    #[cfg(feature = "pairing")]
    pub pairing: crate::pairing::PairingOptions,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            allow_anonymous: false,
            trust_proxy: TrustProxy::default(),
            tls: false,
            lap_base_path: "/agent/lap/v1".into(),
            sliding_ttl_ms: None,
            allowed_origins: Vec::new(),
            max_wait_ms: 120_000,
            identity_cookie_name: DEFAULT_IDENTITY_COOKIE_NAME.into(),
            identity_key: None,
            rate_limit: DEFAULT_RATE_LIMIT
                .parse()
                .expect("the default rate limit parses"),
            allowed_hosts: loopback_hosts(),
            #[cfg(feature = "mcp")]
            mcp: crate::mcp::McpOptions::default(),
            #[cfg(feature = "pairing")]
            pairing: crate::pairing::PairingOptions::default(),
        }
    }
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("allow_anonymous", &self.allow_anonymous)
            .field("lap_base_path", &self.lap_base_path)
            .field("sliding_ttl_ms", &self.sliding_ttl_ms)
            .field("max_wait_ms", &self.max_wait_ms)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish_non_exhaustive()
    }
}

pub(crate) struct ServerInner<A: App> {
    pub host: Host<A>,
    pub tokens: Arc<dyn TokenStore>,
    pub identity: Identity,
    pub limiter: Arc<dyn RateLimiter>,
    pub origin: OriginPolicy,
    pub options: ServerOptions,
    pub idempotency: IdempotencyStore,
    /// Where first answers of keyed calls are also kept, with a durable store.
    pub durable_idempotency: Option<Arc<dyn crate::store::IdempotencyRecords>>,
    /// Revoked tids, so in-flight long polls of that token end with 403.
    pub revocations: broadcast::Sender<String>,
    /// The live sessions of `/agent/mcp`.
    #[cfg(feature = "mcp")]
    pub mcp: Arc<crate::mcp::McpSessions>,
    /// Paired sockets and which tokens are paired.
    #[cfg(feature = "pairing")]
    pub pairing: crate::pairing::Pairing,
    /// Where the MCP session ids issued are kept (durable stores only).
    #[cfg(feature = "mcp")]
    pub mcp_bindings: Option<Arc<dyn crate::store::McpBindings>>,
}

/// The HTTP surface of a host. Cheap to clone (shared).
pub struct AgentServer<A: App> {
    pub(crate) inner: Arc<ServerInner<A>>,
}

impl<A: App> Clone for AgentServer<A> {
    fn clone(&self) -> Self {
        AgentServer {
            inner: self.inner.clone(),
        }
    }
}

impl<A: App> std::fmt::Debug for AgentServer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentServer")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// Builds an [`AgentServer`]; every dependency has an in-memory default.
pub struct AgentServerBuilder<A: App> {
    host: Host<A>,
    options: ServerOptions,
    tokens: Option<Arc<dyn TokenStore>>,
    idempotency: Option<Arc<dyn crate::store::IdempotencyRecords>>,
    mcp_bindings: Option<Arc<dyn crate::store::McpBindings>>,
    limiter: Option<Arc<dyn RateLimiter>>,
    resolver: Option<Arc<dyn IdentityResolver>>,
}

impl<A: App> AgentServerBuilder<A> {
    /// Replaces the options.
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Lets callers without identity mint (local use, examples).
    pub fn allow_anonymous(mut self, allow: bool) -> Self {
        self.options.allow_anonymous = allow;
        self
    }

    /// Uses a durable or shared token store.
    pub fn token_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.tokens = Some(store);
        self
    }

    /// Uses the token store of `stores` (tokens then survive a restart, and replicas on one
    /// database share them). The sessions' store is the host's ([`Host::with_store`]); the
    /// identity key is [`ServerOptions::identity_key`] (see
    /// [`Stores::identity_key`](crate::store::Stores::identity_key)).
    pub fn stores(mut self, stores: &crate::store::Stores) -> Self {
        self.tokens = Some(stores.tokens.clone());
        if stores.is_durable() {
            self.idempotency = Some(stores.idempotency.clone());
            self.mcp_bindings = Some(stores.mcp.clone());
        }
        self
    }

    /// Uses another rate limiter.
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Resolves identities from the request (before the identity cookie).
    pub fn identity_resolver(mut self, resolver: Arc<dyn IdentityResolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Builds the server.
    pub fn build(self) -> Result<AgentServer<A>, ConfigError> {
        let key = match &self.options.identity_key {
            Some(k) => k.clone(),
            None => IdentityKey::random(),
        };
        let cookie = IdentityCookie::new(self.options.identity_cookie_name.clone(), key)?;
        let mut identity = Identity::new(cookie).with_allow_anonymous(self.options.allow_anonymous);
        if let Some(r) = self.resolver {
            identity = identity.with_resolver(r);
        }
        let limiter = self
            .limiter
            .unwrap_or_else(|| Arc::new(GovernorRateLimiter::new(self.options.rate_limit)));
        let origin = OriginPolicy {
            trust_proxy: self.options.trust_proxy,
            tls: self.options.tls,
            allowed_origins: self.options.allowed_origins.clone(),
        };
        let (revocations, _) = broadcast::channel(256);
        Ok(AgentServer {
            inner: Arc::new(ServerInner {
                tokens: self
                    .tokens
                    .unwrap_or_else(|| Arc::new(InMemoryTokenStore::new())),
                identity,
                limiter,
                origin,
                idempotency: IdempotencyStore::new(self.host.config()),
                durable_idempotency: self.idempotency,
                revocations,
                #[cfg(feature = "mcp")]
                mcp: Arc::new(crate::mcp::McpSessions::new(&self.options.mcp)),
                #[cfg(feature = "pairing")]
                pairing: crate::pairing::Pairing::new(
                    self.options.pairing.clone(),
                    self.host.config().budgets.log_entry_bytes,
                ),
                #[cfg(feature = "mcp")]
                mcp_bindings: self.mcp_bindings,
                options: self.options,
                host: self.host,
            }),
        })
    }
}

impl<A: App> AgentServer<A> {
    /// The agent surface as one `Router` (state already applied): LAP, the management and
    /// human routes, the console and `/agent/mcp`. Merge it into the app's.
    ///
    /// Every route but `/agent/mcp` answers 403 to a `Host` outside
    /// [`ServerOptions::allowed_hosts`] (`/agent/mcp` checks `mcp.allowed_hosts`).
    pub fn router(&self) -> axum::Router {
        let allowed = AllowedHosts::new(&self.inner.options.allowed_hosts);
        let router = crate::lap::routes(self).layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let allowed = allowed.clone();
                async move {
                    if allowed.allows(request.headers(), request.uri().authority()) {
                        next.run(request).await
                    } else {
                        axum::response::IntoResponse::into_response(
                            crate::error::ApiError::forbidden(HOST_REFUSED_DETAIL),
                        )
                    }
                }
            },
        ));
        #[cfg(feature = "mcp")]
        let router = router.merge(crate::mcp::server::mcp_routes(self));
        router
    }

    /// A builder with default options around `host`.
    pub fn builder(host: Host<A>) -> AgentServerBuilder<A> {
        AgentServerBuilder {
            host,
            options: ServerOptions::default(),
            tokens: None,
            idempotency: None,
            mcp_bindings: None,
            limiter: None,
            resolver: None,
        }
    }

    /// The host.
    pub fn host(&self) -> &Host<A> {
        &self.inner.host
    }

    /// The token store.
    pub fn tokens(&self) -> &Arc<dyn TokenStore> {
        &self.inner.tokens
    }

    /// The options.
    pub fn options(&self) -> &ServerOptions {
        &self.inner.options
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
