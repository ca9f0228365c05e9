//! The SQLite store's writer: every write goes through one rusqlite connection, owned by a
//! thread of its own (`agent-sqlite-writer`, `sqlite_writer_thread`) and fed by a bounded
//! queue.
//!
//! SQLite lets one writer in at a time, so one connection loses nothing; and in WAL mode with
//! `synchronous = NORMAL` a write appends to the WAL file without syncing it, which takes
//! microseconds. But a write can also wait: on `busy_timeout` (10 s) while another connection
//! holds the write lock, or on a checkpoint's `fsync`. On its own thread that wait holds up
//! only the writes queued behind it, never a tokio worker: the async side only awaits room in
//! the queue and the write's answer. Statements are prepared once and cached.
//!
//! - **The queue** holds [`QUEUE`] writes; when it is full a caller waits for room
//!   (back-pressure), nothing is dropped. Writes are run in the order they were queued.
//! - **Batches.** The writes waiting in the queue when the thread takes one (up to
//!   `MAX_BATCH`, 64) share one transaction, each in a savepoint of its own: a failing write
//!   is rolled back and answered alone, its neighbours commit. Every answer is sent after the
//!   commit. Measured (`docs/stores.md` §SQLite): 16 sessions writing at once take 13% less
//!   time with batches than one transaction per write.
//! - **A caller that goes away** (its future dropped) before the thread takes its write: the
//!   write is skipped. After: it runs to its end (all or nothing, like every write) and, since
//!   the caller will not drop the token records it wrote from the cache, the whole token cache
//!   is dropped once it is in (the `orphaned` hook).
//! - **Closing** the store (`SessionStore::close`, [`SqliteWriter::close`]) queues a stop
//!   behind the writes already queued: the thread runs them, closes its connection and ends,
//!   and the close answers once it is joined. Writes after that fail. Dropping every clone of
//!   the store ends the thread the same way (without waiting for it).
//! - **A dead thread** (a panic): every write waiting for it, and every later one, fails with
//!   `StoreError::Database`; none hangs and none is taken for stored.
//!
//! Checkpoints (copying the WAL into the database file, and the only writes that sync the
//! disk) stay off the writer: every [`CHECKPOINT_EVERY`] writes, a passive checkpoint runs on a
//! connection of the read pool (on its own thread), which does not hold up the writer.
//! SQLite's own automatic checkpoint, which would run inside a write, is moved to
//! [`AUTOCHECKPOINT_PAGES`], a backstop the background ones keep the WAL below.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{mpsc, oneshot, watch};

use super::sql_values::Param;
use super::sqlite_writer_thread::{serve, Job, Outcome, Statement, Write};
use super::StoreError;

/// Statements kept prepared (the store has fewer distinct writes).
const PREPARED: usize = 32;

/// Writes the queue holds before callers wait for room.
pub(super) const QUEUE: usize = 256;

/// Writes between two background checkpoints (SQLite's default automatic checkpoint comes
/// every 1,000 pages; a write changes one page or a few).
pub(super) const CHECKPOINT_EVERY: u32 = 1000;

/// WAL pages at which a write checkpoints by itself (the background ones keep it below).
const AUTOCHECKPOINT_PAGES: u32 = 20_000;

/// Called on the writer thread after a write whose caller went away is stored.
pub(super) type Orphaned = Arc<dyn Fn() + Send + Sync>;

/// The one connection that writes, behind its queue. Cheap to clone (clones share it; the
/// thread ends at [`SqliteWriter::close`] or when the last clone is dropped).
#[derive(Clone)]
pub(super) struct SqliteWriter(Arc<Shared>);

struct Shared {
    queue: mpsc::Sender<Job>,
    orphaned: Orphaned,
    /// Closed when the thread ends.
    ended: watch::Receiver<()>,
    /// Joined by [`SqliteWriter::close`].
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
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

/// Why a write got no answer: the thread is gone.
fn gone(what: &str) -> StoreError {
    StoreError::Database(format!("the SQLite writer {what}"))
}

impl SqliteWriter {
    /// Opens the writer on the database sqlx opened as `options` (the file exists, in WAL
    /// mode, with its tables), and starts its thread; `readers` is the read pool (it runs the
    /// checkpoints), `orphaned` what to do after a write whose caller went away.
    pub(super) async fn open(
        options: &sqlx::sqlite::SqliteConnectOptions,
        readers: sqlx::SqlitePool,
        orphaned: Orphaned,
    ) -> Result<Self, StoreError> {
        Self::open_with(options, readers, orphaned, QUEUE).await
    }

    /// [`Self::open`] with a queue of `capacity` writes.
    pub(super) async fn open_with(
        options: &sqlx::sqlite::SqliteConnectOptions,
        readers: sqlx::SqlitePool,
        orphaned: Orphaned,
        capacity: usize,
    ) -> Result<Self, StoreError> {
        let conn = connect(options)?;
        let (queue, jobs) = mpsc::channel(capacity);
        let (ended_tx, ended) = watch::channel(());
        let hook = orphaned.clone();
        let thread = std::thread::Builder::new()
            .name("agent-sqlite-writer".into())
            .spawn(move || {
                // Dropped last, panic or not: the connection is closed by then.
                let _ended = ended_tx;
                serve(conn, jobs, &*hook);
            })
            .map_err(|e| gone(&format!("thread did not start: {e}")))?;
        Ok(SqliteWriter(Arc::new(Shared {
            queue,
            orphaned,
            ended,
            thread: Mutex::new(Some(thread)),
            readers,
            writes: AtomicU32::new(0),
            checkpointing: Arc::default(),
        })))
    }

    /// Stops the writer: the writes queued by now are run, later ones fail; answers once the
    /// thread has closed its connection and ended (joined).
    pub(super) async fn close(&self) {
        let _ = self.0.queue.send(Job::Close).await;
        let mut ended = self.0.ended.clone();
        // Err: the thread dropped its end of the channel.
        while ended.changed().await.is_ok() {}
        let thread = self.0.thread.lock().take();
        if let Some(thread) = thread {
            // It has ended: the join does not wait (on a blocking thread all the same).
            if let Ok(Err(_)) = tokio::task::spawn_blocking(move || thread.join()).await {
                tracing::error!(target: "tea_agent_runtime::store", "the SQLite writer thread panicked");
            }
        }
    }

    /// Queues `statements` as one write and awaits its answer.
    async fn send(
        &self,
        statements: Vec<Statement>,
        hold: Option<Duration>,
    ) -> Result<Outcome, StoreError> {
        let (answer, rx) = oneshot::channel();
        let write = Write {
            statements,
            hold,
            answer,
        };
        // Cancel-safe: dropped while waiting for room, the write was not queued.
        self.0
            .queue
            .send(Job::Write(write))
            .await
            .map_err(|_| gone("is closed"))?;
        let mut pending = Pending {
            rx,
            answered: false,
            orphaned: &self.0.orphaned,
        };
        let result = (&mut pending.rx).await;
        pending.answered = true;
        let outcome = result.map_err(|_| gone("stopped before answering"))??;
        if outcome.stopped_at.is_none() {
            self.wrote();
        }
        Ok(outcome)
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
                tracing::warn!(target: "tea_agent_runtime::store", "WAL checkpoint failed: {e}");
            }
            running.store(false, Ordering::Release);
        });
    }

    /// Runs one statement; answers the number of rows it changed.
    pub(super) async fn write(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let outcome = self
            .send(vec![Statement::new(sql, params, false)], None)
            .await?;
        Ok(outcome.changed.first().copied().unwrap_or(0))
    }

    /// Runs `statements` in one transaction; answers the rows each changed.
    pub(super) async fn write_all(
        &self,
        statements: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<u64>, StoreError> {
        let statements = statements
            .iter()
            .map(|(sql, params)| Statement::new(sql, params, false))
            .collect();
        Ok(self.send(statements, None).await?.changed)
    }

    /// Runs `statements` in one transaction, each `(sql, params, must_change)`. When a
    /// statement marked `must_change` changes no row, the transaction is rolled back and its
    /// index answered; else it is committed (after being held open for `hold`: a test hook,
    /// see `sql_sessions`) and `None` answered.
    pub(super) async fn write_checked(
        &self,
        statements: &[(&str, &[Param<'_>], bool)],
        hold: Option<Duration>,
    ) -> Result<Option<usize>, StoreError> {
        let statements = statements
            .iter()
            .map(|(sql, params, must_change)| Statement::new(sql, params, *must_change))
            .collect();
        Ok(self.send(statements, hold).await?.stopped_at)
    }

    /// Room left in the queue (tests of back-pressure).
    #[cfg(test)]
    pub(super) fn queue_room(&self) -> usize {
        self.0.queue.capacity()
    }

    /// Makes the thread panic (tests of a dead writer).
    #[cfg(test)]
    pub(super) async fn kill(&self) {
        let _ = self.0.queue.send(Job::Panic).await;
    }
}

/// A queued write's answer, awaited. Dropped before the answer was read (the caller went
/// away), it closes the channel: a write not started yet is then skipped, one running is
/// followed by the `orphaned` hook on the thread, and one already answered by the hook here.
struct Pending<'a> {
    rx: oneshot::Receiver<Result<Outcome, StoreError>>,
    answered: bool,
    orphaned: &'a Orphaned,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        self.rx.close();
        if self.rx.try_recv().is_ok() {
            (self.orphaned)();
        }
    }
}

/// The writer's connection to the file sqlx opened as `options`.
fn connect(options: &sqlx::sqlite::SqliteConnectOptions) -> Result<Connection, StoreError> {
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
    Ok(conn)
}
