//! [`ServerBuilder`]: one way for the tests to set up a server in this process (the app, its
//! host config, the server options, the stores, the audit and token stores), instead of a
//! `server()` of their own in each test file. A server in its own process is
//! [`crate::process::ServerProcess`].
//!
//! The runtime's option structs are `#[non_exhaustive]`: the builder takes closures that set
//! fields on the defaults (`.options(|o| o.tls = true)`), never struct literals.
//!
//! ```ignore
//! let t = TestServer::builder(Counter).anonymous().rate_limit("3/minute").start().await;
//! let (t, task) = TestServer::builder(Counter).stores(&stores).start_stoppable().await;
//! ```

use std::sync::Arc;

use tea_agent_runtime::app::App;
use tea_agent_runtime::config::HostConfig;
#[cfg(feature = "full")]
use tea_agent_runtime::pairing::PairingOptions;
use tea_agent_runtime::security::{AuditSink, ConfigError, TracingAuditSink};
use tea_agent_runtime::store::{SessionStore, Stores, TokenStore};
use tea_agent_runtime::{AgentServer, AgentServerBuilder, BuildError, ServerOptions};

use crate::{header_identity, serve, serve_stoppable, TestServer};

/// A server under construction: see [`TestServer::builder`].
pub struct ServerBuilder<A: App> {
    app: A,
    config: HostConfig,
    options: ServerOptions,
    audit: Arc<dyn AuditSink>,
    stores: Option<Stores>,
    sessions: Option<Arc<dyn SessionStore>>,
    tokens: Option<Arc<dyn TokenStore>>,
    header_identity: bool,
}

impl<A: App> TestServer<A> {
    /// A server of `app` to build: default host config and server options, everything in
    /// memory, audit to the log, and the test identity resolver ([`crate::USER_HEADER`]).
    pub fn builder(app: A) -> ServerBuilder<A> {
        ServerBuilder {
            app,
            config: HostConfig::default(),
            options: ServerOptions::default(),
            audit: Arc::new(TracingAuditSink),
            stores: None,
            sessions: None,
            tokens: None,
            header_identity: true,
        }
    }
}

impl<A: App> ServerBuilder<A> {
    /// Changes the host's config (budgets, clock, policy…).
    pub fn config(mut self, change: impl FnOnce(&mut HostConfig)) -> Self {
        change(&mut self.config);
        self
    }

    /// Changes the server options.
    pub fn options(mut self, change: impl FnOnce(&mut ServerOptions)) -> Self {
        change(&mut self.options);
        self
    }

    /// Changes the pairing options (`options.pairing`).
    #[cfg(feature = "full")]
    pub fn pairing(mut self, change: impl FnOnce(&mut PairingOptions)) -> Self {
        change(&mut self.options.pairing);
        self
    }

    /// Lets callers without identity mint (the identity cookie).
    pub fn anonymous(self) -> Self {
        self.options(|o| o.allow_anonymous = true)
    }

    /// The rate limit of the agent routes (`"100000/minute"`).
    pub fn rate_limit(self, spec: &str) -> Self {
        let limit = spec.parse().expect("rate limit");
        self.options(|o| o.rate_limit = limit)
    }

    /// Audits to `sink` (a [`tea_agent_runtime::security::MemoryAuditSink`] to read back).
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = sink;
        self
    }

    /// Keeps the sessions, tokens and the rest in `stores` (SQLite, PostgreSQL, memory).
    pub fn stores(mut self, stores: &Stores) -> Self {
        self.stores = Some(stores.clone());
        self
    }

    /// Keeps the sessions of [`Self::stores`] in `sessions` (a wrapper of its own, say).
    pub fn session_store(mut self, sessions: Arc<dyn SessionStore>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Uses `tokens` as the token store (instead of [`Self::stores`]' one, if both).
    pub fn token_store(mut self, tokens: Arc<dyn TokenStore>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Without the test identity resolver: only the identity cookie says who calls.
    pub fn cookie_identity_only(mut self) -> Self {
        self.header_identity = false;
        self
    }

    /// The runtime's builder, every setting applied (for what this one does not cover).
    pub fn into_agent_builder(self) -> AgentServerBuilder<A> {
        let mut builder = AgentServer::builder(self.app)
            .host_config(self.config)
            .audit_sink(self.audit)
            .options(self.options);
        if let Some(mut stores) = self.stores {
            if let Some(sessions) = self.sessions {
                stores.sessions = sessions;
            }
            builder = builder.stores(&stores);
        }
        if let Some(tokens) = self.tokens {
            builder = builder.token_store(tokens);
        }
        match self.header_identity {
            true => builder.identity_resolver(header_identity()),
            false => builder,
        }
    }

    /// Builds the server, or the options' configuration error.
    pub async fn try_build(self) -> Result<AgentServer<A>, ConfigError> {
        match self.into_agent_builder().build().await {
            Ok(server) => Ok(server),
            Err(BuildError::Options(e)) => Err(e),
            Err(e) => panic!("the test server does not build: {e}"),
        }
    }

    /// Builds the server.
    pub async fn build(self) -> AgentServer<A> {
        self.try_build().await.expect("server config")
    }

    /// Builds and serves the server on a free loopback port.
    pub async fn start(self) -> TestServer<A> {
        serve(self.build().await).await
    }

    /// Like [`Self::start`], with the task serving it: aborting the task and dropping the
    /// server stops it (a restart within one process).
    pub async fn start_stoppable(self) -> (TestServer<A>, tokio::task::JoinHandle<()>) {
        serve_stoppable(self.build().await).await
    }
}
