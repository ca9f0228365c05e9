//! The SQLite store's writer: every write goes through one rusqlite connection, run in the
//! calling task.
//!
//! SQLite lets one writer in at a time, so one connection loses nothing; and in WAL mode with
//! `synchronous = NORMAL` a write appends to the WAL file without syncing it, which takes
//! microseconds: less than handing the statement to a connection's worker thread and waking
//! the task again when it is done (sqlx's SQLite driver runs each connection on a thread of its
//! own). Writes from other connections (the read pool) wait on `busy_timeout`; the store makes
//! none after opening. Statements are prepared once and cached.
//!
//! Checkpoints (copying the WAL into the database file, and the only writes that sync the
//! disk) stay off the writing task: every [`CHECKPOINT_EVERY`] writes, a passive checkpoint
//! runs on a connection of the read pool (on its own thread), which does not hold up the
//! writer. SQLite's own automatic checkpoint, which would run inside a write, is moved to
//! [`AUTOCHECKPOINT_PAGES`], a backstop the background ones keep the WAL below.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::sql_values::Param;
use super::StoreError;

/// Statements kept prepared (the store has fewer distinct writes).
const PREPARED: usize = 32;

/// Writes between two background checkpoints (SQLite's default automatic checkpoint comes
/// every 1,000 pages; a write changes one page or a few).
pub(super) const CHECKPOINT_EVERY: u32 = 1000;

/// WAL pages at which a write checkpoints by itself (the background ones keep it below).
const AUTOCHECKPOINT_PAGES: u32 = 20_000;

/// Parameter names `$1`…, as the shared SQL spells them.
const NAMES: [&str; 12] = [
    "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12",
];

/// The one connection that writes. Cheap to clone (clones share it).
#[derive(Clone)]
pub(super) struct SqliteWriter(Arc<Shared>);

struct Shared {
    conn: Mutex<Connection>,
    /// Runs the background checkpoints.
    readers: sqlx::SqlitePool,
    /// Writes since the last background checkpoint.
    writes: AtomicU32,
    /// Whether a background checkpoint is running.
    checkpointing: Arc<AtomicBool>,
}

impl std::fmt::Debug for SqliteWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteWriter").finish_non_exhaustive()
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error() {
            Some(d)
                if d.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                    || d.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
            {
                StoreError::Conflict(e.to_string())
            }
            _ => StoreError::Database(e.to_string()),
        }
    }
}

impl SqliteWriter {
    /// Opens the writer on the database sqlx opened as `options` (the file exists, in WAL
    /// mode, with its tables).
    pub(super) fn open(
        options: &sqlx::sqlite::SqliteConnectOptions,
        readers: sqlx::SqlitePool,
    ) -> Result<Self, StoreError> {
        let path = options.get_filename();
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // sqlx names a `sqlite::memory:` database `file:sqlx-in-memory-<n>`, shared by its
        // connections.
        if path
            .to_str()
            .is_some_and(|p| p.starts_with("file:sqlx-in-memory-"))
        {
            flags |= OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_MEMORY
                | OpenFlags::SQLITE_OPEN_SHARED_CACHE;
        }
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES)?;
        conn.set_prepared_statement_cache_capacity(PREPARED);
        Ok(SqliteWriter(Arc::new(Shared {
            conn: Mutex::new(conn),
            readers,
            writes: AtomicU32::new(0),
            checkpointing: Arc::default(),
        })))
    }

    /// Counts a write; every [`CHECKPOINT_EVERY`] writes, starts a background checkpoint
    /// (unless one is running, or there is no tokio runtime to run it).
    fn wrote(&self) {
        let shared = &self.0;
        if shared.writes.fetch_add(1, Ordering::Relaxed) + 1 < CHECKPOINT_EVERY {
            return;
        }
        shared.writes.store(0, Ordering::Relaxed);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if shared.checkpointing.swap(true, Ordering::AcqRel) {
            return;
        }
        let readers = shared.readers.clone();
        let running = shared.checkpointing.clone();
        runtime.spawn(async move {
            let done = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&readers)
                .await;
            if let Err(e) = done {
                tracing::warn!(target: "agent_runtime::store", "WAL checkpoint failed: {e}");
            }
            running.store(false, Ordering::Release);
        });
    }

    /// Runs one statement; answers the number of rows it changed.
    pub(super) async fn write(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let changed = run(&self.0.conn.lock(), sql, params)?;
        self.wrote();
        Ok(changed)
    }

    /// Runs `statements` in one transaction; answers the rows each changed.
    pub(super) async fn write_all(
        &self,
        statements: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<u64>, StoreError> {
        let mut conn = self.0.conn.lock();
        let tx = conn.transaction()?;
        let mut changed = Vec::with_capacity(statements.len());
        for (sql, params) in statements {
            changed.push(run(&tx, sql, params)?);
        }
        tx.commit()?;
        drop(conn);
        self.wrote();
        Ok(changed)
    }
}

impl SqliteWriter {
    /// Runs `statements` in one transaction, each `(sql, params, must_change)`. When a
    /// statement marked `must_change` changes no row, the transaction is rolled back and its
    /// index answered; else it is committed (after being held open for `hold`: a test hook,
    /// see `sql_sessions`) and `None` answered.
    pub(super) async fn write_checked(
        &self,
        statements: &[(&str, &[Param<'_>], bool)],
        hold: Option<Duration>,
    ) -> Result<Option<usize>, StoreError> {
        let mut conn = self.0.conn.lock();
        let tx = conn.transaction()?;
        for (i, (sql, params, must_change)) in statements.iter().enumerate() {
            if run(&tx, sql, params)? == 0 && *must_change {
                return Ok(Some(i));
            }
        }
        if let Some(hold) = hold {
            std::thread::sleep(hold);
        }
        tx.commit()?;
        drop(conn);
        self.wrote();
        Ok(None)
    }
}

fn run(conn: &Connection, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<u64> {
    let mut statement = conn.prepare_cached(sql)?;
    for (i, param) in params.iter().enumerate() {
        let name = NAMES
            .get(i)
            .ok_or_else(|| rusqlite::Error::InvalidParameterCount(params.len(), NAMES.len()))?;
        let index = statement
            .parameter_index(name)?
            .ok_or_else(|| rusqlite::Error::InvalidParameterName((*name).to_owned()))?;
        match *param {
            Param::Text(v) => statement.raw_bind_parameter(index, v)?,
            Param::MaybeText(v) => statement.raw_bind_parameter(index, v)?,
            Param::Int(v) => statement.raw_bind_parameter(index, v)?,
            Param::Int32(v) => statement.raw_bind_parameter(index, v)?,
            Param::MaybeInt(v) => statement.raw_bind_parameter(index, v)?,
            Param::Bool(v) => statement.raw_bind_parameter(index, v)?,
        }
    }
    Ok(u64::try_from(statement.raw_execute()?).unwrap_or(u64::MAX))
}
