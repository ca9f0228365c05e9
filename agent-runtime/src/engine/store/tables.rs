//! The tables both database stores create when missing, and the migrations that bring a
//! database written by an earlier version up to this one's schema, written once.

/// The tables both databases create when missing, as one string literal; `$bytes` is the
/// binary column type (`BLOB`, `BYTEA`).
macro_rules! tables {
    ($bytes:literal) => {
        concat!(
            "
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
CREATE INDEX IF NOT EXISTS agent_sessions_updated ON agent_sessions (updated_at);
CREATE TABLE IF NOT EXISTS agent_idempotency (
    tid TEXT NOT NULL, key TEXT NOT NULL, created_at BIGINT NOT NULL, msg TEXT NOT NULL,
    status INTEGER NOT NULL, body TEXT NOT NULL, headers TEXT NOT NULL,
    PRIMARY KEY (tid, key));
CREATE TABLE IF NOT EXISTS agent_mcp_sessions (
    id TEXT PRIMARY KEY, tid TEXT NOT NULL, init TEXT NOT NULL, created_at BIGINT NOT NULL,
    deleted BOOLEAN NOT NULL);
CREATE INDEX IF NOT EXISTS agent_mcp_sessions_tid ON agent_mcp_sessions (tid);
CREATE TABLE IF NOT EXISTS agent_keys (name TEXT PRIMARY KEY, bytes ",
            $bytes,
            " NOT NULL);
CREATE TABLE IF NOT EXISTS agent_meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
"
        )
    };
}
pub(super) use tables;

/// The schema version this build reads and writes (`agent_meta`, name `schema`). A database
/// without the row is at version 1: the tables above as version 1 created them.
pub(super) const SCHEMA_VERSION: i64 = 10;

/// The migrations, each with the version it reaches, in order; each runs once, in the
/// transaction that opens the store (`docs/stores.md` §Schema versions).
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (
        2,
        // The commit log (issue 23): the stored state becomes the newest snapshot, moved to
        // `agent_session_snapshots` (an existing row's state is the state at its `seq`, so its
        // snapshot is at `seq`; `agent_sessions.state` is left empty), the patches after it go
        // to `agent_session_log`; the idempotency records get the commit that applied
        // their message and the claim of a call in flight (issue 22).
        "
ALTER TABLE agent_sessions ADD COLUMN snapshot_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN log_bytes BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS agent_session_snapshots (
    session_id TEXT PRIMARY KEY, state TEXT NOT NULL);
INSERT INTO agent_session_snapshots (session_id, state) SELECT id, state FROM agent_sessions;
UPDATE agent_sessions SET snapshot_seq = seq, state = '';
CREATE TABLE IF NOT EXISTS agent_session_log (
    session_id TEXT NOT NULL, seq BIGINT NOT NULL, patch TEXT NOT NULL,
    PRIMARY KEY (session_id, seq));
ALTER TABLE agent_idempotency ADD COLUMN session_id TEXT;
ALTER TABLE agent_idempotency ADD COLUMN seq BIGINT;
ALTER TABLE agent_idempotency ADD COLUMN claimed_at BIGINT NOT NULL DEFAULT 0;
",
    ),
    (
        3,
        // An MCP session's binding keeps the hash of the token it was bound with (issue 31):
        // a session is rebuilt bound only while the token's record still has that hash. Rows
        // written before have none, so they are rebuilt only with the token itself as bearer.
        // PostgreSQL's change trigger also announces deletes (`<id> deleted`): opening a
        // database below this version runs the schema again, which replaces the trigger.
        "ALTER TABLE agent_mcp_sessions ADD COLUMN token_hash TEXT NOT NULL DEFAULT '';",
    ),
    (
        4,
        // A token's session kind is a field of its record (issue 31), no longer read from a
        // `paired-` prefix of its session id; records written before get it from that prefix.
        "
ALTER TABLE agent_tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'hosted';
UPDATE agent_tokens SET kind = 'paired' WHERE session_id LIKE 'paired-%';
",
    ),
    (
        5,
        // Undo (issue 38): each commit's undo record (who made it, the ops that revert it),
        // beside its patch and compacted with it.
        "
CREATE TABLE IF NOT EXISTS agent_session_undo (
    session_id TEXT NOT NULL, seq BIGINT NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (session_id, seq));
",
    ),
    (
        6,
        // A token record carries its scopes (issue 34, `docs/authorization.md`): NULL, every
        // scope, for the records written before, as minted `agt_` tokens always had.
        "ALTER TABLE agent_tokens ADD COLUMN scope TEXT;",
    ),
    (
        7,
        // Durable OAuth (`docs/authorization.md` §Where the records live): registrations,
        // codes, grants, and their refresh and access tokens, every secret as its SHA-256.
        // Created whether or not the build has the feature `oauth`, so one database serves
        // every build.
        "
CREATE TABLE IF NOT EXISTS agent_oauth_clients (
    client_id TEXT PRIMARY KEY, client_name TEXT NOT NULL, redirect_uris TEXT NOT NULL,
    registered_at BIGINT NOT NULL, expires_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_oauth_codes (
    hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
    challenge TEXT NOT NULL, scope TEXT NOT NULL, uid TEXT NOT NULL, session_id TEXT NOT NULL,
    resource TEXT NOT NULL, expires_at BIGINT NOT NULL, spent BOOLEAN NOT NULL,
    reused BOOLEAN NOT NULL DEFAULT FALSE, grant_id TEXT);
CREATE TABLE IF NOT EXISTS agent_oauth_grants (
    id TEXT PRIMARY KEY, client_id TEXT NOT NULL, tid TEXT NOT NULL, uid TEXT NOT NULL,
    session_id TEXT NOT NULL, scope TEXT NOT NULL, resource TEXT NOT NULL,
    created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, refresh_hash TEXT NOT NULL,
    generation BIGINT NOT NULL, revoked BOOLEAN NOT NULL);
CREATE TABLE IF NOT EXISTS agent_oauth_refresh (
    hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL, generation BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_oauth_refresh_grant ON agent_oauth_refresh (grant_id);
CREATE TABLE IF NOT EXISTS agent_oauth_access (
    hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL, tid TEXT NOT NULL,
    expires_at BIGINT NOT NULL, generation BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_oauth_access_grant ON agent_oauth_access (grant_id);
",
    ),
    (8, FLEET_LIMITS_MIGRATION),
    (9, PAIRED_SOCKETS_MIGRATION),
    (10, PAIRED_PROPOSALS_MIGRATION),
];

/// Limits shared by a fleet (issue 50, `docs/stores.md` §Limits across replicas): one token
/// bucket per rate-limit key, which PostgreSQL replicas lease tokens from in slices
/// (`tokens` left at `at_ms` of the store's clock, `full_at_ms` when it is full again, then
/// deletable; PostgreSQL's `agent_rate_lease` function takes them). Created by every build (only PostgreSQL writes it),
/// so one database serves every build. PostgreSQL's schema, run again with this migration, also
/// announces a deleted MCP binding on `agent_mcp_changes`.
const FLEET_LIMITS_MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS agent_rate_budgets (
    name TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, at_ms BIGINT NOT NULL,
    full_at_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_rate_budgets_full ON agent_rate_budgets (full_at_ms);
";

/// Which replica of a fleet holds each paired session's socket (issue 50, `docs/pairing.md`
/// §A fleet of replicas): one lease row per token id, the replica's id and the address other
/// replicas reach it at, the epoch (one more at every takeover) and the replica's last
/// heartbeat (milliseconds). Created whether or not the build has the feature `fleet`, so one
/// database serves every build; its own constant so that a merge can renumber it.
const PAIRED_SOCKETS_MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS agent_paired_sockets (
    tid TEXT PRIMARY KEY, replica TEXT NOT NULL, address TEXT NOT NULL,
    epoch BIGINT NOT NULL, heartbeat BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_paired_sockets_replica ON agent_paired_sockets (replica);
";

/// The proposals a fleet's replicas relayed for paired sessions, and the human's decisions on
/// them (issue 50, `docs/pairing.md` §A fleet of replicas): one row per token id and
/// confirmation id, when it was proposed and, once decided, the decision
/// (`confirmed`, `user-cancelled`, `withdrawn`), the `stateAfter` as the app sent it (within
/// its budget) and when. So `/confirm-result` answers after the app re-paired with another
/// replica. Created by every build, like `agent_paired_sockets`, which is made again with
/// `dedupes`: the app holding the socket answers a repeated `idempotencyKey` with its first
/// answer (its `hello` said `idempotency-keys`), so a keyed message whose hop broke may be sent
/// to it again. Its rows are leases of live sockets, and no replica of an older version runs
/// while the database is upgraded (`docs/stores.md` §Schema versions): none is lost.
const PAIRED_PROPOSALS_MIGRATION: &str = "
DROP TABLE IF EXISTS agent_paired_sockets;
CREATE TABLE agent_paired_sockets (
    tid TEXT PRIMARY KEY, replica TEXT NOT NULL, address TEXT NOT NULL,
    epoch BIGINT NOT NULL, heartbeat BIGINT NOT NULL,
    dedupes BOOLEAN NOT NULL DEFAULT FALSE);
CREATE INDEX IF NOT EXISTS agent_paired_sockets_replica ON agent_paired_sockets (replica);
CREATE TABLE IF NOT EXISTS agent_paired_proposals (
    tid TEXT NOT NULL, confirm_id TEXT NOT NULL, at BIGINT NOT NULL,
    decision TEXT, state_after TEXT, decided_at BIGINT,
    PRIMARY KEY (tid, confirm_id));
CREATE INDEX IF NOT EXISTS agent_paired_proposals_at ON agent_paired_proposals (at);
";

/// Whether the database behind `$pool` is at [`SCHEMA_VERSION`] already (then opening it
/// takes no lock and runs no DDL: a replica starting under load does not queue behind the
/// others' writes); evaluates to a `bool`.
macro_rules! is_current {
    ($pool:expr) => {
        async {
            let stored: Result<Option<i64>, sqlx::Error> =
                sqlx::query_scalar("SELECT value FROM agent_meta WHERE name = 'schema'")
                    .fetch_optional($pool)
                    .await;
            matches!(stored, Ok(Some(v)) if v == $crate::engine::store::tables::SCHEMA_VERSION)
        }
    };
}
pub(super) use is_current;

/// Creates the tables when missing and runs the migrations the database has not had, on
/// `$conn` (a transaction); evaluates to `Result<(), StoreError>`. A database of a newer
/// version than this build's is refused: this build would write it wrongly.
macro_rules! migrate {
    ($conn:expr, $schema:expr) => {
        async {
            use $crate::engine::store::tables::{MIGRATIONS, SCHEMA_VERSION};
            sqlx::raw_sql($schema).execute(&mut *$conn).await?;
            let stored: Option<i64> =
                sqlx::query_scalar("SELECT value FROM agent_meta WHERE name = 'schema'")
                    .fetch_optional(&mut *$conn)
                    .await?;
            let version = stored.unwrap_or(1);
            if version > SCHEMA_VERSION {
                return Err($crate::engine::store::StoreError::Unsupported(format!(
                    "the database has schema version {version}; this build knows up to \
                     {SCHEMA_VERSION}: run a newer version"
                )));
            }
            for (reached, sql) in MIGRATIONS {
                if *reached > version {
                    sqlx::raw_sql(sql).execute(&mut *$conn).await?;
                }
            }
            sqlx::query(
                "INSERT INTO agent_meta (name, value) VALUES ('schema', $1) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            )
            .bind(SCHEMA_VERSION)
            .execute(&mut *$conn)
            .await?;
            Ok::<(), $crate::engine::store::StoreError>(())
        }
    };
}
pub(super) use migrate;
