//! The records a store keeps besides token records: sessions, idempotency answers and MCP
//! session bindings.

/// One session as the store keeps it.
///
/// `state` is the JSON text of the whole typed state (not the redacted view agents see) at
/// commit `seq`: a store keeping a commit log rebuilds it from the latest snapshot and the
/// patches after it (`docs/stores.md` §The commit log); `seq` counts its commits. `confirms` and `log_tail` are JSON texts the session writes and
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

/// One commit as a store writes it, in one transaction (`docs/stores.md` §The commit log).
#[derive(Debug, Clone, Copy)]
pub struct CommitWrite<'a> {
    /// The session.
    pub id: &'a str,
    /// The commit's sequence number: written only if the stored one is `seq - 1`.
    pub seq: u64,
    /// JSON text of the commit's patch on the whole state (RFC 6902 ops), appended to the
    /// session's log; `None` when not known (the commit then carries a snapshot).
    pub patch: Option<&'a str>,
    /// JSON text of the whole state after the commit: a snapshot, which compacts the log.
    pub snapshot: Option<&'a str>,
    /// The `schemaHash` the commit is written under.
    pub schema_hash: &'a str,
    /// The time of the commit (ms since the epoch).
    pub now: u64,
    /// The `idempotencyKey` of the message this commit applied, recorded with it.
    pub key: Option<CommitKey<'a>>,
    /// JSON text of the commit's undo record (who made it, and the ops that revert it;
    /// `docs/stores.md` §The commit log), kept with the log: compacted with its patches and
    /// counted in its bytes.
    pub undo: Option<&'a str>,
}

/// The `idempotencyKey` a commit applied, recorded in the commit's transaction so a retry
/// replays instead of applying it twice (`docs/stores.md` §Exactly once).
#[derive(Debug, Clone, Copy)]
pub struct CommitKey<'a> {
    /// The token the key belongs to.
    pub tid: &'a str,
    /// The `idempotencyKey`.
    pub key: &'a str,
    /// JSON text of the message.
    pub msg: &'a str,
    /// When the first call came (ms since the epoch).
    pub created_at: u64,
}

/// What became of a [`CommitWrite`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// Written.
    Stored,
    /// Not written: the stored sequence number is not `seq - 1` (another writer committed
    /// first, or the session is gone).
    Raced,
    /// Not written: without a snapshot the log would pass its bounds; write it again with
    /// one. Carries the log as stored.
    SnapshotDue(LogState),
    /// Not written: the commit's key was recorded by another commit already.
    KeyUsed,
}

/// What became of a compare-and-set of a session's confirmations
/// ([`SessionStore::swap_confirms`](super::SessionStore::swap_confirms)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmsSwap {
    /// Written: the stored text was the one expected.
    Stored,
    /// Not written: another writer changed them; carries the text stored now.
    Changed(String),
    /// Not written: the session is gone from the store.
    Gone,
}

/// Where a session's commit log stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogState {
    /// The commit of the newest snapshot.
    pub snapshot_seq: u64,
    /// Bytes of the patches logged after it.
    pub log_bytes: u64,
}

/// What changed in a stored session after the commit a replica holds
/// ([`SessionStore::load_since`](super::SessionStore::load_since)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChanges {
    /// The patches of the commits after the one held, oldest first, with the fields a
    /// replica refreshes.
    Patches {
        /// The newest commit.
        seq: u64,
        /// The `schemaHash` it was written under.
        schema_hash: String,
        /// JSON text of the pending confirmations.
        confirms: String,
        /// JSON texts of the patches of the commits after the one held.
        patches: Vec<String>,
    },
    /// The commit held is behind the log's horizon (compacted away): the whole record.
    Whole(SessionRecord),
}

/// The first answer to a `/message` call with an `idempotencyKey`, as the store keeps it;
/// while it has none (`status` 0), the claim of the call in flight, and the commit that
/// applied its message once there is one.
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
    /// HTTP status of the answer (0: no answer yet, the call is in flight).
    pub status: u16,
    /// The answer body.
    pub body: String,
    /// JSON text of the answer's extra headers (`[["name","value"],…]`).
    pub headers: String,
    /// The commit that applied the message, `(session, seq)`, recorded in its transaction.
    pub commit: Option<(String, u64)>,
    /// When the call in flight claimed the key (ms since the epoch).
    pub claimed_at: u64,
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
    /// The stored hash of the token the session was bound with (never the token; empty: not
    /// known). A session is rebuilt bound only while the token's record still has this hash:
    /// a claim that rotated the token ends it.
    pub token_hash: String,
    /// JSON text of the `initialize` request's params (empty: not known yet).
    pub init: String,
    /// When it was issued (ms since the epoch).
    pub created_at: u64,
    /// Whether it was ended for good. Only rows written by earlier versions carry it (they
    /// marked a `DELETE`d id instead of removing it); such a row is never rebuilt. Write
    /// `false`: ending a session now deletes its row.
    pub deleted: bool,
}
