//! Authorization codes, grants and their tokens (`docs/authorization.md` §The model).
//!
//! A person's consent makes a *code* (single use, short lived, bound to the client, the
//! redirect URI, the PKCE challenge and the resource). Exchanging it makes a *grant*: one
//! agent token record of the chosen session (in the token store, so the gate, rate limits,
//! audit, expiry and revocation treat it as any agent token) plus a refresh token and short
//! lived access tokens that stand for it. A refresh rotates the refresh token; presenting a
//! retired one revokes the whole grant (it was copied). Every secret is kept as its SHA-256
//! only. The records live in an [`OAuthStore`] (memory, SQLite or PostgreSQL); what a
//! presented code or token means is decided here, once for every store.

use std::sync::Arc;

use super::records::{AccessRecord, CodeRecord, CodeTaken, GrantRecord};
use super::secret::{Secret, SecretKind};
use super::store::{GrantStored, NewGrant, OAuthStore, Rotation};
use crate::security::store_error::StoreResult;

/// The lifetimes and bounds of a server's grants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) code_ttl_ms: u64,
    pub(crate) access_ttl_ms: u64,
    pub(crate) grant_ttl_ms: u64,
    pub(crate) max_codes: usize,
    pub(crate) max_grants: usize,
}

/// Tokens handed out once: an access token and a refresh token, with the grant they stand
/// for.
#[derive(Debug)]
pub(crate) struct Issued {
    pub(crate) access: Secret,
    pub(crate) refresh: Secret,
    pub(crate) grant: GrantRecord,
    pub(crate) access_expires_at: u64,
}

/// What presenting a refresh token found.
#[derive(Debug)]
pub(crate) enum Refreshed {
    /// Rotated: new tokens.
    Rotated(Issued),
    /// A retired refresh token (or one another replica rotated first): the grant is revoked
    /// now (the caller revokes its record).
    Reused(GrantRecord),
    /// Another client's, unknown, revoked or past the grant's end.
    Refused(&'static str),
}

/// Why a code or a grant could not be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full(pub(crate) usize);

/// Why a grant was not made: a refusal or a store failure.
#[derive(Debug)]
pub(crate) enum GrantError {
    Full(Full),
    /// The code was presented again before its grant was stored: nothing was granted.
    CodeReused,
    Store(crate::security::StoreError),
}

impl From<crate::security::StoreError> for GrantError {
    fn from(e: crate::security::StoreError) -> Self {
        GrantError::Store(e)
    }
}

/// The codes, grants and tokens of one server, in its [`OAuthStore`].
pub(crate) struct Grants {
    store: Arc<dyn OAuthStore>,
    limits: Limits,
}

impl Grants {
    pub(crate) fn new(store: Arc<dyn OAuthStore>, limits: Limits) -> Self {
        Grants { store, limits }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Keeps a new code (its text is handed to the client once); `Full` when the pending
    /// codes are at their bound.
    pub(crate) async fn add_code(
        &self,
        code: CodeRecord,
        now: u64,
    ) -> StoreResult<Result<Secret, Full>> {
        let (secret, hash) = Secret::new(SecretKind::Code);
        let max = self.limits.max_codes as u64;
        Ok(match self.store.add_code(hash, code, max, now).await? {
            true => Ok(secret),
            false => Err(Full(self.limits.max_codes)),
        })
    }

    /// Spends the code of hash `hash` (single use: a second presentation is `Reused`).
    pub(crate) async fn take_code(&self, hash: &str, now: u64) -> StoreResult<CodeTaken> {
        self.store.take_code(hash, now).await
    }

    /// Makes the grant of spent code `code_hash` (`code`), for agent token record `tid`.
    pub(crate) async fn create_grant(
        &self,
        code_hash: &str,
        code: CodeRecord,
        tid: String,
        now: u64,
    ) -> Result<Issued, GrantError> {
        let (refresh, refresh_hash) = Secret::new(SecretKind::Refresh);
        let grant = GrantRecord {
            id: uuid::Uuid::new_v4().to_string(),
            client_id: code.client_id,
            tid,
            uid: code.uid,
            session_id: code.session_id,
            scope: code.scope,
            resource: code.resource,
            created_at: now,
            expires_at: now.saturating_add(self.limits.grant_ttl_ms),
            refresh_hash,
            generation: 0,
            revoked: false,
        };
        let (access, access_hash) = Secret::new(SecretKind::Access);
        let access_expires_at = self.access_expiry(&grant, now);
        let new = NewGrant {
            code_hash: code_hash.to_owned(),
            grant: grant.clone(),
            access_hash,
            access_expires_at,
        };
        let max = self.limits.max_grants as u64;
        match self.store.create_grant(new, max, now).await? {
            GrantStored::Stored => {}
            GrantStored::Full => return Err(GrantError::Full(Full(self.limits.max_grants))),
            GrantStored::CodeNotHeld => return Err(GrantError::CodeReused),
        }
        Ok(Issued {
            access,
            refresh,
            grant,
            access_expires_at,
        })
    }

    /// An access token never outlives its grant.
    fn access_expiry(&self, grant: &GrantRecord, now: u64) -> u64 {
        now.saturating_add(self.limits.access_ttl_ms)
            .min(grant.expires_at)
    }

    /// Rotates the refresh token of hash `hash` presented by `client_id`. The rotation is a
    /// compare-and-set on the grant's current refresh token: a caller that loses it (another
    /// replica rotated the same token first) presented a retired token, and the grant is
    /// revoked as a reuse.
    pub(crate) async fn refresh(
        &self,
        hash: &str,
        client_id: &str,
        now: u64,
    ) -> StoreResult<Refreshed> {
        let Some(grant) = self.store.grant_by_refresh(hash).await? else {
            return Ok(Refreshed::Refused("the refresh token is unknown"));
        };
        if grant.revoked {
            return Ok(Refreshed::Refused("the grant was revoked"));
        }
        if grant.client_id != client_id {
            return Ok(Refreshed::Refused(
                "the refresh token was issued to another client",
            ));
        }
        if grant.refresh_hash != hash {
            return self.reused(grant).await;
        }
        if grant.expires_at <= now {
            return Ok(Refreshed::Refused(
                "the grant expired: ask for consent again",
            ));
        }
        let (refresh, new_hash) = Secret::new(SecretKind::Refresh);
        let (access, access_hash) = Secret::new(SecretKind::Access);
        let access_expires_at = self.access_expiry(&grant, now);
        let rotation = Rotation {
            grant_id: grant.id.clone(),
            tid: grant.tid.clone(),
            old_hash: hash.to_owned(),
            new_hash: new_hash.clone(),
            generation: grant.generation.saturating_add(1),
            access_hash,
            access_expires_at,
        };
        let generation = rotation.generation;
        if !self.store.rotate(rotation, now).await? {
            // Rotated (or revoked) meanwhile: the token presented is no longer current.
            return self.reused(grant).await;
        }
        let grant = GrantRecord {
            refresh_hash: new_hash,
            generation,
            ..grant
        };
        Ok(Refreshed::Rotated(Issued {
            access,
            refresh,
            grant,
            access_expires_at,
        }))
    }

    /// A retired refresh token came back: the grant is revoked.
    async fn reused(&self, grant: GrantRecord) -> StoreResult<Refreshed> {
        let revoked = self.store.revoke_grant(&grant.id).await?;
        Ok(Refreshed::Reused(revoked.unwrap_or(grant)))
    }

    /// The access token of hash `hash`: unexpired, its grant unrevoked.
    pub(crate) async fn access(&self, hash: &str, now: u64) -> StoreResult<Option<AccessRecord>> {
        self.store.access(hash, now).await
    }

    /// The grant a token (access or refresh, by hash) stands for.
    pub(crate) async fn grant_of_token(&self, hash: &str) -> StoreResult<Option<GrantRecord>> {
        if let Some(grant) = self.store.grant_by_access(hash).await? {
            return Ok(Some(grant));
        }
        self.store.grant_by_refresh(hash).await
    }

    /// Revokes grant `id`: its tokens stop working at once, on every replica. Answers the
    /// grant as it was.
    pub(crate) async fn revoke(&self, id: &str) -> StoreResult<Option<GrantRecord>> {
        self.store.revoke_grant(id).await
    }

    /// Retires one access token (RFC 7009 for an access token: the grant stays).
    pub(crate) async fn revoke_access(&self, hash: &str) -> StoreResult<bool> {
        self.store.revoke_access(hash).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance;
    use super::super::memory::MemoryOAuthStore;
    use super::super::store::OAuthStore;

    #[tokio::test]
    async fn the_memory_store_conforms() {
        conformance::all(|| async {
            std::sync::Arc::new(MemoryOAuthStore::new()) as std::sync::Arc<dyn OAuthStore>
        })
        .await;
    }
}
