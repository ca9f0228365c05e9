//! The SQLite writer's thread: the one rusqlite connection that writes, on an OS thread of its
//! own, fed by a bounded queue of [`Job`]s and answering each write over its own oneshot
//! channel. What the async side does with it, and why, is in `sqlite_writer`.
//!
//! The thread takes a job from the queue (blocking: it is not a tokio worker), then every job
//! already waiting behind it, up to [`MAX_BATCH`], and runs them as one batch: one `BEGIN
//! IMMEDIATE … COMMIT`, each write inside a `SAVEPOINT` of its own, so a write that fails (or
//! stops at a statement changing no row) is rolled back to its savepoint and answered alone
//! while its neighbours commit. Answers are sent after the batch's `COMMIT`: no caller hears of
//! a write before it is in the WAL. A batch whose `COMMIT` (or a savepoint statement) fails is
//! rolled back and each of its writes run again alone, so one write cannot sink the others;
//! a `BEGIN` that fails (another connection held the lock past `busy_timeout`) is every
//! write's answer.
//!
//! A big text (a [`Param::Document`] over [`PIECE_BYTES`]: a state snapshot, a big patch) is
//! not bound as text: SQLite would copy it, then build its row in one more allocation of its
//! size, and on this thread those allocations stay resident after they are freed (glibc keeps
//! the top of a thread's arena below its trim threshold, and `malloc_trim` does not trim it:
//! measured as 1.5 times the state more resident memory in `docs/stores.md` §Memory). The
//! row is inserted with a `zeroblob` of the text's length instead (SQLite writes the zeros
//! without materialising them) and the text copied into it through an incremental blob
//! handle, [`PIECE_BYTES`] at a time. The value is then a blob holding the UTF-8 text; the
//! store reads it `CAST … AS TEXT`.
//!
//! A write whose caller is gone (its answer channel closed) when the thread takes it from the
//! queue is skipped: never started. One taken before its caller went runs to its end, all or
//! nothing like any other (a transaction, or a savepoint of one); since the caller cannot do
//! what it does after its write (the token store drops the record's cached copy), the thread
//! calls the `orphaned` hook after the batch's commit.

use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::sql_values::{DocumentColumn, Param};
use super::StoreError;

/// Writes run in one transaction at most.
pub(super) const MAX_BATCH: usize = 64;

/// A document longer than this is written in pieces of this size.
pub(super) const PIECE_BYTES: usize = 64 * 1024;

/// Parameter names `$1`…, as the shared SQL spells them.
const NAMES: [&str; 13] = [
    "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13",
];

/// A parameter's value, owned (a write outlives its caller's borrow once queued).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Text(String),
    /// A [`Param::Document`].
    Document(String, DocumentColumn),
    Int(i64),
    Null,
}

impl From<&Param<'_>> for Value {
    fn from(p: &Param<'_>) -> Self {
        match *p {
            Param::Text(v) | Param::MaybeText(Some(v)) => Value::Text(v.to_owned()),
            Param::Document(v, column) => Value::Document(v.to_owned(), column),
            Param::MaybeText(None) | Param::MaybeInt(None) => Value::Null,
            Param::Int(v) | Param::MaybeInt(Some(v)) => Value::Int(v),
            Param::Int32(v) => Value::Int(i64::from(v)),
            Param::Bool(v) => Value::Int(i64::from(v)),
        }
    }
}

/// One statement of a write.
#[derive(Debug)]
pub(super) struct Statement {
    pub(super) sql: String,
    pub(super) params: Vec<Value>,
    /// The write stops (rolled back) when this statement changes no row.
    pub(super) must_change: bool,
}

impl Statement {
    pub(super) fn new(sql: &str, params: &[Param<'_>], must_change: bool) -> Self {
        Statement {
            sql: sql.to_owned(),
            params: params.iter().map(Value::from).collect(),
            must_change,
        }
    }
}

/// What a stored (or stopped) write answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Rows each statement changed (up to the one it stopped at).
    pub(super) changed: Vec<u64>,
    /// The statement marked `must_change` that changed no row: the write was rolled back.
    pub(super) stopped_at: Option<usize>,
}

/// A write's answer channel.
pub(super) type Answer = oneshot::Sender<Result<Outcome, StoreError>>;

/// One write: statements run all or nothing.
#[derive(Debug)]
pub(super) struct Write {
    pub(super) statements: Vec<Statement>,
    /// Held open this long before it is released (a test hook, see `sql_sessions`).
    pub(super) hold: Option<Duration>,
    pub(super) answer: Answer,
}

/// What the queue carries.
#[derive(Debug)]
pub(super) enum Job {
    Write(Write),
    /// Stop taking jobs; run those already queued, then end.
    Close,
    /// Panics the thread (tests of a dead writer).
    #[cfg(test)]
    Panic,
}

/// Runs the thread until the queue is closed (a [`Job::Close`]) or every sender is gone, and
/// the jobs queued before that are done; the connection is closed when it returns.
pub(super) fn serve(
    mut conn: Connection,
    mut queue: mpsc::Receiver<Job>,
    orphaned: &(dyn Fn() + Send + Sync),
) {
    let max = MAX_BATCH;
    let mut batch = Vec::with_capacity(max);
    while let Some(job) = queue.blocking_recv() {
        take(job, &mut queue, &mut batch);
        while batch.len() < max {
            match queue.try_recv() {
                Ok(job) => take(job, &mut queue, &mut batch),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            run_batch(&mut conn, std::mem::take(&mut batch), orphaned);
        }
    }
}

fn take(job: Job, queue: &mut mpsc::Receiver<Job>, batch: &mut Vec<Write>) {
    match job {
        // A caller gone before its write started: skipped.
        Job::Write(w) if w.answer.is_closed() => {}
        Job::Write(w) => batch.push(w),
        // Later sends fail; what is queued still comes out of the receiver.
        Job::Close => queue.close(),
        #[cfg(test)]
        Job::Panic => panic!("the SQLite writer's test panic"),
    }
}

/// Runs `writes` (one transaction) and sends each its answer.
fn run_batch(conn: &mut Connection, writes: Vec<Write>, orphaned: &(dyn Fn() + Send + Sync)) {
    let results = match in_transaction(conn, &writes) {
        Ok(results) => results,
        Err(Failed::Begin(e)) => writes.iter().map(|_| Err(e.clone())).collect(),
        // A commit or savepoint that failed: each write again, alone.
        Err(Failed::Batch(e)) if writes.len() > 1 => {
            tracing::warn!(target: "tea_agent_runtime::store", "SQLite batch failed ({e}); writing one by one");
            writes
                .iter()
                .map(|w| match in_transaction(conn, std::slice::from_ref(w)) {
                    Ok(mut one) => one.pop().unwrap_or_else(|| Err(e.clone())),
                    Err(Failed::Begin(e) | Failed::Batch(e)) => Err(e),
                })
                .collect()
        }
        Err(Failed::Batch(e)) => vec![Err(e)],
    };
    let mut lost = false;
    for (w, result) in writes.into_iter().zip(results) {
        lost |= w.answer.send(result).is_err();
    }
    if lost {
        orphaned();
    }
}

/// Why a whole batch failed.
enum Failed {
    /// `BEGIN IMMEDIATE` (nothing ran).
    Begin(StoreError),
    /// A savepoint statement or the `COMMIT` (everything rolled back).
    Batch(StoreError),
}

/// Runs `writes` in one transaction, each in a savepoint when there are several; answers each
/// one's result, all committed (the failed ones rolled back to their savepoints).
fn in_transaction(
    conn: &mut Connection,
    writes: &[Write],
) -> Result<Vec<Result<Outcome, StoreError>>, Failed> {
    control(conn, "BEGIN IMMEDIATE").map_err(Failed::Begin)?;
    let done = savepoints(conn, writes).and_then(|results| {
        // Alone, a failed or stopped write is the transaction's end.
        let stored = matches!(results.first(), Some(Ok(o)) if o.stopped_at.is_none());
        if writes.len() > 1 || stored {
            control(conn, "COMMIT")?;
        } else if !conn.is_autocommit() {
            control(conn, "ROLLBACK")?;
        }
        Ok(results)
    });
    done.map_err(|e| {
        // (SQLite rolls some failures back by itself.)
        if !conn.is_autocommit() {
            let _ = control(conn, "ROLLBACK");
        }
        Failed::Batch(e)
    })
}

fn savepoints(
    conn: &mut Connection,
    writes: &[Write],
) -> Result<Vec<Result<Outcome, StoreError>>, StoreError> {
    let alone = writes.len() == 1;
    let mut results = Vec::with_capacity(writes.len());
    for w in writes {
        if !alone {
            control(conn, "SAVEPOINT agent_write")?;
        }
        let result = statements(conn, w);
        let keep = matches!(&result, Ok(o) if o.stopped_at.is_none());
        if keep {
            if let Some(hold) = w.hold {
                std::thread::sleep(hold);
            }
        }
        if !alone {
            if !keep {
                // A failure SQLite answered by rolling the whole transaction back ends the
                // batch (its writes are run again alone).
                if conn.is_autocommit() {
                    return Err(result.err().unwrap_or_else(|| {
                        StoreError::Database("the SQLite batch was rolled back".into())
                    }));
                }
                control(conn, "ROLLBACK TO agent_write")?;
            }
            control(conn, "RELEASE agent_write")?;
        }
        results.push(result);
    }
    Ok(results)
}

/// One write's statements; stops at a `must_change` one that changed no row.
fn statements(conn: &Connection, w: &Write) -> Result<Outcome, StoreError> {
    let mut changed = Vec::with_capacity(w.statements.len());
    for (i, s) in w.statements.iter().enumerate() {
        let n = run(conn, &s.sql, &s.params)?;
        changed.push(n);
        if n == 0 && s.must_change {
            return Ok(Outcome {
                changed,
                stopped_at: Some(i),
            });
        }
    }
    Ok(Outcome {
        changed,
        stopped_at: None,
    })
}

fn control(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)?.raw_execute()?;
    Ok(())
}

/// Runs one statement; answers the rows it changed.
fn run(conn: &Connection, sql: &str, params: &[Value]) -> rusqlite::Result<u64> {
    let piecewise = params.iter().enumerate().find_map(|(i, p)| match p {
        Value::Document(text, column) if text.len() > PIECE_BYTES => Some((i, text, *column)),
        _ => None,
    });
    let Some((at, text, column)) = piecewise else {
        let mut statement = conn.prepare_cached(sql)?;
        bind(&mut statement, params, None)?;
        return Ok(u64::try_from(statement.raw_execute()?).unwrap_or(u64::MAX));
    };
    // The row the statement wrote (none: an upsert whose condition left it alone).
    let mut statement = conn.prepare_cached(&format!("{sql} RETURNING rowid"))?;
    bind(&mut statement, params, Some(at))?;
    let rowid: Option<i64> = {
        let mut rows = statement.raw_query();
        let rowid = match rows.next()? {
            Some(row) => Some(row.get(0)?),
            None => None,
        };
        // Stepped to its end: the statement is done before the blob is opened.
        while rows.next()?.is_some() {}
        rowid
    };
    let Some(rowid) = rowid else { return Ok(0) };
    let mut blob = conn.blob_open(
        rusqlite::DatabaseName::Main,
        column.table,
        column.column,
        rowid,
        false,
    )?;
    for (i, piece) in text.as_bytes().chunks(PIECE_BYTES).enumerate() {
        blob.write_at(piece, i * PIECE_BYTES)?;
    }
    Ok(conn.changes())
}

/// Binds `params` to `$1`…; the one at index `piecewise` as a zeroblob of its length.
fn bind(
    statement: &mut rusqlite::CachedStatement<'_>,
    params: &[Value],
    piecewise: Option<usize>,
) -> rusqlite::Result<()> {
    for (i, param) in params.iter().enumerate() {
        let name = NAMES
            .get(i)
            .ok_or_else(|| rusqlite::Error::InvalidParameterCount(params.len(), NAMES.len()))?;
        let index = statement
            .parameter_index(name)?
            .ok_or_else(|| rusqlite::Error::InvalidParameterName((*name).to_owned()))?;
        match param {
            Value::Document(v, _) if piecewise == Some(i) => {
                let len = i32::try_from(v.len()).map_err(|_| {
                    rusqlite::Error::ToSqlConversionFailure(
                        format!("a {} byte document is over SQLite's limit", v.len()).into(),
                    )
                })?;
                statement.raw_bind_parameter(index, rusqlite::blob::ZeroBlob(len))?
            }
            Value::Text(v) | Value::Document(v, _) => statement.raw_bind_parameter(index, v)?,
            Value::Int(v) => statement.raw_bind_parameter(index, v)?,
            Value::Null => statement.raw_bind_parameter(index, rusqlite::types::Null)?,
        }
    }
    Ok(())
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
