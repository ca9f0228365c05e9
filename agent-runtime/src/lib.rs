//! The runtime of the agent surface: everything that runs.
//!
//! An app written in The Elm Architecture (a [`App::State`], a `Msg` enum with agent tags in
//! its doc comments deriving [`AgentMsg`], an [`App::update`] returning effects) is hosted by a
//! [`Host`] (its sessions) and served by an [`AgentServer`]: LAP under `/agent/lap/v1`, MCP at
//! `/agent/mcp` (feature `mcp`), the management and human routes, the console page (feature
//! `console`), `/agent/ws` for apps that run elsewhere and pair with the server (feature
//! `pairing`, [`pairing`]) and the OpenAPI document of LAP. Every operation is declared once ([`Operation`])
//! and runs through one gate whatever the surface.
//!
//! # Embedding
//!
//! ```
//! use agent_runtime::app::{App, EffectError};
//! use agent_runtime::session::EffectContext;
//! use agent_runtime::{AgentMsg, AgentServer, Host};
//! use std::future::IntoFuture as _;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
//! #[serde(tag = "type", rename_all = "camelCase")]
//! #[agent(crate = "agent_runtime::agent_schema")]
//! enum Msg {
//!     /// @intent("add one")
//!     Inc,
//!     /// @intent("start again") @requiresConfirm
//!     Reset,
//! }
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! struct Counter {
//!     count: i64,
//! }
//!
//! struct CounterApp;
//!
//! impl App for CounterApp {
//!     type State = Counter;
//!     type Msg = Msg;
//!     type Effect = ();
//!     fn name(&self) -> &str {
//!         "counter"
//!     }
//!     fn version(&self) -> &str {
//!         "1.0.0"
//!     }
//!     fn init(&self) -> (Counter, Vec<()>) {
//!         (Counter { count: 0 }, Vec::new())
//!     }
//!     fn update(&self, state: &mut Counter, msg: Msg) -> Vec<()> {
//!         match msg {
//!             Msg::Inc => state.count += 1,
//!             Msg::Reset => state.count = 0,
//!         }
//!         Vec::new()
//!     }
//!     fn run_effect(
//!         &self,
//!         _: (),
//!         _: EffectContext<Msg>,
//!     ) -> impl std::future::Future<Output = Result<(), EffectError>> + Send + 'static {
//!         async { Ok(()) }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let host = Host::new(CounterApp)?; // checks the schema once, at start-up
//! let agent = AgentServer::builder(host).build()?; // in-memory defaults for everything
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "my app" }))
//!     .merge(agent.router()); // /agent/... ; everything else is yours
//! // Header-read, body-read and idle timeouts, TCP_NODELAY and the peer address
//! // (`ConnectInfo<SocketAddr>`, read for rate limits): see `agent_runtime::serve`.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let serve = agent_runtime::serve(listener, app).into_future();
//! # let serve = async move { tokio::select! { r = serve => r, _ = tokio::task::yield_now() => Ok(()) } };
//! serve.await?;
//! # Ok(())
//! # }
//! ```
//!
//! Tokens, identities, rate limits and the audit trail are extension points
//! ([`security::TokenStore`], [`security::IdentityResolver`], [`security::RateLimiter`],
//! [`security::AuditSink`]) whose methods return futures, so an implementation can await a
//! database; [`AgentServerBuilder`] takes them.

#![warn(missing_docs)]

pub mod affordances;
pub mod app;
pub(crate) mod catalog;
pub mod cel_eval;
pub mod clock;
pub mod config;
pub mod diff;
mod error;
mod gates;
pub mod host;
pub(crate) mod lap;
#[cfg(feature = "mcp")]
pub mod mcp;
mod ops;
#[cfg(any(feature = "pairing", feature = "pairing-client"))]
pub mod pairing;
pub(crate) mod reads;
pub mod security;
pub mod serve;
mod server;
pub mod session;
pub(crate) mod snapshot;
pub mod store;
pub mod tracked;
pub mod validate;

pub use agent_derive::AgentMsg;
pub use agent_schema::{self, AgentContext, AgentDocs, DispatchMode, MessageAnnotations};
pub use app::App;
pub use config::MAX_BODY_BYTES;
pub use config::{DispatchPolicy, HostConfig};
pub use error::ApiError;
pub use host::Host;
pub use ops::{Operation, IDEMPOTENCY_WINDOW_MS};
pub use serve::{serve, Serve};
pub use server::{AgentServer, AgentServerBuilder, ServerOptions, DEFAULT_RATE_LIMIT};
pub use session::Session;
pub use tracked::{TrackedMap, TrackedVec};
