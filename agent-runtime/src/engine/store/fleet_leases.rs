//! Which replica of a fleet holds each paired session's socket (feature `fleet`,
//! `docs/pairing.md` §A fleet of replicas): the lease rows of `agent_paired_sockets` in the
//! PostgreSQL store the replicas share, and the fleet-wide lock under which a socket opening or
//! closing changes them together with the token's status.
//!
//! Every statement runs within [`STATEMENT_TIMEOUT`]; a failure is a [`StoreError`], never a
//! silent success.

use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};

use super::StoreError;

/// How long one statement (or the wait for a socket's lock) may take.
pub(crate) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The first key of the fleet's advisory locks (the second is the hash of a token id); the
/// two-key space of PostgreSQL's advisory locks never meets the one-key space the migrations
/// lock in.
const LOCK_CLASS: i32 = 0x5041_4952; // "PAIR"

/// The replica holding a socket, as its lease row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    /// The replica's id (a UUID each process draws at start).
    pub(crate) replica: String,
    /// Where other replicas reach it (its fleet address, a base URL).
    pub(crate) address: String,
    /// One more at every takeover of the socket.
    pub(crate) epoch: i64,
    /// Its last heartbeat, in milliseconds.
    pub(crate) heartbeat: i64,
    /// The app on the socket deduplicates keyed messages (its `hello` said so).
    pub(crate) dedupes: bool,
}

/// The lease rows, on the shared PostgreSQL pool.
#[derive(Clone)]
pub(crate) struct FleetLeases {
    pool: PgPool,
}

/// A socket's fleet-wide lock (a session-level advisory lock on a connection of the pool),
/// held while the socket's opening or closing changes its lease and its token's status.
/// [`SocketLock::unlock`] gives it back; dropped without it (a panic, a timeout), the
/// connection is closed instead of pooled, which ends the lock with it.
pub(crate) struct SocketLock {
    conn: Option<PoolConnection<Postgres>>,
    key: String,
}

impl SocketLock {
    /// Gives the lock back and the connection to the pool.
    pub(crate) async fn unlock(mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let unlocked = tokio::time::timeout(
            STATEMENT_TIMEOUT,
            sqlx::query("SELECT pg_advisory_unlock($1, hashtext($2))")
                .bind(LOCK_CLASS)
                .bind(&self.key)
                .execute(&mut *conn),
        )
        .await;
        if !matches!(unlocked, Ok(Ok(_))) {
            // Closed, not pooled: the lock ends with the connection.
            drop(conn.detach());
        }
    }
}

impl Drop for SocketLock {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            drop(conn.detach());
        }
    }
}

/// A statement's future bounded by [`STATEMENT_TIMEOUT`].
pub(super) async fn timed<T>(
    what: &str,
    f: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, StoreError> {
    match tokio::time::timeout(STATEMENT_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(StoreError::from(e)),
        Err(_) => Err(StoreError::Database(format!(
            "{what}: no answer within {STATEMENT_TIMEOUT:?}"
        ))),
    }
}

type LeaseRow = (String, String, i64, i64, bool);

fn lease((replica, address, epoch, heartbeat, dedupes): LeaseRow) -> Lease {
    Lease {
        replica,
        address,
        epoch,
        heartbeat,
        dedupes,
    }
}

impl FleetLeases {
    /// The leases on `pool` (a PostgreSQL store's, whose schema has the table).
    pub(crate) fn new(pool: PgPool) -> Self {
        FleetLeases { pool }
    }

    /// Takes the fleet-wide lock of `tid`'s socket, waiting at most [`STATEMENT_TIMEOUT`].
    pub(crate) async fn lock(&self, tid: &str) -> Result<SocketLock, StoreError> {
        let mut conn = timed("the socket's lock", self.pool.acquire()).await?;
        let locked = tokio::time::timeout(
            STATEMENT_TIMEOUT,
            sqlx::query("SELECT pg_advisory_lock($1, hashtext($2))")
                .bind(LOCK_CLASS)
                .bind(tid)
                .execute(&mut *conn),
        )
        .await;
        match locked {
            Ok(Ok(_)) => Ok(SocketLock {
                conn: Some(conn),
                key: tid.to_owned(),
            }),
            Ok(Err(e)) => {
                drop(conn.detach());
                Err(e.into())
            }
            Err(_) => {
                // The lock may still be granted to this connection: closed, never pooled.
                drop(conn.detach());
                Err(StoreError::Database(format!(
                    "the socket's lock: not granted within {STATEMENT_TIMEOUT:?}"
                )))
            }
        }
    }

    /// The lease of `tid`, if any.
    pub(crate) async fn holder(&self, tid: &str) -> Result<Option<Lease>, StoreError> {
        let row: Option<LeaseRow> = timed(
            "the socket's lease",
            sqlx::query_as(
                "SELECT replica, address, epoch, heartbeat, dedupes FROM agent_paired_sockets \
                 WHERE tid = $1",
            )
            .bind(tid)
            .fetch_optional(&self.pool),
        )
        .await?;
        Ok(row.map(lease))
    }

    /// Makes `replica` (at `address`) the holder of `tid`'s socket at `now`: the lease before
    /// (another replica's, or this one's older socket) and the new epoch. Call it under the
    /// socket's lock.
    pub(crate) async fn claim(
        &self,
        tid: &str,
        replica: &str,
        address: &str,
        now: u64,
    ) -> Result<(Option<Lease>, i64), StoreError> {
        let before = self.holder(tid).await?;
        let epoch: i64 = timed(
            "the socket's lease",
            sqlx::query_scalar(
                "INSERT INTO agent_paired_sockets (tid, replica, address, epoch, heartbeat) \
                 VALUES ($1, $2, $3, 1, $4) ON CONFLICT (tid) DO UPDATE SET \
                 replica = excluded.replica, address = excluded.address, \
                 epoch = agent_paired_sockets.epoch + 1, heartbeat = excluded.heartbeat, \
                 dedupes = FALSE \
                 RETURNING epoch",
            )
            .bind(tid)
            .bind(replica)
            .bind(address)
            .bind(now as i64)
            .fetch_one(&self.pool),
        )
        .await?;
        Ok((before, epoch))
    }

    /// Ends `tid`'s lease when it is still `replica`'s at `epoch`: whether it was (else a
    /// newer socket elsewhere holds the session, and the closing one must not touch its
    /// token). Call it under the socket's lock.
    pub(crate) async fn release(
        &self,
        tid: &str,
        replica: &str,
        epoch: i64,
    ) -> Result<bool, StoreError> {
        let done = timed(
            "the socket's lease",
            sqlx::query(
                "DELETE FROM agent_paired_sockets WHERE tid = $1 AND replica = $2 AND epoch = $3",
            )
            .bind(tid)
            .bind(replica)
            .bind(epoch)
            .execute(&self.pool),
        )
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The app on `replica`'s socket of `tid` at `epoch` deduplicates keyed messages (or not).
    pub(crate) async fn set_dedupes(
        &self,
        tid: &str,
        replica: &str,
        epoch: i64,
        dedupes: bool,
    ) -> Result<(), StoreError> {
        timed(
            "the socket's lease",
            sqlx::query(
                "UPDATE agent_paired_sockets SET dedupes = $4 \
                 WHERE tid = $1 AND replica = $2 AND epoch = $3",
            )
            .bind(tid)
            .bind(replica)
            .bind(epoch)
            .bind(dedupes)
            .execute(&self.pool),
        )
        .await?;
        Ok(())
    }

    /// `replica`'s heartbeat at `now` for the sockets it holds (`tids`): their rows touched
    /// where they are still its own, answered as `(tid, epoch)` (a socket whose row is
    /// missing or names another epoch lost its session), and the rows not renewed since
    /// `stale_before` deleted (their replica died holding them, or closed them without a
    /// store to write to).
    pub(crate) async fn heartbeat(
        &self,
        replica: &str,
        tids: &[String],
        now: u64,
        stale_before: u64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let held: Vec<(String, i64)> = timed(
            "the replica's heartbeat",
            sqlx::query_as(
                "UPDATE agent_paired_sockets SET heartbeat = $2 \
                 WHERE replica = $1 AND tid = ANY($3) RETURNING tid, epoch",
            )
            .bind(replica)
            .bind(now as i64)
            .bind(tids)
            .fetch_all(&self.pool),
        )
        .await?;
        timed(
            "the dead replicas' leases",
            sqlx::query("DELETE FROM agent_paired_sockets WHERE heartbeat < $1")
                .bind(stale_before as i64)
                .execute(&self.pool),
        )
        .await?;
        Ok(held)
    }
}
