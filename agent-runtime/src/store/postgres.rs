//! The PostgreSQL store: several app-server replicas share one database (feature
//! `postgres`). Commits are compare-and-set on (session, sequence); every write that other
//! replicas must see is announced with `NOTIFY` on [`CHANGES_CHANNEL`].

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;

use super::sql::impl_sql_store;
use super::StoreError;

/// The `LISTEN/NOTIFY` channel on which a write names the session it changed:
/// `<session id> <sequence number> <1 if the confirmations changed, else 0>`.
pub const CHANGES_CHANNEL: &str = "agent_session_changes";

/// The tables, created when missing (under an advisory lock, so replicas starting together
/// do not race).
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
CREATE TABLE IF NOT EXISTS agent_keys (name TEXT PRIMARY KEY, bytes BYTEA NOT NULL);
CREATE OR REPLACE FUNCTION agent_sessions_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('agent_session_changes', NEW.id || ' ' || NEW.seq || ' ' ||
        CASE WHEN OLD.confirms IS DISTINCT FROM NEW.confirms THEN '1' ELSE '0' END);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS agent_sessions_changed ON agent_sessions;
CREATE TRIGGER agent_sessions_changed AFTER UPDATE ON agent_sessions
    FOR EACH ROW EXECUTE FUNCTION agent_sessions_notify();
";

/// Notifications buffered for a slow host before the oldest are dropped (a host that lags
/// reloads on its next commit anyway).
const CHANGES_CAPACITY: usize = 1024;

/// Key of the advisory lock held while the tables are created.
const SCHEMA_LOCK: i64 = 0x6167_656e_7473;

/// A store in a PostgreSQL database. Cheap to clone (a connection pool).
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: sqlx::PgPool,
    touches: std::sync::Arc<super::sql::Touches>,
    /// Fed by one `LISTEN` task, started by the first
    /// [`SessionStore::changes`](crate::store::SessionStore::changes) call.
    changes: std::sync::Arc<std::sync::OnceLock<tokio::sync::broadcast::Sender<String>>>,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and creates the tables when missing.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SCHEMA_LOCK)
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql(SCHEMA).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(PostgresStore {
            pool,
            touches: Default::default(),
            changes: Default::default(),
        })
    }

    /// Starts the task that `LISTEN`s on [`CHANGES_CHANNEL`] (reconnecting after a lost
    /// connection) and forwards each changed session id. It ends when every receiver is gone.
    fn listen(&self) -> tokio::sync::broadcast::Sender<String> {
        let (tx, _) = tokio::sync::broadcast::channel(CHANGES_CAPACITY);
        let sender = tx.clone();
        let pool = self.pool.clone();
        tokio::spawn(async move {
            loop {
                let mut listener = match sqlx::postgres::PgListener::connect_with(&pool).await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!(target: "agent_runtime::store", "LISTEN connect failed: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                if let Err(e) = listener.listen(CHANGES_CHANNEL).await {
                    tracing::error!(target: "agent_runtime::store", "LISTEN failed: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                loop {
                    match listener.recv().await {
                        Ok(n) => {
                            if sender.send(n.payload().to_owned()).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(target: "agent_runtime::store", "LISTEN lost: {e}");
                            break;
                        }
                    }
                }
            }
        });
        tx
    }

    /// The connection pool.
    pub fn pool(&self) -> &sqlx::PgPool {
        &self.pool
    }
}

impl_sql_store!(PostgresStore, sqlx::Postgres, changes);
