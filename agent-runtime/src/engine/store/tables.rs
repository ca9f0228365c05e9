//! The tables both database stores create when missing, written once.

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
"
        )
    };
}
pub(super) use tables;
