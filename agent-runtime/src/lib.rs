//! The runtime of the agent surface: everything that runs.
//!
//! An app written in The Elm Architecture (a [`State`](app::App::State), a `Msg` enum with agent
//! tags in its doc comments deriving [`AgentMsg`], an [`update`](app::App::update) returning
//! effects) is hosted by a [`Host`] (its sessions) and served by an [`AgentServer`]: LAP under
//! `/agent/lap/v1`, MCP at `/agent/mcp` (feature `mcp`), the management and human routes, the
//! console page (feature `console`), `/agent/ws` for apps that run elsewhere and pair with the
//! server (feature `pairing`) and the OpenAPI document of LAP. Every operation is declared once
//! ([`Operation`]) and runs through one gate whatever the surface.
//!
//! # Embedding
//!
//! ```
//! use tea_agent_runtime::app::{App, EffectContext, EffectError};
//! use tea_agent_runtime::{AgentMsg, AgentServer};
//! use std::future::IntoFuture as _;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
//! #[serde(tag = "type", rename_all = "camelCase")]
//! #[agent(crate = "tea_agent_runtime::tea_agent_schema")]
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
//! // Checks the schema once, at start-up; in-memory defaults for everything (add
//! // `.stores(&Stores::open("app.db").await?)` for durable sessions and tokens).
//! let agent = AgentServer::builder(CounterApp).build().await?;
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "my app" }))
//!     .merge(agent.router()); // /agent/... ; everything else is yours
//! // Header-read, body-read and idle timeouts, TCP_NODELAY and the peer address
//! // (`ConnectInfo<SocketAddr>`, read for rate limits): see `tea_agent_runtime::serve`.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let serve = tea_agent_runtime::serve(listener, app).into_future();
//! # let serve = async move { tokio::select! { r = serve => r, _ = tokio::task::yield_now() => Ok(()) } };
//! serve.await?;
//! # Ok(())
//! # }
//! ```
//!
//! Tokens, identities, rate limits and the audit trail are extension points
//! ([`store::TokenStore`], [`security::IdentityResolver`], [`security::RateLimiter`],
//! [`security::AuditSink`]) whose methods return futures, so an implementation can await a
//! database; [`AgentServerBuilder`] takes them.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

// The layers, bottom up (`docs/architecture.md`): the foundation (`app`, `clock`, `config`,
// `telemetry`),
// the pure algorithms (`algo`), the security building blocks (`security`), the session engine
// and its stores (`engine`), the operation core (`ops`), the surfaces (`surface`) and, at the
// top, the server that mounts them (`server`, `listener`). Imports point down only.
mod algo;
pub mod app;
pub mod clock;
pub mod config;
mod engine;
mod listener;
mod ops;
pub mod security;
mod server;
mod surface;
pub mod telemetry;
pub mod testing;

pub use algo::catalog::describe;
pub use algo::tracked::{TrackedMap, TrackedVec};
pub use engine::host::Host;
pub use engine::session::Session;
pub use listener::{serve, shutdown_signal, Serve};
pub use ops::{ApiError, Operation, ServerOptions, DEFAULT_RATE_LIMIT, IDEMPOTENCY_WINDOW};
pub use server::{AgentServer, AgentServerBuilder, BuildError};
pub use tea_agent_derive::AgentMsg;
pub use tea_agent_schema::{self, AgentContext, AgentDocs, DispatchMode, MessageAnnotations};

// The public modules below are facades: each re-exports what an embedder uses from the
// layer where it lives (`docs/architecture.md`, public API). Nothing inside the crate imports
// through them.

/// A hosted session: one app instance, its dispatch, confirmations, reads and events.
pub mod session {
    pub use crate::engine::session::{
        Decided, DispatchOptions, EditedApprovalError, LastOutcome, Published, RecordedCall,
        RecordedDecision, SessionError, SessionEvent, SessionHold, Subscription, Transcript,
        TranscriptApp, TranscriptEntry, UndoError, Undone, TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION,
    };
}

/// The table of sessions of a host.
pub mod host {
    pub use crate::algo::catalog::{Catalog, CatalogError};
    pub use crate::engine::host::CreateSessionError;
}

/// Session stores: in memory, SQLite (feature `sqlite`), PostgreSQL (feature `postgres`), and
/// the traits a store of one's own implements (`docs/stores.md`).
pub mod store {
    #[cfg(feature = "sqlite")]
    pub use crate::engine::store::SqliteStore;
    pub use crate::engine::store::{
        ChangesListener, CommitKey, CommitWrite, Committed, ConfirmsSwap, IdempotencyEntry,
        IdempotencyRecords, InMemoryTokenStore, LogState, McpBinding, McpBindings, MemoryStore,
        SessionChanges, SessionRecord, SessionStore, SigningKeys, StoreError, StoreKind,
        StoreResult, Stores, TokenStore,
    };
    #[cfg(feature = "postgres")]
    pub use crate::engine::store::{PostgresOptions, PostgresStore, CHANGES_CHANNEL};
}

/// Payload validation (`docs/semantics.md` §2).
pub mod validate {
    pub use crate::algo::validate::{Validator, ValidatorError};
}

/// The affordance lister (`docs/semantics.md` §4).
pub mod affordances {
    pub use crate::algo::affordances::Affordances;
}

/// CEL evaluation of `@routeGated` and `@validates` (`docs/semantics.md` §3).
pub mod cel_eval {
    pub use crate::algo::cel_eval::{
        check_syntax, evaluate_gate, evaluate_validates, json_to_cel, CompiledPredicate, GateScope,
        PredicateCache,
    };
}

/// The JSON Patch diff (`docs/semantics.md` §1).
pub mod diff {
    pub use crate::algo::diff::{diff, PatchOp};
}

/// MCP: `/agent/mcp`'s options and live sessions, and the stdio bridge (feature `bridge`;
/// `docs/mcp.md`).
#[cfg(feature = "mcp")]
pub mod mcp {
    /// The `agent-bridge` stdio server.
    #[cfg(feature = "bridge")]
    pub mod bridge {
        pub use crate::surface::mcp::bridge::{serve_stdio, serve_stdio_bound};
    }
    pub use crate::surface::mcp::{AtCapacity, BoundToken, McpOptions, McpSessions, MCP_PATH};
}

/// OAuth 2.1 for `/agent/mcp` (feature `oauth`, `docs/authorization.md`): the options
/// ([`ServerOptions`]'s `oauth`) and the clients configured in code.
#[cfg(feature = "oauth")]
pub mod oauth {
    pub use crate::ops::OAuthOptions;
    pub use crate::security::oauth::OAuthClient;
}

/// Pairing (`docs/pairing.md`): the server's options for `/agent/ws` (and for a fleet of
/// replicas, feature `fleet`), and the client that pairs an app hosted in this process with a
/// server (feature `pairing-client`).
#[cfg(any(feature = "pairing", feature = "pairing-client"))]
pub mod pairing {
    #[cfg(feature = "pairing")]
    pub use crate::ops::PairingOptions;
    #[cfg(feature = "pairing-client")]
    pub use crate::surface::pairing::client;
}
