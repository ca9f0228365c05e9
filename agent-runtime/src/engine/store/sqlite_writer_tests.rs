//! The SQLite writer's thread and queue, on a table of their own: back-pressure, batches whose
//! writes fail alone, callers that go away, a thread that dies, the close. (Concurrent
//! writers, a lock held by another connection and the close through the store's API are in
//! `tests/tests/store/sqlite_writer.rs`.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

use super::sql_values::{DocumentColumn, Param};
use super::sqlite_writer::{Orphaned, SqliteWriter};
use super::sqlite_writer_thread::PIECE_BYTES;
use super::StoreError;

/// A database file in a fresh directory, with a table `t (id PRIMARY KEY, v)`.
struct Db {
    dir: std::path::PathBuf,
    options: SqliteConnectOptions,
    pool: sqlx::SqlitePool,
    orphans: Arc<AtomicUsize>,
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn db(name: &str) -> Db {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "agent-sqlite-writer-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let options = SqliteConnectOptions::new()
        .filename(dir.join("w.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    let pool = SqlitePoolOptions::new()
        .max_connections(3)
        .connect_with(options.clone())
        .await
        .expect("pool");
    sqlx::query("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .execute(&pool)
        .await
        .expect("table");
    Db {
        dir,
        options,
        pool,
        orphans: Arc::default(),
    }
}

impl Db {
    async fn writer(&self, capacity: usize) -> SqliteWriter {
        let orphans = self.orphans.clone();
        let hook: Orphaned = Arc::new(move || {
            orphans.fetch_add(1, Ordering::SeqCst);
        });
        SqliteWriter::open_with(&self.options, self.pool.clone(), hook, capacity)
            .await
            .expect("writer")
    }

    /// Another connection holding the write lock (`BEGIN IMMEDIATE`) until it is dropped or
    /// committed.
    fn lock(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.options.get_filename()).expect("open");
        conn.execute_batch("BEGIN IMMEDIATE").expect("lock");
        conn
    }

    async fn ids(&self) -> Vec<i64> {
        sqlx::query_scalar("SELECT id FROM t ORDER BY id")
            .fetch_all(&self.pool)
            .await
            .expect("ids")
    }
}

async fn insert(writer: &SqliteWriter, id: i64) -> Result<u64, StoreError> {
    writer
        .write("INSERT INTO t (id, v) VALUES ($1, 'x')", &[id.into()])
        .await
}

/// Spawns an insert of `id`.
fn spawn_insert(
    writer: &SqliteWriter,
    id: i64,
) -> tokio::task::JoinHandle<Result<u64, StoreError>> {
    let writer = writer.clone();
    tokio::spawn(async move { insert(&writer, id).await })
}

/// Gives the writer thread time to take what is queued.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_makes_callers_wait_and_loses_nothing() {
    let db = db("full").await;
    let writer = db.writer(2).await;
    let lock = db.lock();
    // The thread takes the first write and waits on the lock.
    let first = spawn_insert(&writer, 0);
    settle().await;
    let rest: Vec<_> = (1..=10).map(|id| spawn_insert(&writer, id)).collect();
    settle().await;
    // Two queued, eight waiting for room; nothing answered.
    assert_eq!(writer.queue_room(), 0);
    assert!(!first.is_finished());
    assert!(rest.iter().all(|t| !t.is_finished()));
    drop(lock);
    assert_eq!(first.await.expect("task"), Ok(1));
    for t in rest {
        assert_eq!(t.await.expect("task"), Ok(1));
    }
    assert_eq!(db.ids().await, (0..=10).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_batch_fails_alone() {
    let db = db("batch").await;
    let writer = db.writer(16).await;
    let lock = db.lock();
    let plug = spawn_insert(&writer, 100);
    settle().await;
    // Queued behind the plug: run as one batch once the lock goes.
    let one = spawn_insert(&writer, 1);
    settle().await;
    let twice = spawn_insert(&writer, 1);
    settle().await;
    let two = spawn_insert(&writer, 2);
    settle().await;
    let stopped = {
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .write_checked(
                    &[
                        ("INSERT INTO t (id, v) VALUES (3, 'x')", &[], false),
                        ("UPDATE t SET v = 'y' WHERE id = 999", &[], true),
                    ],
                    None,
                )
                .await
        })
    };
    settle().await;
    drop(lock);
    assert_eq!(plug.await.expect("task"), Ok(1));
    assert_eq!(one.await.expect("task"), Ok(1));
    assert!(matches!(
        twice.await.expect("task"),
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(two.await.expect("task"), Ok(1));
    assert_eq!(stopped.await.expect("task"), Ok(Some(1)));
    // The stopped write's first insert was rolled back with it.
    assert_eq!(db.ids().await, vec![1, 2, 100]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_caller_went_away_before_it_started_is_skipped() {
    let db = db("skipped").await;
    let writer = db.writer(16).await;
    let lock = db.lock();
    let plug = spawn_insert(&writer, 100);
    settle().await;
    // Queued, then its caller gives up.
    let gave_up = tokio::time::timeout(Duration::from_millis(100), insert(&writer, 1)).await;
    assert!(gave_up.is_err());
    drop(lock);
    assert_eq!(plug.await.expect("task"), Ok(1));
    assert_eq!(insert(&writer, 2).await, Ok(1));
    assert_eq!(db.ids().await, vec![2, 100]);
    assert_eq!(db.orphans.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_caller_went_away_while_it_ran_is_stored_and_reported() {
    let db = db("orphan").await;
    let writer = db.writer(16).await;
    // Held open 300 ms by the thread; its caller gives up after 100.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        writer.write_checked(
            &[("INSERT INTO t (id, v) VALUES (1, 'x')", &[], true)],
            Some(Duration::from_millis(300)),
        ),
    )
    .await;
    assert!(gave_up.is_err());
    // Queued behind it: answered once it is in.
    assert_eq!(insert(&writer, 2).await, Ok(1));
    assert_eq!(db.ids().await, vec![1, 2]);
    assert_eq!(db.orphans.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_thread_is_an_error_never_a_hang() {
    let db = db("dead").await;
    let writer = db.writer(16).await;
    assert_eq!(insert(&writer, 1).await, Ok(1));
    let lock = db.lock();
    // Queued behind a write that waits on the lock, then the panic, then another write.
    let waiting = spawn_insert(&writer, 2);
    settle().await;
    writer.kill().await;
    let behind = spawn_insert(&writer, 3);
    settle().await;
    drop(lock);
    let answers = tokio::time::timeout(Duration::from_secs(10), async {
        (waiting.await.expect("task"), behind.await.expect("task"))
    })
    .await
    .expect("no hang");
    // The write the thread ran before dying is stored; the one behind the panic is not.
    assert_eq!(answers.0, Ok(1));
    assert!(
        matches!(answers.1, Err(StoreError::Database(_))),
        "{answers:?}"
    );
    let later = tokio::time::timeout(Duration::from_secs(10), insert(&writer, 4))
        .await
        .expect("no hang");
    assert!(matches!(later, Err(StoreError::Database(_))), "{later:?}");
    assert_eq!(db.ids().await, vec![1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_drains_the_queue_and_joins_the_thread() {
    let db = db("close").await;
    let writer = db.writer(64).await;
    let lock = db.lock();
    let queued: Vec<_> = (1..=20).map(|id| spawn_insert(&writer, id)).collect();
    settle().await;
    let closing = {
        let writer = writer.clone();
        tokio::spawn(async move { writer.close().await })
    };
    settle().await;
    // The close waits for the queued writes, which wait for the lock.
    assert!(!closing.is_finished());
    drop(lock);
    tokio::time::timeout(Duration::from_secs(10), closing)
        .await
        .expect("closed")
        .expect("task");
    for t in queued {
        assert_eq!(t.await.expect("task"), Ok(1));
    }
    assert!(matches!(
        insert(&writer, 99).await,
        Err(StoreError::Database(_))
    ));
    // A second close answers at once.
    tokio::time::timeout(Duration::from_secs(1), writer.close())
        .await
        .expect("closed");
    let conn = rusqlite::Connection::open(db.options.get_filename()).expect("open");
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count");
    assert_eq!(n, 20);
}

/// `t.v` as a document column.
const T_V: DocumentColumn = DocumentColumn {
    table: "t",
    column: "v",
};

/// Upserts `text` as row `id`'s document; `when` is the update's condition.
async fn upsert(writer: &SqliteWriter, id: i64, text: &str, when: &str) -> Result<u64, StoreError> {
    let sql = format!(
        "INSERT INTO t (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = excluded.v \
         WHERE {when}"
    );
    writer
        .write(&sql, &[id.into(), Param::Document(text, T_V)])
        .await
}

/// Row `id`'s value as the store reads it, and its SQLite type.
async fn document(db: &Db, id: i64) -> (String, String) {
    sqlx::query_as("SELECT CAST(v AS TEXT), typeof(v) FROM t WHERE id = $1")
        .bind(id)
        .fetch_one(&db.pool)
        .await
        .expect("row")
}

#[tokio::test]
async fn a_big_document_is_written_in_pieces_and_reads_back_as_its_text() {
    let db = db("document").await;
    let writer = db.writer(8).await;
    // Two-byte characters across the pieces' edges, and a length that is not a multiple.
    let big: String = (0..3 * PIECE_BYTES / 7 + 5)
        .map(|i| format!("é{:05}", i % 100_000))
        .collect();
    assert!(big.len() > 2 * PIECE_BYTES && !big.len().is_multiple_of(PIECE_BYTES));
    assert_eq!(upsert(&writer, 1, &big, "1").await, Ok(1));
    assert_eq!(document(&db, 1).await, (big.clone(), "blob".to_owned()));

    // The upsert's update path writes the new text in pieces as well.
    let bigger = format!("{big}{big}");
    assert_eq!(upsert(&writer, 1, &bigger, "1").await, Ok(1));
    assert_eq!(document(&db, 1).await, (bigger.clone(), "blob".to_owned()));

    // An update its condition refuses changes nothing and answers no row.
    assert_eq!(upsert(&writer, 1, &big, "0").await, Ok(0));
    assert_eq!(document(&db, 1).await.0, bigger);

    // A small document is bound as text.
    assert_eq!(upsert(&writer, 2, "{\"a\":1}", "1").await, Ok(1));
    assert_eq!(
        document(&db, 2).await,
        ("{\"a\":1}".to_owned(), "text".to_owned())
    );
}

#[tokio::test]
async fn a_big_document_in_a_failed_write_leaves_nothing() {
    let db = db("document-rollback").await;
    let writer = db.writer(8).await;
    let big = "x".repeat(3 * PIECE_BYTES);
    // The document goes in, then the write stops at a statement that must change a row.
    let stopped = writer
        .write_checked(
            &[
                (
                    "INSERT INTO t (id, v) VALUES ($1, $2)",
                    &[1i64.into(), Param::Document(&big, T_V)],
                    false,
                ),
                ("UPDATE t SET v = 'y' WHERE id = $1", &[99i64.into()], true),
            ],
            None,
        )
        .await;
    assert_eq!(stopped, Ok(Some(1)));
    assert!(db.ids().await.is_empty());
}
