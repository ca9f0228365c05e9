//! The agent server, at the top of the crate: [`AgentServerBuilder`] builds the shared state
//! the operations read (`ops::ServerState`) and [`AgentServer::router`] mounts every surface
//! around it (LAP and the management and human routes, `/agent/mcp`, `/agent/ws`, the console)
//! as one axum `Router` for the app to merge into its own. Nothing below imports this module.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::algo::catalog::CatalogError;
use crate::app::App;
use crate::config::HostConfig;
use crate::engine::host::Host;
use crate::engine::store::Stores;
use crate::ops::{IdempotencyStore, ServerFields, ServerOptions, ServerState};
use crate::security::{
    AllowedHosts, AuditSink, ConfigError, FleetLimiter, GovernorRateLimiter, HostCheckLayer,
    Identity, IdentityCookie, IdentityKey, IdentityResolver, OriginPolicy, RateLimiter,
    StderrAuditSink, StoreError, TokenStore, TracingAuditSink, HOST_REFUSED_DETAIL,
};

/// The HTTP surface of a host. Cheap to clone (shared).
pub struct AgentServer<A: App> {
    state: ServerState<A>,
    /// CORS for [`ServerOptions::cors_origins`], when there are any.
    cors: Option<tower_http::cors::CorsLayer>,
    /// The live sessions of `/agent/mcp`.
    #[cfg(feature = "mcp")]
    mcp: Arc<crate::surface::mcp::McpSessions>,
}

impl<A: App> Clone for AgentServer<A> {
    fn clone(&self) -> Self {
        AgentServer {
            state: self.state.clone(),
            cors: self.cors.clone(),
            #[cfg(feature = "mcp")]
            mcp: self.mcp.clone(),
        }
    }
}

impl<A: App> std::fmt::Debug for AgentServer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentServer")
            .field("options", self.state.options())
            .finish_non_exhaustive()
    }
}

/// Builds an [`AgentServer`] in one chain: the app, then what differs from the defaults
/// (host config, audit sink, stores, options), then [`build`](Self::build). Every dependency
/// has an in-memory default.
///
/// ```no_run
/// # async fn wire<A: tea_agent_runtime::app::App>(app: A) -> Result<(), Box<dyn std::error::Error>> {
/// use tea_agent_runtime::{store::Stores, AgentServer, ServerOptions};
/// let stores = Stores::open("app.db").await?;
/// let mut options = ServerOptions::default();
/// options.allow_anonymous = true;
/// let server = AgentServer::builder(app).stores(&stores).options(options).build().await?;
/// # let _ = server; Ok(()) }
/// ```
pub struct AgentServerBuilder<A: App> {
    app: A,
    config: HostConfig,
    audit: Arc<dyn AuditSink>,
    stores: Option<Stores>,
    tokens: Option<Arc<dyn TokenStore>>,
    options: ServerOptions,
    limiter: Option<Arc<dyn RateLimiter>>,
    resolver: Option<Arc<dyn IdentityResolver>>,
    /// [`Self::local_development`] was called.
    local_development: bool,
    /// [`Self::audit_sink`] was called (the preset then keeps the caller's sink).
    audit_given: bool,
}

/// Why [`AgentServerBuilder::build`] made no server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The app's types fail the start-up checks (every error, see
    /// [`crate::host::CatalogError`]): the `Msg` schema and its derive records do not agree,
    /// or a tag, an example or an expression is wrong.
    #[error("the app's schema is invalid: {0}")]
    Catalog(#[from] CatalogError),
    /// An option is invalid (a CORS origin, the identity cookie's name or key).
    #[error("invalid server options: {0}")]
    Options(#[from] ConfigError),
    /// The store could not give the identity cookie's signing key.
    #[error("cannot read the identity signing key from the store: {0}")]
    Store(#[from] StoreError),
    /// The fleet's options do not hold (feature `fleet`: an address without a shared key of
    /// 32 characters, an address that is not a base URL, a store that is not PostgreSQL).
    #[error("invalid fleet options: {0}")]
    Fleet(String),
}

impl<A: App> AgentServerBuilder<A> {
    /// Replaces the host's config (default [`HostConfig::default`]).
    pub fn host_config(mut self, config: HostConfig) -> Self {
        self.config = config;
        self
    }

    /// Replaces the audit sink (default [`TracingAuditSink`]; [`StderrAuditSink`] with
    /// [`Self::local_development`]).
    pub fn audit_sink(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = audit;
        self.audit_given = true;
        self
    }

    /// The local-development preset: anonymous identities on
    /// ([`ServerOptions::allow_anonymous`], so the console on this machine mints without a
    /// sign-in), and, unless [`Self::audit_sink`] chose another, audit entries printed one
    /// readable line each on standard error ([`StderrAuditSink`]). Call it before or after
    /// [`Self::options`]: `build` applies it last. Print where the console is with
    /// [`AgentServer::console_url`]. Not for a server others can reach: anyone who reaches it
    /// can mint.
    pub fn local_development(mut self) -> Self {
        self.local_development = true;
        self
    }

    /// Keeps the sessions and their commits, the token records and the identity cookie's
    /// signing key (unless [`ServerOptions::identity_key`] is set) in `stores`; when they are
    /// durable, also the idempotency answers and MCP bindings, so that all of it survives a
    /// restart and replicas on one database share it. Without it everything lives in the
    /// process (no session store at all).
    pub fn stores(mut self, stores: &Stores) -> Self {
        self.stores = Some(stores.clone());
        self
    }

    /// Keeps the token records in `tokens` (an extension point: a custom or shared token
    /// store) instead of the stores' own.
    pub fn token_store(mut self, tokens: Arc<dyn TokenStore>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Replaces the options (default [`ServerOptions::default`]).
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
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

    /// Builds the host and the server: checks the app's schema, opens nothing lazily, and
    /// reads (or creates) the identity signing key in the stores.
    pub async fn build(mut self) -> Result<AgentServer<A>, BuildError> {
        if self.local_development {
            self.options.allow_anonymous = true;
            if !self.audit_given {
                self.audit = Arc::new(StderrAuditSink);
            }
        }
        if !self.options.allow_anonymous && self.resolver.is_none() {
            tracing::warn!(
                "/agent/mint can never succeed: anonymous identities are off \
                 (ServerOptions::allow_anonymous) and no identity resolver is set \
                 (AgentServerBuilder::identity_resolver); every mint answers 401. For local \
                 development use AgentServerBuilder::local_development()"
            );
        }
        let given = self.stores.is_some();
        let stores = self.stores.take().unwrap_or_else(Stores::in_memory);
        let durable = stores.is_durable();
        let host = if given {
            Host::with_store(self.app, self.config, self.audit, stores.sessions.clone())?
        } else {
            Host::with_config(self.app, self.config, self.audit)?
        };
        if given && self.options.identity_key.is_none() {
            self.options.identity_key = Some(stores.identity_key().await?);
        }
        let key = match &self.options.identity_key {
            Some(k) => k.clone(),
            None => IdentityKey::random(),
        };
        // A fleet's store (PostgreSQL) shares the limits between the replicas.
        let fleet =
            stores
                .budgets
                .clone()
                .filter(|_| given)
                .map(|budgets| crate::ops::FleetLimits {
                    rate: self.limiter.is_none().then(|| {
                        FleetLimiter::new("rate", self.options.rate_limit, budgets.clone())
                    }),
                    anonymous_mints: FleetLimiter::new(
                        "anonymous-mint",
                        self.options.anonymous_mint_rate,
                        budgets,
                    ),
                });
        let limiter = self
            .limiter
            .unwrap_or_else(|| Arc::new(GovernorRateLimiter::new(self.options.rate_limit)));
        let cors = crate::surface::cors::cors_layer(&self.options.cors_origins)?;
        // A page allowed to call the routes from another origin may also POST with the
        // identity cookie.
        let allowed_origins = self
            .options
            .allowed_origins
            .iter()
            .chain(&self.options.cors_origins)
            .cloned()
            .collect();
        let origin = OriginPolicy {
            trust_proxy: self.options.trust_proxy,
            tls: self.options.tls,
            allowed_origins,
        };
        let cookie = IdentityCookie::new(self.options.identity_cookie_name.clone(), key)?;
        let mut identity = Identity::new(cookie, host.config().clock.clone(), origin.clone())
            .with_allow_anonymous(self.options.allow_anonymous);
        if let Some(r) = self.resolver {
            identity = identity.with_resolver(r);
        }
        // In memory, idempotency answers and MCP bindings stay in the server's own maps.
        let (durable_idempotency, mcp_bindings) = match durable {
            true => (Some(stores.idempotency.clone()), Some(stores.mcp.clone())),
            false => (None, None),
        };
        #[cfg(not(feature = "mcp"))]
        let _ = mcp_bindings;
        let (revocations, _) = broadcast::channel(256);
        #[cfg(feature = "oauth")]
        let oauth = self
            .options
            .oauth
            .build(stores.oauth.clone())
            .map_err(ConfigError::InvalidOAuth)?
            .map(Arc::new);
        #[cfg(feature = "mcp")]
        let mcp = Arc::new(
            crate::surface::mcp::McpSessions::new(&self.options.mcp)
                .with_bindings(mcp_bindings.clone())
                .with_revocations(revocations.subscribe()),
        );
        #[cfg(feature = "fleet")]
        let replica_fleet = match &self.options.pairing.fleet_address {
            Some(address) => {
                let pairing = &self.options.pairing;
                let made = crate::engine::paired::fleet::Fleet::new(
                    address,
                    pairing.fleet_secret.as_deref(),
                    pairing.fleet_heartbeat,
                    stores.fleet_pool.clone(),
                );
                Some(Arc::new(
                    made.map_err(|e| BuildError::Fleet(e.to_string()))?,
                ))
            }
            None => None,
        };
        #[cfg(feature = "pairing")]
        #[allow(unused_mut)]
        let mut pairing = crate::ops::Pairing::new(
            self.options.pairing.clone(),
            host.config().budgets.log_entry_bytes,
        );
        #[cfg(feature = "fleet")]
        {
            pairing.fleet = replica_fleet.clone();
        }
        let state = ServerState::new(ServerFields {
            tokens: self.tokens.unwrap_or_else(|| stores.tokens.clone()),
            identity,
            limiter,
            anonymous_mints: GovernorRateLimiter::new(self.options.anonymous_mint_rate),
            fleet,
            auth_throttle: Default::default(),
            origin,
            idempotency: IdempotencyStore::new(host.config(), host.retained().clone()),
            durable_idempotency,
            durable_idempotency_swept: Default::default(),
            revocations,
            request_metrics: Arc::new(crate::telemetry::RequestMetrics::new(
                crate::ops::Operation::ALL.len(),
            )),
            draining: Default::default(),
            stopping: tokio::sync::watch::channel(false).0,
            #[cfg(feature = "pairing")]
            pairing,
            #[cfg(feature = "mcp")]
            mcp_bindings,
            #[cfg(feature = "oauth")]
            oauth,
            options: self.options,
            host,
        });
        #[cfg(feature = "fleet")]
        if let Some(replica) = replica_fleet {
            crate::ops::fleet::heartbeat::spawn(&state, replica);
        }
        Ok(AgentServer {
            state,
            cors,
            #[cfg(feature = "mcp")]
            mcp,
        })
    }
}

impl<A: App> AgentServer<A> {
    /// The agent surface as one `Router` (state already applied): LAP, the management and
    /// human routes, the console and `/agent/mcp`. Merge it into the app's.
    ///
    /// Every route but `/agent/mcp` and the probes answers 403 to a `Host` outside
    /// [`ServerOptions::allowed_hosts`] (`/agent/mcp` checks `mcp.allowed_hosts`; the probes
    /// `/agent/healthz` and `/agent/readyz` answer any `Host`, `docs/operations.md` §Health).
    pub fn router(&self) -> axum::Router {
        let state = &self.state;
        let allowed = AllowedHosts::new(&state.options().allowed_hosts);
        let router = crate::surface::lap::routes(state);
        #[cfg(feature = "console")]
        let router = router.merge(crate::surface::console::console_routes(state));
        #[cfg(feature = "pairing")]
        let router = router.merge(crate::surface::pairing::socket::ws_routes(state));
        #[cfg(feature = "oauth")]
        let router = router.merge(crate::surface::oauth::oauth_routes(state));
        let router = router.layer(HostCheckLayer::new(allowed, || {
            axum::response::IntoResponse::into_response(crate::ops::ApiError::forbidden(
                HOST_REFUSED_DETAIL,
            ))
        }));
        // The probes answer whatever the `Host`: an orchestrator asks on the pod's address.
        let router = router.merge(crate::surface::health::health_routes(state));
        // Replicas call each other at their fleet addresses, whatever the `Host`.
        #[cfg(feature = "fleet")]
        let router = match crate::surface::fleet::fleet_routes(state) {
            Some(fleet) => router.merge(fleet),
            None => router,
        };
        #[cfg(feature = "mcp")]
        let router = router.merge(crate::surface::mcp::endpoint::mcp_routes(
            state,
            self.mcp.clone(),
        ));
        // Outermost, so refusals (403, 429, 503) carry the CORS headers a page needs to read
        // them.
        match &self.cors {
            Some(cors) => router.layer(cors.clone()),
            None => router,
        }
    }

    /// A builder for `app`'s server, with every default.
    pub fn builder(app: A) -> AgentServerBuilder<A> {
        AgentServerBuilder {
            app,
            config: HostConfig::default(),
            audit: Arc::new(TracingAuditSink),
            local_development: false,
            audit_given: false,
            stores: None,
            tokens: None,
            options: ServerOptions::default(),
            limiter: None,
            resolver: None,
        }
    }

    /// The web console's URL on a server listening at `local`: an unspecified address
    /// (`0.0.0.0`, `::`) is shown as the loopback one, which the default `allowed_hosts`
    /// accept.
    pub fn console_url(&self, local: std::net::SocketAddr) -> String {
        let ip = match local.ip() {
            ip if ip.is_unspecified() && ip.is_ipv4() => std::net::Ipv4Addr::LOCALHOST.into(),
            ip if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
            ip => ip,
        };
        format!(
            "http://{}/agent/console",
            std::net::SocketAddr::new(ip, local.port())
        )
    }

    /// The host.
    pub fn host(&self) -> &Host<A> {
        self.state.host()
    }

    /// The shared state the operations read (`crate::testing` replays through it).
    pub(crate) fn state(&self) -> &ServerState<A> {
        &self.state
    }

    /// Marks the server as draining: from now on `GET /agent/readyz` answers 503 with
    /// `"draining": true`, so that a load balancer stops sending it new traffic, while every
    /// request keeps being served. Call it first when the process is asked to stop. It cannot
    /// be undone.
    pub fn start_draining(&self) {
        self.state.start_draining();
    }

    /// Whether [`Self::start_draining`] was called.
    pub fn is_draining(&self) -> bool {
        self.state.is_draining()
    }

    /// Begins a graceful shutdown (`docs/operations.md` §Shutdown): draining (readiness 503),
    /// long polls (`/wait`, `/confirm-result`, `wait_for_change`, `get_confirm_result`) answer
    /// 503 `shutting-down` with `Retry-After: 1`, the human event streams end with a
    /// `shutting-down` event that asks the browser to reconnect in a second, paired sockets
    /// close with 1001 (going away, so the app resumes on the next instance), legacy MCP
    /// sessions' transports close (a durable store keeps their bindings: the client's next
    /// request is restored on the next instance), and mints and new MCP sessions are refused
    /// with 503 `shutting-down`. Calls in flight (a dispatch, a
    /// decision) run to their end. Call it when the stop signal comes, before
    /// [`Serve::with_graceful_shutdown`](crate::Serve::with_graceful_shutdown) waits for the
    /// connections, then [`Self::finish_shutdown`].
    pub fn begin_shutdown(&self) {
        self.state.begin_stopping();
        // Legacy MCP sessions' event streams end with their transport; a durable store keeps
        // their bindings for the next instance to restore.
        #[cfg(feature = "mcp")]
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let sessions = self.mcp.clone();
            runtime.spawn(async move { sessions.close_transports().await });
        }
    }

    /// Ends a shutdown once the connections are done: writes the token touches the store holds
    /// back, waits for the audit sink to store every entry, and closes the store (its
    /// connections and PostgreSQL's change listener). An error says which write failed; the
    /// rest is still done.
    pub async fn finish_shutdown(&self) -> Result<(), StoreError> {
        self.state.begin_stopping();
        let flushed = self.state.tokens().flush().await;
        if let Err(e) = &flushed {
            tracing::error!("shutdown: the token touches were not all written: {e}");
        }
        self.state.audit_sink().flush().await;
        if let Some(store) = self.state.host().session_store() {
            store.close().await;
        }
        flushed
    }

    /// The token store.
    pub fn tokens(&self) -> &Arc<dyn TokenStore> {
        self.state.tokens()
    }

    /// The options.
    pub fn options(&self) -> &ServerOptions {
        self.state.options()
    }

    /// The live sessions of `/agent/mcp`.
    #[cfg(feature = "mcp")]
    pub fn mcp_sessions(&self) -> &Arc<crate::surface::mcp::McpSessions> {
        &self.mcp
    }
}
