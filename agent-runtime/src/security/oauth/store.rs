//! Where the OAuth records live ([`OAuthStore`]): dynamic client registrations, pending
//! codes, grants with their refresh token hashes, and access tokens by hash. In memory
//! (`oauth/memory`) by default; in the SQLite and PostgreSQL stores (`engine/store/sql_oauth`)
//! when the server has a durable store, so a restart keeps every grant and every replica sees
//! a rotation or a revoke at once.
//!
//! The trait holds the primitives whose atomicity matters (taking a code, rotating a refresh
//! token, the bounded inserts); what they mean (reuse revokes, who may refresh) is decided
//! once, above every implementation, in `grants` and `clients`. Like the token store, every
//! method returns a boxed `Send` future (the trait is dyn-compatible) and a failure is an
//! error, never an empty answer. Every secret is stored as its SHA-256 only.

use futures::future::BoxFuture;

use super::records::{AccessRecord, ClientRecord, CodeRecord, CodeTaken, GrantRecord};
use crate::security::store_error::StoreResult;

/// Retired refresh tokens remembered per grant (a reuse of one revokes the grant).
pub(crate) const RETIRED_PER_GRANT: u64 = 16;

/// Live access tokens per grant: a refresh past it retires the oldest.
pub(crate) const ACCESS_PER_GRANT: u64 = 4;

/// A grant to store, with its first refresh and access tokens (generation 0).
#[derive(Debug, Clone)]
pub(crate) struct NewGrant {
    /// The hash of the code that made it (the code then names the grant: a reuse revokes it).
    pub(crate) code_hash: String,
    pub(crate) grant: GrantRecord,
    pub(crate) access_hash: String,
    pub(crate) access_expires_at: u64,
}

/// A rotation of a grant's refresh token, applied only while the grant's current refresh
/// token is still `old_hash` (compare-and-set: of two replicas rotating the same token, one
/// wins).
#[derive(Debug, Clone)]
pub(crate) struct Rotation {
    pub(crate) grant_id: String,
    pub(crate) tid: String,
    pub(crate) old_hash: String,
    pub(crate) new_hash: String,
    /// The grant's generation after the rotation (the one it had + 1): the new refresh and
    /// access tokens carry it, and the bounds per grant count by it.
    pub(crate) generation: u64,
    pub(crate) access_hash: String,
    pub(crate) access_expires_at: u64,
}

/// What [`OAuthStore::create_grant`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrantStored {
    /// The grant and its first tokens are stored; the code names the grant.
    Stored,
    /// `max` grants are stored already: nothing was.
    Full,
    /// The code was presented again (or swept, expired) after it was taken and before the
    /// grant was stored: nothing was stored (RFC 6749 §4.1.2: a code used twice grants
    /// nothing that lasts).
    CodeNotHeld,
}

/// Where the OAuth records live (`docs/authorization.md` §Where the records live).
pub(crate) trait OAuthStore: Send + Sync {
    /// Stores a dynamic registration after dropping the expired ones, unless `max` live ones
    /// are stored already: answers whether it was stored.
    fn register_client(
        &self,
        client: ClientRecord,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<bool>>;

    /// The registration `client_id`, unless it is unknown or expired at `now`.
    fn find_client<'a>(
        &'a self,
        client_id: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<Option<ClientRecord>>>;

    /// The registration `client_id` was used: it now expires at `expires_at` (never earlier
    /// than it did).
    fn client_used<'a>(
        &'a self,
        client_id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Stores the code of hash `hash` after dropping the expired ones, unless `max` codes
    /// wait to be exchanged already: answers whether it was stored.
    fn add_code(
        &self,
        hash: String,
        code: CodeRecord,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<bool>>;

    /// Spends the code of hash `hash`, atomically: of two callers presenting it (on two
    /// replicas), one gets it `Fresh` (or `Expired`), the other `Reused`. A reuse is recorded
    /// on the code before its grant is read, so a grant not stored yet never will be
    /// ([`GrantStored::CodeNotHeld`]) and one stored already is named (to be revoked).
    fn take_code<'a>(&'a self, hash: &'a str, now: u64) -> BoxFuture<'a, StoreResult<CodeTaken>>;

    /// Stores a grant with its first tokens and names it on its code, after dropping the
    /// grants past their end or revoked (with their tokens), unless `max` grants are stored
    /// already or the code was reused since it was taken (in one transaction: a reuse
    /// recorded at the same time either comes first and nothing is stored, or after and
    /// reads the grant's id).
    fn create_grant(
        &self,
        grant: NewGrant,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<GrantStored>>;

    /// Applies `rotation` if the grant is unrevoked, unexpired at `now` and its refresh token
    /// is still `rotation.old_hash`: the new refresh token becomes current, the old one is
    /// retired (the [`RETIRED_PER_GRANT`] newest retired are remembered), the new access
    /// token is stored (the [`ACCESS_PER_GRANT`] newest are kept). Answers whether it was
    /// applied.
    fn rotate(&self, rotation: Rotation, now: u64) -> BoxFuture<'_, StoreResult<bool>>;

    /// The grant a refresh token (current or remembered retired, by hash) belongs to.
    fn grant_by_refresh<'a>(
        &'a self,
        hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>>;

    /// The grant an access token (by hash) belongs to, whatever its expiry.
    fn grant_by_access<'a>(
        &'a self,
        hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>>;

    /// The access token of hash `hash`: unexpired at `now`, its grant unrevoked. The request
    /// path of `/agent/mcp`: one lookup by primary key.
    fn access<'a>(
        &'a self,
        hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<Option<AccessRecord>>>;

    /// Revokes grant `id` and drops its access tokens; answers the grant as it was before.
    fn revoke_grant<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>>;

    /// Drops one access token; answers whether it existed.
    fn revoke_access<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, StoreResult<bool>>;
}
