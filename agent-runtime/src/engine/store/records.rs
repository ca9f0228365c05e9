//! The records a store keeps besides token records: sessions, idempotency answers and MCP
//! session bindings.

/// One session as the store keeps it.
///
/// `state` is the JSON text of the whole typed state (not the redacted view agents see);
/// `seq` counts its commits. `confirms` and `log_tail` are JSON texts the session writes and
/// reads back (pending confirmations, the newest activity-log entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session id.
    pub id: String,
    /// The owning identity.
    pub owner: Option<String>,
    /// Creation time (ms since the epoch).
    pub created_at: u64,
    /// Time of the newest write (ms since the epoch).
    pub updated_at: u64,
    /// Number of commits so far.
    pub seq: u64,
    /// JSON text of the committed state.
    pub state: String,
    /// The `schemaHash` of the describe document the state was committed under.
    pub schema_hash: String,
    /// JSON text of the pending confirmations (`[]` when none).
    pub confirms: String,
    /// JSON text of the activity-log tail, oldest first (`[]` when empty).
    pub log_tail: String,
}

impl SessionRecord {
    /// A record for a new session at `now`: sequence 0, no confirmations, an empty log.
    pub fn new(
        id: impl Into<String>,
        owner: Option<String>,
        now: u64,
        state: String,
        schema_hash: impl Into<String>,
    ) -> Self {
        SessionRecord {
            id: id.into(),
            owner,
            created_at: now,
            updated_at: now,
            seq: 0,
            state,
            schema_hash: schema_hash.into(),
            confirms: "[]".into(),
            log_tail: "[]".into(),
        }
    }
}

/// The first answer to a `/message` call with an `idempotencyKey`, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyEntry {
    /// The token the key belongs to.
    pub tid: String,
    /// The `idempotencyKey`.
    pub key: String,
    /// When the first call came (ms since the epoch).
    pub created_at: u64,
    /// JSON text of the first call's `msg`.
    pub msg: String,
    /// HTTP status of the answer.
    pub status: u16,
    /// The answer body.
    pub body: String,
    /// JSON text of the answer's extra headers (`[["name","value"],…]`).
    pub headers: String,
}

/// An MCP session id issued by `/agent/mcp`, the token it is bound to and the client's
/// `initialize` parameters (what rebuilding the session after a restart replays).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpBinding {
    /// The key of the MCP session: `/agent/mcp` stores the lowercase hex SHA-256 of its
    /// `Mcp-Session-Id`, never the id itself (a live id is a credential).
    pub id: String,
    /// The token id (`tid`) the MCP session is bound to (empty: not known yet).
    pub tid: String,
    /// JSON text of the `initialize` request's params (empty: not known yet).
    pub init: String,
    /// When it was issued (ms since the epoch).
    pub created_at: u64,
    /// Whether it was ended for good. Only rows written by earlier versions carry it (they
    /// marked a `DELETE`d id instead of removing it); such a row is never rebuilt. Write
    /// `false`: ending a session now deletes its row.
    pub deleted: bool,
}
