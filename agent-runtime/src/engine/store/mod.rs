//! Durable sessions: where tokens, sessions (state, sequence number, schema hash, pending
//! confirmations, the activity-log tail), idempotency answers, MCP session bindings and the
//! identity signing key live.
//!
//! Three implementations of the same traits:
//!
//! - in memory ([`MemoryStore`] with [`InMemoryTokenStore`]): the library default; everything
//!   goes with the process;
//! - SQLite (`SqliteStore`, feature `sqlite`): one file, for a single server that restarts
//!   (one live server process per file: it caches token records and is the only writer);
//! - PostgreSQL (`PostgresStore`, feature `postgres`; TLS with `postgres-tls`): several
//!   replicas sharing one database.
//!
//! [`Stores`] bundles one implementation behind the trait objects the host and the server
//! use; [`Stores::open`] picks one from a command-line style spec.

pub(crate) mod log;
mod measured;
mod memory;
mod records;
mod traits;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql;
#[cfg(all(feature = "oauth", any(feature = "sqlite", feature = "postgres")))]
pub(crate) mod sql_oauth;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql_sessions;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql_tokens;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql_values;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod tables;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod token_cache;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod touches;

#[cfg(feature = "fleet")]
pub(crate) mod fleet_leases;
#[cfg(feature = "fleet")]
pub(crate) mod fleet_proposals;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_budgets;
#[cfg(feature = "postgres")]
mod postgres_options;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_writer;
#[cfg(all(feature = "sqlite", test))]
mod sqlite_writer_tests;
#[cfg(feature = "sqlite")]
mod sqlite_writer_thread;

use std::sync::Arc;

pub use crate::security::store_error::{StoreError, StoreResult};
pub use crate::security::token_store::{InMemoryTokenStore, TokenStore};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresStore, CHANGES_CHANNEL};
#[cfg(feature = "postgres")]
pub use postgres_options::PostgresOptions;
pub use records::{
    CommitKey, CommitWrite, Committed, ConfirmsSwap, IdempotencyEntry, LogState, McpBinding,
    SessionChanges, SessionRecord,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use traits::{ChangesListener, IdempotencyRecords, McpBindings, SessionStore, SigningKeys};

use crate::security::IdentityKey;
pub(crate) use measured::Measured;

/// A snapshot is written at the latest every this many commits: the log holds at most this
/// many patches after the newest snapshot (`docs/stores.md` §The commit log).
pub(crate) const SNAPSHOT_EVERY: u64 = 128;

/// A snapshot is written before the patches logged after the newest one pass this many bytes.
pub(crate) const SNAPSHOT_BYTES: u64 = 1 << 20;

/// Whether a commit at `seq` of a patch of `patch_bytes`, on a log at `log`, needs a snapshot.
pub(crate) fn snapshot_due(log: LogState, seq: u64, patch_bytes: u64) -> bool {
    seq.saturating_sub(log.snapshot_seq) > SNAPSHOT_EVERY
        || log.log_bytes.saturating_add(patch_bytes) > SNAPSHOT_BYTES
}

/// The name under which the identity cookie's signing key is stored.
pub(crate) const IDENTITY_KEY_NAME: &str = "identity-cookie";

/// The name under which the identity cookie's previous signing key is stored (the current one
/// until the first rotation).
pub(crate) const PREVIOUS_IDENTITY_KEY_NAME: &str = "identity-cookie-previous";

/// A signing key read from the store, or why it cannot sign.
fn stored_key(bytes: Vec<u8>) -> Result<IdentityKey, StoreError> {
    IdentityKey::new(bytes)
        .map_err(|e| StoreError::Database(format!("the stored signing key is unusable: {e}")))
}

/// The shared rate-limit buckets of `store` when it is this crate's PostgreSQL store (the
/// trait is the crate's own, so a store of the caller's keeps the limits in the process).
fn budgets_of<S: Send + Sync + 'static>(
    store: Arc<S>,
) -> Option<Arc<dyn crate::security::RateBudgets>> {
    let any: Arc<dyn std::any::Any + Send + Sync> = store;
    #[cfg(feature = "postgres")]
    if let Ok(postgres) = any.downcast::<PostgresStore>() {
        return Some(postgres);
    }
    #[cfg(not(feature = "postgres"))]
    let _ = any;
    None
}

/// The OAuth records of `store` when it is one of this crate's SQL stores, measured. The
/// OAuth store trait is the crate's own (its records are internal), so a store of the
/// caller's cannot implement it: the two known types are recognised instead, and any other
/// keeps the OAuth records in the server's memory.
#[cfg(feature = "oauth")]
fn oauth_store_of<S: Send + Sync + 'static>(
    store: Arc<S>,
    kind: StoreKind,
) -> Option<Arc<dyn crate::security::oauth::OAuthStore>> {
    let any: Arc<dyn std::any::Any + Send + Sync> = store;
    #[cfg(feature = "sqlite")]
    let any = match any.downcast::<SqliteStore>() {
        Ok(sqlite) => return Some(Measured::new(sqlite, kind)),
        Err(other) => other,
    };
    #[cfg(feature = "postgres")]
    let any = match any.downcast::<PostgresStore>() {
        Ok(postgres) => return Some(Measured::new(postgres, kind)),
        Err(other) => other,
    };
    let _ = kind;
    let _ = any;
    None
}

/// The pool of a PostgreSQL store, for the sockets' leases of a fleet (feature `fleet`).
#[cfg(feature = "fleet")]
fn fleet_pool_of<S: Send + Sync + 'static>(store: &Arc<S>) -> Option<sqlx::PgPool> {
    let any: &dyn std::any::Any = &**store;
    any.downcast_ref::<PostgresStore>()
        .map(|pg| pg.pool().clone())
}

/// Which implementation a [`Stores`] bundle holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// In memory: nothing survives the process.
    Memory,
    /// One SQLite file.
    Sqlite,
    /// A PostgreSQL database shared by replicas.
    Postgres,
}

/// One store implementation behind the traits the host and the server use, each call measured
/// (an `agent.store` span, `docs/operations.md` §Metrics and traces). Cheap to clone.
#[derive(Clone)]
pub struct Stores {
    /// Token records (hashes and status).
    pub tokens: Arc<dyn TokenStore>,
    /// Sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// Idempotency answers.
    pub idempotency: Arc<dyn IdempotencyRecords>,
    /// MCP session bindings.
    pub mcp: Arc<dyn McpBindings>,
    /// Signing keys.
    pub keys: Arc<dyn SigningKeys>,
    /// Which implementation this is.
    pub kind: StoreKind,
    /// The OAuth records (feature `oauth`), when the implementation keeps them: the SQLite
    /// and PostgreSQL stores do; `None` keeps them in the server's memory.
    #[cfg(feature = "oauth")]
    pub(crate) oauth: Option<Arc<dyn crate::security::oauth::OAuthStore>>,
    /// The rate limits' shared buckets, when the store is a fleet's (PostgreSQL):
    /// `docs/stores.md` §Limits across replicas. `None` keeps the limits in the process.
    pub(crate) budgets: Option<Arc<dyn crate::security::RateBudgets>>,
    /// The PostgreSQL pool a fleet of replicas shares (feature `fleet`): the sockets' leases
    /// live there (`fleet_leases`); `None` for any other store.
    #[cfg(feature = "fleet")]
    pub(crate) fleet_pool: Option<sqlx::PgPool>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Default for Stores {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl Stores {
    /// The in-memory stores (the library default).
    pub fn in_memory() -> Self {
        let store = Arc::new(MemoryStore::new());
        let measured = Measured::new(store.clone(), StoreKind::Memory);
        Stores {
            tokens: Measured::new(Arc::new(InMemoryTokenStore::new()), StoreKind::Memory),
            sessions: measured.clone(),
            idempotency: measured.clone(),
            mcp: measured,
            keys: store,
            kind: StoreKind::Memory,
            #[cfg(feature = "oauth")]
            oauth: None,
            budgets: None,
            #[cfg(feature = "fleet")]
            fleet_pool: None,
        }
    }

    /// One value implementing every trait, shared by all of them.
    pub fn from_store<S>(store: S, kind: StoreKind) -> Self
    where
        S: TokenStore + SessionStore + IdempotencyRecords + McpBindings + SigningKeys + 'static,
    {
        let store = Arc::new(store);
        let measured = Measured::new(store.clone(), kind);
        Stores {
            tokens: measured.clone(),
            sessions: measured.clone(),
            idempotency: measured.clone(),
            mcp: measured,
            #[cfg(feature = "oauth")]
            oauth: oauth_store_of(store.clone(), kind),
            budgets: budgets_of(store.clone()),
            #[cfg(feature = "fleet")]
            fleet_pool: fleet_pool_of(&store),
            keys: store,
            kind,
        }
    }

    /// Opens the store `spec` names: `memory`, a `postgres://` or `postgresql://` URL (the
    /// default `PostgresOptions`; other options, or a pool of the caller's, through
    /// `PostgresStore::open_with` or `PostgresStore::from_pool` and [`Stores::from_store`]), a
    /// `sqlite:` URL, or else the path of a SQLite file (created when missing).
    pub async fn open(spec: &str) -> Result<Self, StoreError> {
        if spec == "memory" {
            return Ok(Self::in_memory());
        }
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            #[cfg(feature = "postgres")]
            return Ok(Self::from_store(
                PostgresStore::open(spec).await?,
                StoreKind::Postgres,
            ));
            #[cfg(not(feature = "postgres"))]
            return Err(StoreError::Unsupported(
                "this build has no PostgreSQL store (cargo feature `postgres`)".into(),
            ));
        }
        #[cfg(feature = "sqlite")]
        {
            let store = if spec.starts_with("sqlite:") {
                SqliteStore::open_url(spec).await?
            } else {
                SqliteStore::open(spec).await?
            };
            Ok(Self::from_store(store, StoreKind::Sqlite))
        }
        #[cfg(not(feature = "sqlite"))]
        Err(StoreError::Unsupported(format!(
            "this build has no SQLite store (cargo feature `sqlite`) for {spec:?}"
        )))
    }

    /// Whether what is written survives the process.
    pub fn is_durable(&self) -> bool {
        self.kind != StoreKind::Memory
    }

    /// The identity cookie's signing key: the one stored, or a new random one stored now
    /// (every replica on the same database gets the same key), still accepting the cookies of
    /// the key it replaced at the last [`Stores::rotate_identity_key`].
    pub async fn identity_key(&self) -> Result<IdentityKey, StoreError> {
        let candidate = IdentityKey::random().as_bytes().to_vec();
        let current = self.keys.signing_key(IDENTITY_KEY_NAME, candidate).await?;
        let previous = self
            .keys
            .signing_key(PREVIOUS_IDENTITY_KEY_NAME, current.clone())
            .await?;
        Ok(stored_key(current)?.with_previous([stored_key(previous)?]))
    }

    /// Rotates the identity cookie's signing key: the stored key becomes the previous one (its
    /// cookies are still accepted until they expire, 30 days) and a new random key signs from
    /// now on. Servers take it when built again from [`Stores::identity_key`]; until then they
    /// sign with the old key, which the rebuilt ones still accept. Only one previous key is
    /// kept: a second rotation refuses the cookies of the key before, so rotate again only
    /// after every replica was rebuilt (and 30 days later, if those cookies must keep working).
    pub async fn rotate_identity_key(&self) -> Result<(), StoreError> {
        let current = self.identity_key().await?.as_bytes().to_vec();
        self.keys
            .set_signing_key(PREVIOUS_IDENTITY_KEY_NAME, current)
            .await?;
        let fresh = IdentityKey::random().as_bytes().to_vec();
        self.keys.set_signing_key(IDENTITY_KEY_NAME, fresh).await
    }
}
