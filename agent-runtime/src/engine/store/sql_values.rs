//! Values between Rust and both databases: a write's parameters ([`Param`]), milliseconds and
//! counters (`u64` ↔ `BIGINT`), token statuses, and how a failed token-store call is logged.
//! Used by the store macros of `sql` and `sql_tokens`, which expand in `sqlite` and `postgres`.

use crate::security::{SessionKind, TokenStatus};

use super::StoreError;

/// The token status spelled `text` (an unknown spelling reads as revoked: a record the code
/// cannot understand must not authenticate anyone).
pub(crate) fn status_from(text: &str) -> TokenStatus {
    text.parse().unwrap_or(TokenStatus::Revoked)
}

/// A stored session kind; a spelling this build does not know is a decode error (a record of
/// unknown kind is neither trusted as hosted nor as paired).
pub(crate) fn kind_from(text: &str) -> Result<SessionKind, sqlx::Error> {
    text.parse()
        .map_err(|e: crate::security::UnknownSessionKind| sqlx::Error::Decode(Box::new(e)))
}

/// Milliseconds and counters are `u64` in Rust and `BIGINT` in the database.
pub(crate) fn to_db(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn from_db(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e.as_database_error() {
            Some(d) if d.is_unique_violation() => StoreError::Conflict(d.message().to_owned()),
            _ => StoreError::Database(e.to_string()),
        }
    }
}

/// Logs a failed background write of the token store (the coalesced touches, which no caller
/// waits for; every other call answers its failure).
pub(crate) fn token_failure(op: &str, e: &dyn std::fmt::Display) {
    tracing::error!(target: "tea_agent_runtime::store", "token store {op} failed: {e}");
}

/// A value bound to a write's `$N` parameter (`N` = its position, from 1).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Text(&'a str),
    /// A text that can be big (a state snapshot, a patch), inserted into `column` of an
    /// `INSERT` (or upsert) of one row. PostgreSQL binds it as text; the SQLite writer writes
    /// a big one in pieces (`sqlite_writer_thread`).
    Document(
        &'a str,
        // Read by the SQLite writer only.
        #[cfg_attr(not(feature = "sqlite"), allow(dead_code))] DocumentColumn,
    ),
    MaybeText(Option<&'a str>),
    Int(i64),
    Int32(i32),
    MaybeInt(Option<i64>),
    Bool(bool),
}

/// Where a [`Param::Document`] goes: the table's column, both named by the SQL text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DocumentColumn {
    pub(crate) table: &'static str,
    pub(crate) column: &'static str,
}

/// `agent_session_snapshots.state`: a session's whole state.
pub(crate) const SNAPSHOT_STATE: DocumentColumn = DocumentColumn {
    table: "agent_session_snapshots",
    column: "state",
};

/// `agent_session_log.patch`: one commit's patch.
pub(crate) const LOG_PATCH: DocumentColumn = DocumentColumn {
    table: "agent_session_log",
    column: "patch",
};

/// `agent_session_undo.record`: one commit's undo record (its inverse can be as big as a
/// snapshot).
pub(crate) const UNDO_RECORD: DocumentColumn = DocumentColumn {
    table: "agent_session_undo",
    column: "record",
};

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Param::MaybeText(v.as_deref())
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Param::MaybeText(v)
    }
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}

impl From<i32> for Param<'_> {
    fn from(v: i32) -> Self {
        Param::Int32(v)
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(v: Option<i64>) -> Self {
        Param::MaybeInt(v)
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Bool(v)
    }
}
