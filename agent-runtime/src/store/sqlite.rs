//! The SQLite store: one file, the embedded default for a single server (feature `sqlite`).
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a commit that returned survives
//! the process being killed; only a power loss or an OS crash may lose the newest commits.

use std::path::Path;
use std::str::FromStr as _;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::sql::impl_sql_store;
use super::tables::tables;
use super::StoreError;

/// The tables, created when missing.
const SCHEMA: &str = tables!("BLOB");

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
