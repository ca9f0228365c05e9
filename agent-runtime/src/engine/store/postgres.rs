//! The PostgreSQL store: several app-server replicas share one database (feature
//! `postgres`). Commits are compare-and-set on (session, sequence); every write that other
//! replicas must see is announced with `NOTIFY` on [`CHANGES_CHANNEL`].

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;

use super::postgres_budgets::lease_function;
use super::postgres_options::{check_tls, connect_options, PostgresOptions};
use super::sql::impl_sql_store;
use super::sql_values::Param;
use super::tables::{is_current, migrate, tables};
use super::StoreError;

/// The `LISTEN/NOTIFY` channel on which a write names the session it changed:
/// `<session id> <sequence number> <1 if the confirmations changed, else 0>`, or
/// `<session id> deleted` when the session was deleted (closed, or expired).
pub const CHANGES_CHANNEL: &str = "agent_session_changes";

/// The `LISTEN/NOTIFY` channel on which a deleted MCP binding is announced: the stored id
/// (the SHA-256 hex of the `Mcp-Session-Id`), so every replica ends that session
/// (`docs/stores.md` §Limits across replicas).
pub(crate) const MCP_CHANNEL: &str = "agent_mcp_changes";

/// The tables, created when missing (under an advisory lock, so replicas starting together
/// do not race).
const SCHEMA: &str = concat!(
    tables!("BYTEA"),
    "
CREATE OR REPLACE FUNCTION agent_sessions_notify() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('agent_session_changes', OLD.id || ' deleted');
    ELSE
        PERFORM pg_notify('agent_session_changes', NEW.id || ' ' || NEW.seq || ' ' ||
            CASE WHEN OLD.confirms IS DISTINCT FROM NEW.confirms THEN '1' ELSE '0' END);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS agent_sessions_changed ON agent_sessions;
CREATE TRIGGER agent_sessions_changed AFTER UPDATE OR DELETE ON agent_sessions
    FOR EACH ROW EXECUTE FUNCTION agent_sessions_notify();
CREATE OR REPLACE FUNCTION agent_mcp_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('agent_mcp_changes', OLD.id);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS agent_mcp_deleted ON agent_mcp_sessions;
CREATE TRIGGER agent_mcp_deleted AFTER DELETE ON agent_mcp_sessions
    FOR EACH ROW EXECUTE FUNCTION agent_mcp_notify();
",
    lease_function!()
);

/// Notifications buffered for a slow host before the oldest are dropped (a host that lags
/// reloads on its next commit anyway).
const CHANGES_CAPACITY: usize = 1024;

/// Key of the advisory lock held while the tables are created.
const SCHEMA_LOCK: i64 = 0x6167_656e_7473;

/// A store in a PostgreSQL database. Cheap to clone (a connection pool).
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: sqlx::PgPool,
    /// Writes (through the same pool).
    writer: PgWriter,
    touches: std::sync::Arc<super::touches::Touches>,
    /// Always `None`: other replicas write the token records.
    token_cache: Option<std::sync::Arc<super::token_cache::TokenCache>>,
    /// Fed by one `LISTEN` task, started by the first
    /// [`SessionStore::changes`](crate::engine::store::SessionStore::changes) or
    /// [`McpBindings::deleted`](crate::engine::store::McpBindings::deleted) call.
    changes: std::sync::Arc<std::sync::OnceLock<Channels>>,
    /// Whether that task is listening now (one of the `LISTENER_` values).
    listening: std::sync::Arc<std::sync::atomic::AtomicU8>,
    /// Set when the store closes: the `LISTEN` task ends.
    closing: tokio::sync::watch::Sender<bool>,
}

/// What the `LISTEN` task forwards: the sessions changed ([`CHANGES_CHANNEL`]) and the MCP
/// bindings deleted ([`MCP_CHANNEL`]).
#[derive(Debug)]
struct Channels {
    sessions: tokio::sync::broadcast::Sender<String>,
    mcp: tokio::sync::broadcast::Sender<String>,
}

/// [`PostgresStore::listening`]: the `LISTEN` task has not started.
const LISTENER_NOT_STARTED: u8 = 0;
/// [`PostgresStore::listening`]: connected and listening.
const LISTENER_LISTENING: u8 = 1;
/// [`PostgresStore::listening`]: connecting again.
const LISTENER_RECONNECTING: u8 = 2;

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`, with libpq's query parameters such
    /// as `sslmode`) with the default [`PostgresOptions`] and creates the tables when missing.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, &PostgresOptions::default()).await
    }

    /// Connects to `url` with a pool sized and timed by `options`, and creates the tables when
    /// missing. A URL that does not parse, asks for TLS (`sslmode=require`, `verify-ca`,
    /// `verify-full`) in a build without the feature `postgres-tls`, or names a root
    /// certificate (`sslrootcert`) that does not read fails here, naming the setting.
    pub async fn open_with(url: &str, options: &PostgresOptions) -> Result<Self, StoreError> {
        let connect = connect_options(url, options)?;
        let (host, port) = (connect.get_host().to_owned(), connect.get_port());
        let pool = options
            .pool_options()
            .connect_with(connect)
            .await
            .map_err(|e| {
                StoreError::Database(format!(
                    "cannot connect to PostgreSQL at {host}:{port}: {e}"
                ))
            })?;
        Self::from_pool(pool).await
    }

    /// A store on a pool the caller built (its size, timeouts, TLS and credentials are the
    /// caller's): creates the tables when missing, as [`PostgresStore::open`] does after
    /// connecting. The `LISTEN` task opens its own connection with the pool's connect options.
    pub async fn from_pool(pool: sqlx::PgPool) -> Result<Self, StoreError> {
        check_tls(pool.connect_options().get_ssl_mode())?;
        if !is_current!(&pool).await {
            let mut tx = pool.begin().await?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(SCHEMA_LOCK)
                .execute(&mut *tx)
                .await?;
            migrate!(tx, SCHEMA).await?;
            tx.commit().await?;
        }
        Ok(PostgresStore {
            writer: PgWriter(pool.clone()),
            pool,
            touches: Default::default(),
            token_cache: None,
            changes: Default::default(),
            listening: Default::default(),
            closing: tokio::sync::watch::channel(false).0,
        })
    }

    /// The receivers of what the `LISTEN` task forwards, started on first use.
    fn channels(&self) -> &Channels {
        self.changes.get_or_init(|| self.listen())
    }

    /// The MCP bindings other processes (and this one) delete
    /// ([`McpBindings::deleted`](crate::engine::store::McpBindings::deleted)).
    fn mcp_deletes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.channels().mcp.subscribe())
    }

    /// Starts the task that `LISTEN`s on [`CHANGES_CHANNEL`] and [`MCP_CHANNEL`]
    /// (reconnecting after a lost connection) and forwards each payload to its channel. It
    /// ends when every receiver of both is gone.
    fn listen(&self) -> Channels {
        let (tx, _) = tokio::sync::broadcast::channel(CHANGES_CAPACITY);
        let (mcp, _) = tokio::sync::broadcast::channel(CHANGES_CAPACITY);
        let sender = Channels {
            sessions: tx.clone(),
            mcp: mcp.clone(),
        };
        // A connection of its own, outside the pool (a pool of one at most could not also
        // run statements), opened with the pool's connect options: the same URL and TLS.
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(self.pool.options().get_acquire_timeout())
            .connect_lazy_with((*self.pool.connect_options()).clone());
        let closing = self.closing.subscribe();
        let listening = self.listening.clone();
        let set = move |state: u8| listening.store(state, std::sync::atomic::Ordering::Relaxed);
        set(LISTENER_RECONNECTING);
        tokio::spawn(async move {
            let listen_pool = pool.clone();
            listen_until_closed(pool, sender, closing, set).await;
            listen_pool.close().await;
        });
        Channels { sessions: tx, mcp }
    }

    /// Ends the `LISTEN` task ([`SessionStore::close`](crate::engine::store::SessionStore::close)).
    fn stop_listener(&self) {
        self.closing.send_replace(true);
    }

    /// The state of the `LISTEN` task
    /// ([`SessionStore::listener`](crate::engine::store::SessionStore::listener)).
    fn listener_state(&self) -> super::ChangesListener {
        match self.listening.load(std::sync::atomic::Ordering::Relaxed) {
            LISTENER_NOT_STARTED => super::ChangesListener::NotStarted,
            LISTENER_LISTENING => super::ChangesListener::Listening,
            _ => super::ChangesListener::Reconnecting,
        }
    }

    /// The connection pool.
    pub fn pool(&self) -> &sqlx::PgPool {
        &self.pool
    }
}

/// The `LISTEN` task's loop: listens on [`CHANGES_CHANNEL`] and [`MCP_CHANNEL`] through
/// `pool` (reconnecting after a lost connection) and forwards each payload to its channel in
/// `sender`, until the store closes or no receiver is left.
async fn listen_until_closed(
    pool: sqlx::PgPool,
    sender: Channels,
    mut closing: tokio::sync::watch::Receiver<bool>,
    set: impl Fn(u8),
) {
    loop {
        // A store shut down: the listener ends with it.
        if *closing.borrow() {
            return;
        }
        let mut listener = match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "LISTEN connect failed: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen_all([CHANGES_CHANNEL, MCP_CHANNEL]).await {
            tracing::error!(target: "tea_agent_runtime::store", "LISTEN failed: {e}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        set(LISTENER_LISTENING);
        loop {
            let received = tokio::select! {
                received = listener.recv() => received,
                _ = closing.wait_for(|closing| *closing) => return,
            };
            match received {
                Ok(n) => {
                    let to = if n.channel() == MCP_CHANNEL {
                        &sender.mcp
                    } else {
                        &sender.sessions
                    };
                    // A channel without receivers drops the payload; the task ends when
                    // neither has any.
                    let _ = to.send(n.payload().to_owned());
                    if sender.sessions.receiver_count() == 0 && sender.mcp.receiver_count() == 0 {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(target: "tea_agent_runtime::store", "LISTEN lost: {e}");
                    crate::telemetry::listener_reconnect();
                    set(LISTENER_RECONNECTING);
                    break;
                }
            }
        }
    }
}

/// Writes through the pool: a statement on any pooled connection, several in one transaction.
#[derive(Debug, Clone)]
struct PgWriter(sqlx::PgPool);

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn bind<'q>(mut query: PgQuery<'q>, params: &[Param<'q>]) -> PgQuery<'q> {
    for param in params {
        query = match *param {
            Param::Text(v) | Param::Document(v, _) => query.bind(v),
            Param::MaybeText(v) => query.bind(v),
            Param::Int(v) => query.bind(v),
            Param::Int32(v) => query.bind(v),
            Param::MaybeInt(v) => query.bind(v),
            Param::Bool(v) => query.bind(v),
        };
    }
    query
}

impl PgWriter {
    /// Runs one statement; answers the number of rows it changed.
    async fn write<'q>(&self, sql: &'q str, params: &[Param<'q>]) -> Result<u64, StoreError> {
        let done = bind(sqlx::query(sql), params).execute(&self.0).await?;
        Ok(done.rows_affected())
    }

    /// Runs `statements` in one transaction; answers the rows each changed.
    async fn write_all<'q>(
        &self,
        statements: &[(&'q str, &[Param<'q>])],
    ) -> Result<Vec<u64>, StoreError> {
        let mut tx = self.0.begin().await?;
        let mut changed = Vec::with_capacity(statements.len());
        for (sql, params) in statements {
            let done = bind(sqlx::query(sql), params).execute(&mut *tx).await?;
            changed.push(done.rows_affected());
        }
        tx.commit().await?;
        Ok(changed)
    }
}

impl PgWriter {
    /// Runs `statements` in one transaction, each `(sql, params, must_change)`. When a
    /// statement marked `must_change` changes no row, the transaction is rolled back and its
    /// index answered; else it is committed (after being held open for `hold`: a test hook,
    /// see `sql_sessions`) and `None` answered.
    async fn write_checked<'q>(
        &self,
        statements: &[(&'q str, &[Param<'q>], bool)],
        hold: Option<Duration>,
    ) -> Result<Option<usize>, StoreError> {
        let mut tx = self.0.begin().await?;
        for (i, (sql, params, must_change)) in statements.iter().enumerate() {
            let done = bind(sqlx::query(sql), params).execute(&mut *tx).await?;
            if done.rows_affected() == 0 && *must_change {
                tx.rollback().await?;
                return Ok(Some(i));
            }
        }
        if let Some(hold) = hold {
            tokio::time::sleep(hold).await;
        }
        tx.commit().await?;
        Ok(None)
    }
}

/// The fleet's shared rate-limit buckets (`postgres_budgets`, `docs/stores.md` §Limits across
/// replicas).
impl crate::security::RateBudgets for PostgresStore {
    fn lease<'a>(
        &'a self,
        name: &'a str,
        capacity: u32,
        window_ms: u64,
        want: u32,
    ) -> futures::future::BoxFuture<'a, super::StoreResult<crate::security::Lease>> {
        Box::pin(super::postgres_budgets::lease(
            &self.pool, name, capacity, window_ms, want,
        ))
    }

    fn sweep_budgets(&self) -> futures::future::BoxFuture<'_, super::StoreResult<u64>> {
        Box::pin(super::postgres_budgets::sweep(&self.pool))
    }
}

impl_sql_store!(PostgresStore, sqlx::Postgres, changes);
#[cfg(feature = "oauth")]
super::sql_oauth::impl_sql_oauth!(PostgresStore, sqlx::Postgres);
