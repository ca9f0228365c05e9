//! The SQLite store: one file, the embedded default for a single server (feature `sqlite`).
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a commit that returned survives
//! the process being killed; only a power loss or an OS crash may lose the newest commits.

use std::path::Path;
use std::str::FromStr as _;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::sql::impl_sql_store;
use super::StoreError;

/// The tables, created when missing.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_tokens (
    tid TEXT PRIMARY KEY, token_hash TEXT NOT NULL, uid TEXT, session_id TEXT NOT NULL,
    status TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL, pending_resume_until BIGINT, origin TEXT NOT NULL,
    label TEXT, ord BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_tokens_hash ON agent_tokens (token_hash);
CREATE INDEX IF NOT EXISTS agent_tokens_uid ON agent_tokens (uid);
CREATE INDEX IF NOT EXISTS agent_tokens_session ON agent_tokens (session_id);
CREATE TABLE IF NOT EXISTS agent_sessions (
    id TEXT PRIMARY KEY, owner TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
    seq BIGINT NOT NULL, state TEXT NOT NULL, schema_hash TEXT NOT NULL,
    confirms TEXT NOT NULL, log_tail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_sessions_owner ON agent_sessions (owner);
CREATE TABLE IF NOT EXISTS agent_idempotency (
    tid TEXT NOT NULL, key TEXT NOT NULL, created_at BIGINT NOT NULL, msg TEXT NOT NULL,
    status INTEGER NOT NULL, body TEXT NOT NULL, headers TEXT NOT NULL,
    PRIMARY KEY (tid, key));
CREATE TABLE IF NOT EXISTS agent_mcp_sessions (
    id TEXT PRIMARY KEY, tid TEXT NOT NULL, init TEXT NOT NULL, created_at BIGINT NOT NULL,
    deleted BOOLEAN NOT NULL);
CREATE TABLE IF NOT EXISTS agent_keys (name TEXT PRIMARY KEY, bytes BLOB NOT NULL);
";

/// A store in one SQLite file. Cheap to clone (a connection pool).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: sqlx::SqlitePool,
    touches: std::sync::Arc<super::sql::Touches>,
}

impl SqliteStore {
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
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        sqlx::raw_sql(SCHEMA).execute(&pool).await?;
        Ok(SqliteStore {
            pool,
            touches: Default::default(),
        })
    }
}

impl_sql_store!(SqliteStore, sqlx::Sqlite);
