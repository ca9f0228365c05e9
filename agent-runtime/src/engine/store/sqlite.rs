//! The SQLite store: one file, the embedded default for a single server (feature `sqlite`).
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a commit that returned survives
//! the process being killed; only a power loss or an OS crash may lose the newest commits.
//!
//! One server process owns the file: it caches token records (every change to them is its
//! own) and writes through one connection on a thread of its own, behind a bounded queue
//! ([`SqliteWriter`]; SQLite lets one writer in at a time anyway); reads use a small sqlx pool
//! (WAL readers do not block the writer). Two live servers on one file are not supported: the second would not see the
//! first's revocations. Several replicas use PostgreSQL.

use std::path::Path;
use std::str::FromStr as _;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::sql::impl_sql_store;
use super::sqlite_writer::SqliteWriter;
use super::tables::{is_current, migrate, tables};
use super::StoreError;

/// The tables, created when missing.
const SCHEMA: &str = tables!("BLOB");

/// A store in one SQLite file, for one server process. Cheap to clone (clones share the
/// connections and the token cache).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Reads.
    pool: sqlx::SqlitePool,
    /// Writes.
    writer: SqliteWriter,
    touches: std::sync::Arc<super::touches::Touches>,
    /// Token records, cached: this process is the file's only writer.
    token_cache: Option<std::sync::Arc<super::token_cache::TokenCache>>,
}

impl SqliteStore {
    /// Not shared with other processes: no MCP deletes to announce
    /// ([`McpBindings::deleted`](crate::engine::store::McpBindings::deleted)).
    fn mcp_deletes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// Opens (creating when missing) the database file at `path` and its tables.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true);
        Self::connect(options).await
    }

    /// Opens a `sqlite:` URL (`sqlite://file.db`, `sqlite::memory:`).
    pub async fn open_url(url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)?.create_if_missing(true);
        Self::connect(options).await
    }

    async fn connect(options: SqliteConnectOptions) -> Result<Self, StoreError> {
        let options = options
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10));
        // No ping before each use: a connection to a local file does not go stale, and the
        // ping is a round trip to the connection's worker thread on every query.
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await?;
        if !is_current!(&pool).await {
            let mut tx = pool.begin().await?;
            migrate!(tx, SCHEMA).await?;
            tx.commit().await?;
        }
        let token_cache = std::sync::Arc::new(super::token_cache::TokenCache::default());
        // A write whose caller went away: the caller will not drop what it wrote from the cache.
        let cache = std::sync::Arc::downgrade(&token_cache);
        let orphaned = std::sync::Arc::new(move || {
            if let Some(cache) = cache.upgrade() {
                cache.clear();
            }
        });
        let writer = SqliteWriter::open(&options, pool.clone(), orphaned).await?;
        Ok(SqliteStore {
            pool,
            writer,
            touches: Default::default(),
            token_cache: Some(token_cache),
        })
    }
}

impl_sql_store!(SqliteStore, sqlx::Sqlite);
#[cfg(feature = "oauth")]
super::sql_oauth::impl_sql_oauth!(SqliteStore, sqlx::Sqlite);
