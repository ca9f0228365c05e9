//! The store traits besides [`TokenStore`](crate::security::TokenStore): sessions,
//! idempotency answers, MCP session bindings and the identity signing key.
//!
//! Like the token store, every method returns a boxed `Send` future, so the traits stay
//! dyn-compatible (`Arc<dyn SessionStore>`) and an implementation can await its database.

use futures::future::BoxFuture;

use super::records::{
    CommitWrite, Committed, ConfirmsSwap, IdempotencyEntry, McpBinding, SessionChanges,
    SessionRecord,
};
use super::StoreResult;

/// Where sessions live.
pub trait SessionStore: Send + Sync {
    /// Stores a new session; fails with [`StoreError::Conflict`](super::StoreError::Conflict) when the id exists.
    fn insert_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>>;

    /// The session `id`.
    fn load_session<'a>(&'a self, id: &'a str)
        -> BoxFuture<'a, StoreResult<Option<SessionRecord>>>;

    /// Writes one commit in one transaction (`docs/stores.md` §The commit log): only if the
    /// stored sequence number is still `write.seq - 1` (compare-and-set), and, with a key,
    /// only if no other commit recorded that key. The patch is appended to the session's
    /// log; a snapshot replaces the stored state and compacts the log. A commit without a
    /// snapshot that would take the log past its bounds is refused as
    /// [`Committed::SnapshotDue`].
    fn commit<'a>(&'a self, write: CommitWrite<'a>) -> BoxFuture<'a, StoreResult<Committed>>;

    /// Compare-and-set commit of the whole state: [`commit`](Self::commit) with `state` as its
    /// snapshot and no patch. Answers whether it was written: `false` means another writer
    /// committed first (or the session is gone), and the caller must reload.
    fn commit_state<'a>(
        &'a self,
        id: &'a str,
        seq: u64,
        state: &'a str,
        schema_hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let write = CommitWrite {
                id,
                seq,
                patch: None,
                snapshot: Some(state),
                schema_hash,
                now,
                key: None,
                undo: None,
            };
            Ok(self.commit(write).await? == Committed::Stored)
        })
    }

    /// What changed in session `id` after commit `after`: the patches of the newer commits
    /// when the log still holds them all, else the whole record; `None` when the session is
    /// gone. The default reloads the whole record.
    fn load_since<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Option<SessionChanges>>> {
        let _ = after;
        Box::pin(async move { Ok(self.load_session(id).await?.map(SessionChanges::Whole)) })
    }

    /// The undo records of session `id`'s commits after commit `after`, by sequence number
    /// ascending (JSON texts, as [`CommitWrite::undo`](super::CommitWrite::undo) wrote them);
    /// commits the log no longer holds have none. The default refuses: a store that keeps no
    /// undo records offers no undo.
    fn undo_records<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        let _ = (id, after);
        Box::pin(async {
            Err(super::StoreError::Unsupported(
                "this store keeps no undo records".into(),
            ))
        })
    }

    /// Replaces the JSON text of the confirmations with `confirms`, only if the stored text
    /// is still exactly `expected` (compare-and-set; `docs/stores.md` §Confirmations): a
    /// human's decision is written this way before it takes effect, so of two decisions on
    /// one proposal made through two replicas exactly one is stored. Answers the text stored
    /// now when another writer changed it, or that the session is gone.
    fn swap_confirms<'a>(
        &'a self,
        id: &'a str,
        expected: &'a str,
        confirms: &'a str,
    ) -> BoxFuture<'a, StoreResult<ConfirmsSwap>>;

    /// Replaces the JSON text of the activity-log tail.
    fn save_log_tail<'a>(
        &'a self,
        id: &'a str,
        log_tail: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Deletes the session (with its log); answers whether it existed. A shared store
    /// announces the delete to the other processes ([`changes`](Self::changes)), which drop
    /// the session from memory.
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// Deletes session `id` only if it was last used (`updated_at`) before `before`, in one
    /// conditional write: a session loaded or committed since it was found unused stays.
    /// Answers whether it was deleted. What expiry and eviction delete with
    /// (`docs/stores.md` §Bounds on disk).
    fn delete_session_unused<'a>(
        &'a self,
        id: &'a str,
        before: u64,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// The ids of the sessions owned by exactly `owner`, oldest first.
    fn sessions_of<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>>;

    /// How many sessions the store holds.
    fn session_count(&self) -> BoxFuture<'_, StoreResult<u64>>;

    /// Moves the session's `updated_at` (its last use) forward to `at`; never back.
    fn touch_session<'a>(&'a self, id: &'a str, at: u64) -> BoxFuture<'a, StoreResult<()>>;

    /// The ids of at most `limit` sessions last used (`updated_at`) before `before`, least
    /// recently used first: the candidates of stored-session expiry.
    fn stale_sessions(&self, before: u64, limit: u64) -> BoxFuture<'_, StoreResult<Vec<String>>>;

    /// The sessions other processes change, as they are changed: `<id> <seq> <1 if the
    /// confirmations changed, else 0>`, or `<id> deleted` (a bare id means "reload it");
    /// `None` when the store is not shared (must be called inside a tokio runtime).
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// Whether the store answers now: a trivial query on a database (the readiness probe,
    /// `docs/operations.md` §Health); in memory, always.
    fn ping(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async { Ok(()) })
    }

    /// The state of the task that hears other processes' changes ([`Self::changes`]).
    fn listener(&self) -> ChangesListener {
        ChangesListener::NotShared
    }

    /// Closes the store at the end of a shutdown (`docs/operations.md` §Shutdown): its
    /// connections, and the change listener with them. Nothing by default.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The state of a store's change listener ([`SessionStore::listener`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangesListener {
    /// The store is not shared: there is nothing to hear.
    NotShared,
    /// Shared, but nothing asked for the changes yet.
    NotStarted,
    /// Connected and listening.
    Listening,
    /// The connection was lost (or never made): reconnecting; changes made meanwhile are not
    /// heard.
    Reconnecting,
}

impl ChangesListener {
    /// Its wire name in the readiness answer.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangesListener::NotShared => "not-shared",
            ChangesListener::NotStarted => "not-started",
            ChangesListener::Listening => "listening",
            ChangesListener::Reconnecting => "reconnecting",
        }
    }

    /// Whether the listener lets the process serve (everything but [`Self::Reconnecting`]).
    pub fn is_ready(self) -> bool {
        self != ChangesListener::Reconnecting
    }
}

/// Where the first answers of keyed `/message` calls live (`docs/lap.md` §5.7).
pub trait IdempotencyRecords: Send + Sync {
    /// Stores the answer under `(tid, key)`, replacing an older one (the commit recorded
    /// under the key, if any, stays).
    fn put_idempotent(&self, entry: IdempotencyEntry) -> BoxFuture<'_, StoreResult<()>>;

    /// The answer stored under `(tid, key)`.
    fn get_idempotent<'a>(
        &'a self,
        tid: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<IdempotencyEntry>>>;

    /// Claims `(entry.tid, entry.key)` for a call in flight (`docs/stores.md` §Exactly once):
    /// writes `entry` (no answer, `claimed_at` = `entry.created_at`) when the key has no
    /// record, or its record was created before `expired_before` (past the window), or it is
    /// a claim made before `stale_before` whose message no commit applied. Answers whether
    /// the claim is this caller's. The default claims every key (no cross-process claims).
    fn claim_idempotent(
        &self,
        entry: IdempotencyEntry,
        expired_before: u64,
        stale_before: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let _ = (entry, expired_before, stale_before);
        Box::pin(async { Ok(true) })
    }

    /// Deletes the answers created before `before`; answers how many went.
    fn sweep_idempotent(&self, before: u64) -> BoxFuture<'_, StoreResult<u64>>;
}

/// Where the MCP session ids `/agent/mcp` issued are kept, with the token each is bound to.
/// `/agent/mcp` keeps them within its session caps (`docs/mcp.md` §Bounds on disk).
pub trait McpBindings: Send + Sync {
    /// Records MCP session `binding.id`; for an id already recorded, a non-empty `tid` (with
    /// its `token_hash`) or `init` replaces the stored one and the rest stays. A binding with an empty `init` only
    /// completes an id already recorded: it never creates one (so a deleted id stays deleted).
    fn bind_mcp(&self, binding: McpBinding) -> BoxFuture<'_, StoreResult<()>>;

    /// The binding of MCP session `id`.
    fn mcp_binding<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<McpBinding>>>;

    /// Deletes MCP session `id`: it is never rebuilt (nothing records it again).
    fn delete_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Clears the token MCP session `id` is bound to, its hash too (`disconnect_session`): it is not
    /// rebuilt bound after a restart, until a later [`bind_mcp`](Self::bind_mcp) names a
    /// token again. The default deletes the id instead (never rebuilt at all), the safe
    /// answer for a store that cannot clear a binding.
    fn unbind_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.delete_mcp(id)
    }

    /// The ids of the MCP sessions bound to token `tid`, oldest first.
    fn mcp_ids_of<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>>;

    /// How many MCP sessions the store holds.
    fn mcp_count(&self) -> BoxFuture<'_, StoreResult<u64>>;

    /// The ids of the `n` oldest MCP sessions, oldest first.
    fn oldest_mcp(&self, n: u64) -> BoxFuture<'_, StoreResult<Vec<String>>>;

    /// A broadcast of the ids of MCP sessions deleted by any process sharing the store
    /// (PostgreSQL: `NOTIFY` on `agent_mcp_changes`), so a replica holding one
    /// live ends it; `None` (the default) for stores that are not shared. A store that answers
    /// `Some` is a fleet's: `/agent/mcp` then refuses a bearer session it cannot record.
    fn deleted(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }
}

/// Where the identity cookie's signing key is kept, shared by every replica.
pub trait SigningKeys: Send + Sync {
    /// The key stored under `name`; when there is none, stores `candidate` and answers it.
    /// Concurrent callers all get the one key that was stored first.
    fn signing_key<'a>(
        &'a self,
        name: &'a str,
        candidate: Vec<u8>,
    ) -> BoxFuture<'a, StoreResult<Vec<u8>>>;

    /// Stores `bytes` under `name`, replacing any key stored there (a rotation).
    fn set_signing_key<'a>(
        &'a self,
        name: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, StoreResult<()>>;
}
