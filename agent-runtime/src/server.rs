//! The agent server, at the top of the crate: [`AgentServerBuilder`] builds the shared state
//! the operations read (`ops::ServerState`) and [`AgentServer::router`] mounts every surface
//! around it (LAP and the management and human routes, `/agent/mcp`, `/agent/ws`, the console)
//! as one axum `Router` for the app to merge into its own. Nothing below imports this module.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::app::App;
use crate::engine::host::Host;
use crate::ops::{IdempotencyStore, ServerFields, ServerOptions, ServerState};
use crate::security::{
    AllowedHosts, ConfigError, GovernorRateLimiter, Identity, IdentityCookie, IdentityKey,
    IdentityResolver, InMemoryTokenStore, OriginPolicy, RateLimiter, TokenStore,
    HOST_REFUSED_DETAIL,
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

/// Builds an [`AgentServer`]; every dependency has an in-memory default.
pub struct AgentServerBuilder<A: App> {
    host: Host<A>,
    options: ServerOptions,
    tokens: Option<Arc<dyn TokenStore>>,
    idempotency: Option<Arc<dyn crate::engine::store::IdempotencyRecords>>,
    mcp_bindings: Option<Arc<dyn crate::engine::store::McpBindings>>,
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
    /// [`Stores::identity_key`](crate::engine::store::Stores::identity_key)).
    pub fn stores(mut self, stores: &crate::engine::store::Stores) -> Self {
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
        let mut identity = Identity::new(cookie, self.host.config().clock.clone(), origin.clone())
            .with_allow_anonymous(self.options.allow_anonymous);
        if let Some(r) = self.resolver {
            identity = identity.with_resolver(r);
        }
        let (revocations, _) = broadcast::channel(256);
        #[cfg(feature = "mcp")]
        let mcp = Arc::new(
            crate::surface::mcp::McpSessions::new(&self.options.mcp)
                .with_bindings(self.mcp_bindings.clone())
                .with_revocations(revocations.subscribe()),
        );
        let state = ServerState::new(ServerFields {
            tokens: self
                .tokens
                .unwrap_or_else(|| Arc::new(InMemoryTokenStore::new())),
            identity,
            limiter,
            anonymous_mints: GovernorRateLimiter::new(self.options.anonymous_mint_rate),
            auth_throttle: Default::default(),
            origin,
            idempotency: IdempotencyStore::new(self.host.config()),
            durable_idempotency: self.idempotency,
            durable_idempotency_swept: Default::default(),
            revocations,
            #[cfg(feature = "pairing")]
            pairing: crate::ops::Pairing::new(
                self.options.pairing.clone(),
                self.host.config().budgets.log_entry_bytes,
            ),
            #[cfg(feature = "mcp")]
            mcp_bindings: self.mcp_bindings,
            options: self.options,
            host: self.host,
        });
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
    /// Every route but `/agent/mcp` answers 403 to a `Host` outside
    /// [`ServerOptions::allowed_hosts`] (`/agent/mcp` checks `mcp.allowed_hosts`).
    pub fn router(&self) -> axum::Router {
        let state = &self.state;
        let allowed = AllowedHosts::new(&state.options().allowed_hosts);
        let router = crate::surface::lap::routes(state);
        #[cfg(feature = "console")]
        let router = router.merge(crate::surface::console::console_routes(state));
        #[cfg(feature = "pairing")]
        let router = router.merge(crate::surface::pairing::socket::ws_routes(state));
        let router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let allowed = allowed.clone();
                async move {
                    if allowed.allows(request.headers(), request.uri().authority()) {
                        next.run(request).await
                    } else {
                        axum::response::IntoResponse::into_response(
                            crate::ops::ApiError::forbidden(HOST_REFUSED_DETAIL),
                        )
                    }
                }
            },
        ));
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
        self.state.host()
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
