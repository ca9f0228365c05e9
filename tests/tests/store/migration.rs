//! Databases written by an earlier version (schema version 1: every commit rewrote the whole
//! state, no commit log, no version row) are migrated when opened (`docs/stores.md` §Schema
//! versions): on a real SQLite file and a real PostgreSQL, a stored session comes back as it
//! was, goes on committing through the log, and an old idempotency answer still replays.

use agent_examples::counter::{Counter, Msg};
use agent_tests::host_on;
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use tea_agent_runtime::security::SessionKind;
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::{config::HostConfig, Host};
use tea_agent_schema::protocol::WaitFor;

/// Version 7: the OAuth records' tables; version 8: the fleet's rate budgets; version 9: the
/// paired sockets' leases; version 10: the paired proposals; all empty (on a pool of either
/// database).
macro_rules! oauth_tables_exist {
    ($pool:expr) => {
        for table in [
            "agent_oauth_clients",
            "agent_oauth_codes",
            "agent_oauth_grants",
            "agent_oauth_refresh",
            "agent_oauth_access",
            "agent_rate_budgets",
            "agent_paired_sockets",
            "agent_paired_proposals",
        ] {
            let sql = format!("SELECT COUNT(*) FROM {table}");
            let (rows,): (i64,) = sqlx::query_as(&sql)
                .fetch_one($pool)
                .await
                .unwrap_or_else(|e| panic!("{table}: {e}"));
            assert_eq!(rows, 0, "{table}");
        }
    };
}

/// Version 1's tables, as that version created them.
fn v1_tables(bytes: &str) -> String {
    format!(
        "
CREATE TABLE agent_tokens (
    tid TEXT PRIMARY KEY, token_hash TEXT NOT NULL, uid TEXT, session_id TEXT NOT NULL,
    status TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL, pending_resume_until BIGINT, origin TEXT NOT NULL,
    label TEXT, ord BIGINT NOT NULL);
CREATE TABLE agent_sessions (
    id TEXT PRIMARY KEY, owner TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
    seq BIGINT NOT NULL, state TEXT NOT NULL, schema_hash TEXT NOT NULL,
    confirms TEXT NOT NULL, log_tail TEXT NOT NULL);
CREATE TABLE agent_idempotency (
    tid TEXT NOT NULL, key TEXT NOT NULL, created_at BIGINT NOT NULL, msg TEXT NOT NULL,
    status INTEGER NOT NULL, body TEXT NOT NULL, headers TEXT NOT NULL,
    PRIMARY KEY (tid, key));
CREATE TABLE agent_mcp_sessions (
    id TEXT PRIMARY KEY, tid TEXT NOT NULL, init TEXT NOT NULL, created_at BIGINT NOT NULL,
    deleted BOOLEAN NOT NULL);
CREATE TABLE agent_keys (name TEXT PRIMARY KEY, bytes {bytes} NOT NULL);
INSERT INTO agent_sessions VALUES ('old', 'u1', {now}, {now}, 41,
    '{{\"count\":41,\"lastDelete\":null,\"view\":\"home\"}}', 'HASH', '[]', '[]');
INSERT INTO agent_tokens VALUES ('t1', 'hash-t1', 'u1', 'old', 'active', {now}, {later}, {now},
    NULL, 'http://localhost', 'claude', 1);
INSERT INTO agent_tokens VALUES ('t2', 'hash-t2', 'u1', 'paired-6e1c', 'awaiting-ws', {now},
    {later}, {now}, NULL, 'http://localhost', NULL, 2);
INSERT INTO agent_idempotency VALUES ('t1', 'k1', {now}, '{{\"type\":\"inc\"}}', 200,
    '{{\"status\":\"dispatched\"}}', '[]');
",
        now = now_ms(),
        later = now_ms() + 3_600_000
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
}

fn hash() -> String {
    Host::new(Counter)
        .expect("host")
        .catalog()
        .schema_hash()
        .to_owned()
}

/// Opens the migrated database, checks the old session and answer, commits past a snapshot,
/// and reads it all back from a second opening.
async fn goes_on_after_migration(spec: &str) {
    let stores = Stores::open(spec).await.expect("open migrates");
    let entry = stores
        .idempotency
        .get_idempotent("t1", "k1")
        .await
        .expect("get")
        .expect("the old answer");
    assert_eq!((entry.status, entry.commit), (200, None));
    // Version 4 made the session kind a field: records stored before take it from the
    // session id a paired mint gave them.
    for (tid, kind) in [("t1", SessionKind::Hosted), ("t2", SessionKind::Paired)] {
        let record = stores.tokens.find_by_tid(tid).await.expect("find");
        assert_eq!(record.map(|r| r.kind), Some(kind), "{tid}");
    }
    let host = host_on(Counter, &stores, HostConfig::default());
    let session = host
        .load_session("old")
        .await
        .expect("the old session loads");
    assert_eq!(session.state()["count"], 41);
    let mut idle = DispatchOptions::default();
    idle.wait_for = WaitFor::Idle;
    for _ in 0..200 {
        session.dispatch_msg(Msg::Inc, idle).await.expect("inc");
    }
    assert_eq!(session.state()["count"], 241);
    drop(session);
    drop(host);
    let again = Stores::open(spec).await.expect("reopen");
    let record = again
        .sessions
        .load_session("old")
        .await
        .expect("load")
        .expect("old");
    assert_eq!(record.seq, 241);
    let state: serde_json::Value = serde_json::from_str(&record.state).expect("json");
    assert_eq!(state["count"], 241);
}

#[tokio::test]
async fn a_version_1_sqlite_file_is_migrated() {
    let dir = TempDir::new("migrate");
    let path = dir.path().join("old.db");
    let spec = dir.file("old.db");
    {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.expect("file");
        let sql = v1_tables("BLOB").replace("HASH", &hash());
        sqlx::raw_sql(&sql).execute(&pool).await.expect("version 1");
        pool.close().await;
    }
    goes_on_after_migration(&spec).await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{spec}"))
        .await
        .expect("file");
    let (version,): (i64,) = sqlx::query_as("SELECT value FROM agent_meta WHERE name = 'schema'")
        .fetch_one(&pool)
        .await
        .expect("version row");
    assert_eq!(version, 10);
    // Version 5: the undo records' table (the commits after the migration write to it).
    let (records,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM agent_session_undo")
        .fetch_one(&pool)
        .await
        .expect("the undo table");
    assert!(
        records > 0,
        "the commits after the migration keep undo records"
    );
    // Version 6: a token record's scopes (NULL for the rows before: every scope).
    let _: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM agent_tokens WHERE scope IS NULL")
        .fetch_one(&pool)
        .await
        .expect("the scope column");
    oauth_tables_exist!(&pool);
    pool.close().await;
}

#[tokio::test]
async fn a_version_1_postgres_database_is_migrated() {
    let pg = PgServer::start();
    {
        let pool = sqlx::PgPool::connect(&pg.url()).await.expect("connect");
        let sql = v1_tables("BYTEA").replace("HASH", &hash());
        sqlx::raw_sql(&sql).execute(&pool).await.expect("version 1");
        pool.close().await;
    }
    goes_on_after_migration(&pg.url()).await;
    // A database newer than this build is refused, not written wrongly.
    let pool = sqlx::PgPool::connect(&pg.url()).await.expect("connect");
    sqlx::query("UPDATE agent_meta SET value = 99 WHERE name = 'schema'")
        .execute(&pool)
        .await
        .expect("bump");
    pool.close().await;
    let err = Stores::open(&pg.url()).await.expect_err("too new");
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

/// A version-2 PostgreSQL database (its change trigger fired on `UPDATE` only) gets the
/// trigger that also announces deletes when a later build opens it (`docs/stores.md`
/// §PostgreSQL: replicas).
#[tokio::test]
async fn a_version_2_postgres_database_gets_the_delete_trigger() {
    let pg = PgServer::start();
    drop(Stores::open(&pg.url()).await.expect("open"));
    let pool = sqlx::PgPool::connect(&pg.url()).await.expect("connect");
    sqlx::raw_sql(
        "DROP TRIGGER agent_sessions_changed ON agent_sessions;
         CREATE TRIGGER agent_sessions_changed AFTER UPDATE ON agent_sessions
             FOR EACH ROW EXECUTE FUNCTION agent_sessions_notify();
         ALTER TABLE agent_mcp_sessions DROP COLUMN token_hash;
         ALTER TABLE agent_tokens DROP COLUMN kind;
         ALTER TABLE agent_tokens DROP COLUMN scope;
         DROP TABLE agent_session_undo;
         DROP TABLE agent_oauth_clients, agent_oauth_codes, agent_oauth_grants,
             agent_oauth_refresh, agent_oauth_access;
         UPDATE agent_meta SET value = 2 WHERE name = 'schema';",
    )
    .execute(&pool)
    .await
    .expect("version 2");
    let trigger = || async {
        let (def,): (String,) = sqlx::query_as(
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger \
             WHERE tgname = 'agent_sessions_changed'",
        )
        .fetch_one(&pool)
        .await
        .expect("trigger");
        def
    };
    assert!(!trigger().await.contains("DELETE"));
    drop(Stores::open(&pg.url()).await.expect("migrate"));
    assert!(trigger().await.contains("DELETE"), "{}", trigger().await);
    let (version,): (i64,) = sqlx::query_as("SELECT value FROM agent_meta WHERE name = 'schema'")
        .fetch_one(&pool)
        .await
        .expect("version row");
    assert_eq!(version, 10);
    oauth_tables_exist!(&pool);
    pool.close().await;
}
