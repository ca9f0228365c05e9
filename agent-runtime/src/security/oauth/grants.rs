//! Authorization codes, grants and their tokens (`docs/authorization.md` §The model).
//!
//! A person's consent makes a *code* (single use, short lived, bound to the client, the
//! redirect URI, the PKCE challenge and the resource). Exchanging it makes a *grant*: one
//! agent token record of the chosen session (in the token store, so the gate, rate limits,
//! audit, expiry and revocation treat it as any agent token) plus a refresh token and short
//! lived access tokens that stand for it. A refresh rotates the refresh token; presenting a
//! retired one revokes the whole grant (it was copied). Every secret is kept as its SHA-256
//! only. The records are plain data, so a durable store can keep them (a later step: today
//! they live in the process).

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::secret::{Secret, SecretKind};

/// Retired refresh tokens remembered per grant (a reuse of one revokes the grant).
const RETIRED_PER_GRANT: usize = 16;

/// Live access tokens per grant: a refresh past it retires the oldest.
const ACCESS_PER_GRANT: usize = 4;

/// A code waiting to be exchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CodeRecord {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    /// The S256 PKCE challenge.
    pub(crate) challenge: String,
    /// The scopes granted (space-separated).
    pub(crate) scope: String,
    /// The person who consented.
    pub(crate) uid: String,
    /// The session granted.
    pub(crate) session_id: String,
    /// The resource the tokens are for (this server's MCP URL).
    pub(crate) resource: String,
    pub(crate) expires_at: u64,
}

/// A grant: a client's access to one session, as one person consented.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GrantRecord {
    pub(crate) id: String,
    pub(crate) client_id: String,
    /// The agent token record (`tid`) that stands for the grant in the token store.
    pub(crate) tid: String,
    pub(crate) uid: String,
    pub(crate) session_id: String,
    pub(crate) scope: String,
    pub(crate) resource: String,
    pub(crate) created_at: u64,
    /// The grant's end: no refresh after it.
    pub(crate) expires_at: u64,
    /// The hash of the current refresh token.
    pub(crate) refresh_hash: String,
    /// The hashes of the refresh tokens it had, newest last.
    pub(crate) retired: VecDeque<String>,
    pub(crate) revoked: bool,
}

/// An access token, by its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AccessRecord {
    pub(crate) grant_id: String,
    pub(crate) tid: String,
    pub(crate) expires_at: u64,
}

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

/// What presenting a code found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CodeTaken {
    /// A pending code, now spent.
    Fresh(CodeRecord),
    /// Past its lifetime.
    Expired,
    /// Spent before: the grant it made (if it still exists) is revoked by the caller.
    Reused(Option<String>),
    /// Never made here.
    Unknown,
}

/// What presenting a refresh token found.
#[derive(Debug)]
pub(crate) enum Refreshed {
    /// Rotated: new tokens.
    Rotated(Issued),
    /// A retired refresh token: the grant is revoked now (the caller revokes its record).
    Reused(GrantRecord),
    /// Another client's, unknown, revoked or past the grant's end.
    Refused(&'static str),
}

/// Why a code or a grant could not be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full(pub(crate) usize);

#[derive(Default)]
struct Inner {
    codes: HashMap<String, CodeRecord>,
    /// Spent codes until their expiry: hash → the grant they made.
    spent: HashMap<String, (Option<String>, u64)>,
    grants: HashMap<String, GrantRecord>,
    /// Refresh token hashes, current and retired → grant id.
    refresh: HashMap<String, String>,
    access: HashMap<String, AccessRecord>,
}

/// The codes, grants and tokens of one server.
pub(crate) struct Grants {
    inner: Mutex<Inner>,
    limits: Limits,
}

impl Grants {
    pub(crate) fn new(limits: Limits) -> Self {
        Grants {
            inner: Mutex::new(Inner::default()),
            limits,
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Keeps a new code (its text is handed to the client once); `Err` when the pending
    /// codes are at their bound.
    pub(crate) fn add_code(&self, code: CodeRecord, now: u64) -> Result<Secret, Full> {
        let mut inner = self.inner.lock();
        inner.codes.retain(|_, c| c.expires_at > now);
        inner.spent.retain(|_, (_, until)| *until > now);
        if inner.codes.len() >= self.limits.max_codes {
            return Err(Full(self.limits.max_codes));
        }
        let (secret, hash) = Secret::new(SecretKind::Code);
        inner.codes.insert(hash, code);
        Ok(secret)
    }

    /// Spends the code of hash `hash` (single use: a second presentation is `Reused`).
    pub(crate) fn take_code(&self, hash: &str, now: u64) -> CodeTaken {
        let mut inner = self.inner.lock();
        if let Some((grant, _)) = inner.spent.get(hash) {
            return CodeTaken::Reused(grant.clone());
        }
        let Some(code) = inner.codes.remove(hash) else {
            return CodeTaken::Unknown;
        };
        inner
            .spent
            .insert(hash.to_owned(), (None, code.expires_at.max(now) + 1));
        if code.expires_at <= now {
            return CodeTaken::Expired;
        }
        CodeTaken::Fresh(code)
    }

    /// Makes the grant of spent code `code_hash` (`code`), for agent token record `tid`.
    pub(crate) fn create_grant(
        &self,
        code_hash: &str,
        code: CodeRecord,
        tid: String,
        now: u64,
    ) -> Result<Issued, Full> {
        let mut inner = self.inner.lock();
        inner.sweep(now);
        let live = inner.grants.values().filter(|g| !g.revoked).count();
        if live >= self.limits.max_grants {
            return Err(Full(self.limits.max_grants));
        }
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
            refresh_hash: refresh_hash.clone(),
            retired: VecDeque::new(),
            revoked: false,
        };
        inner.refresh.insert(refresh_hash, grant.id.clone());
        if let Some(spent) = inner.spent.get_mut(code_hash) {
            spent.0 = Some(grant.id.clone());
        }
        inner.grants.insert(grant.id.clone(), grant.clone());
        let (access, access_expires_at) = inner.new_access(&grant, now, self.limits);
        Ok(Issued {
            access,
            refresh,
            grant,
            access_expires_at,
        })
    }

    /// Rotates the refresh token of hash `hash` presented by `client_id`.
    pub(crate) fn refresh(&self, hash: &str, client_id: &str, now: u64) -> Refreshed {
        let mut inner = self.inner.lock();
        let Some(grant_id) = inner.refresh.get(hash).cloned() else {
            return Refreshed::Refused("the refresh token is unknown");
        };
        let Some(grant) = inner.grants.get(&grant_id).cloned() else {
            return Refreshed::Refused("the refresh token is unknown");
        };
        if grant.revoked {
            return Refreshed::Refused("the grant was revoked");
        }
        if grant.client_id != client_id {
            return Refreshed::Refused("the refresh token was issued to another client");
        }
        if grant.refresh_hash != hash {
            let revoked = inner.revoke(&grant_id);
            return Refreshed::Reused(revoked.unwrap_or(grant));
        }
        if grant.expires_at <= now {
            return Refreshed::Refused("the grant expired: ask for consent again");
        }
        let (refresh, refresh_hash) = Secret::new(SecretKind::Refresh);
        inner.refresh.insert(refresh_hash.clone(), grant_id.clone());
        let updated = {
            let Some(g) = inner.grants.get_mut(&grant_id) else {
                return Refreshed::Refused("the refresh token is unknown");
            };
            let old = std::mem::replace(&mut g.refresh_hash, refresh_hash);
            g.retired.push_back(old);
            g.clone()
        };
        let mut forgotten = Vec::new();
        if let Some(g) = inner.grants.get_mut(&grant_id) {
            while g.retired.len() > RETIRED_PER_GRANT {
                forgotten.extend(g.retired.pop_front());
            }
        }
        for hash in forgotten {
            inner.refresh.remove(&hash);
        }
        let grant = inner.grants.get(&grant_id).cloned().unwrap_or(updated);
        let (access, access_expires_at) = inner.new_access(&grant, now, self.limits);
        Refreshed::Rotated(Issued {
            access,
            refresh,
            grant,
            access_expires_at,
        })
    }

    /// The access token of hash `hash`: unexpired, its grant unrevoked.
    pub(crate) fn access(&self, hash: &str, now: u64) -> Option<AccessRecord> {
        let inner = self.inner.lock();
        let access = inner.access.get(hash)?;
        let grant = inner.grants.get(&access.grant_id)?;
        (access.expires_at > now && !grant.revoked).then(|| access.clone())
    }

    /// The grant a token (access or refresh, by hash) stands for.
    pub(crate) fn grant_of_token(&self, hash: &str) -> Option<GrantRecord> {
        let inner = self.inner.lock();
        let id = inner
            .access
            .get(hash)
            .map(|a| &a.grant_id)
            .or_else(|| inner.refresh.get(hash))?;
        inner.grants.get(id).cloned()
    }

    /// Revokes grant `id`: its tokens stop working at once. Answers the grant as it was.
    pub(crate) fn revoke(&self, id: &str) -> Option<GrantRecord> {
        self.inner.lock().revoke(id)
    }

    /// Retires one access token (RFC 7009 for an access token: the grant stays).
    pub(crate) fn revoke_access(&self, hash: &str) -> bool {
        self.inner.lock().access.remove(hash).is_some()
    }
}

impl Inner {
    fn revoke(&mut self, id: &str) -> Option<GrantRecord> {
        let grant = self.grants.get_mut(id)?;
        grant.revoked = true;
        let grant = grant.clone();
        self.access.retain(|_, a| a.grant_id != id);
        Some(grant)
    }

    fn new_access(&mut self, grant: &GrantRecord, now: u64, limits: Limits) -> (Secret, u64) {
        let mut own: Vec<(String, u64)> = self
            .access
            .iter()
            .filter(|(_, a)| a.grant_id == grant.id)
            .map(|(h, a)| (h.clone(), a.expires_at))
            .collect();
        own.sort_by_key(|(_, at)| *at);
        while own.len() >= ACCESS_PER_GRANT {
            let (hash, _) = own.remove(0);
            self.access.remove(&hash);
        }
        let (access, hash) = Secret::new(SecretKind::Access);
        // An access token never outlives its grant.
        let expires_at = now
            .saturating_add(limits.access_ttl_ms)
            .min(grant.expires_at);
        self.access.insert(
            hash,
            AccessRecord {
                grant_id: grant.id.clone(),
                tid: grant.tid.clone(),
                expires_at,
            },
        );
        (access, expires_at)
    }

    /// Drops what can no longer be used: expired access tokens, grants past their end or
    /// revoked (with their refresh tokens).
    fn sweep(&mut self, now: u64) {
        self.access.retain(|_, a| a.expires_at > now);
        let gone: Vec<String> = self
            .grants
            .values()
            .filter(|g| g.expires_at <= now)
            .map(|g| g.id.clone())
            .collect();
        for id in gone {
            self.grants.remove(&id);
        }
        let grants = &self.grants;
        self.refresh.retain(|_, id| grants.contains_key(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::oauth::secret::hash_of;

    const LIMITS: Limits = Limits {
        code_ttl_ms: 60_000,
        access_ttl_ms: 3_600_000,
        grant_ttl_ms: 86_400_000,
        max_codes: 2,
        max_grants: 2,
    };

    fn code(expires_at: u64) -> CodeRecord {
        CodeRecord {
            client_id: "c".into(),
            redirect_uri: "http://localhost/cb".into(),
            challenge: "x".repeat(43),
            scope: "app:read".into(),
            uid: "u".into(),
            session_id: "s".into(),
            resource: "http://localhost/agent/mcp".into(),
            expires_at,
        }
    }

    fn issue(grants: &Grants, now: u64) -> Issued {
        let secret = grants.add_code(code(now + 60_000), now).unwrap();
        let hash = hash_of(SecretKind::Code, secret.expose()).unwrap();
        let CodeTaken::Fresh(code) = grants.take_code(&hash, now) else {
            panic!("fresh")
        };
        grants.create_grant(&hash, code, "tid".into(), now).unwrap()
    }

    #[test]
    fn a_code_is_single_use_short_lived_and_bounded() {
        let grants = Grants::new(LIMITS);
        let a = grants.add_code(code(100), 0).unwrap();
        let _b = grants.add_code(code(100), 0).unwrap();
        assert_eq!(grants.add_code(code(100), 0).unwrap_err(), Full(2));
        let hash = hash_of(SecretKind::Code, a.expose()).unwrap();
        assert!(matches!(grants.take_code(&hash, 50), CodeTaken::Fresh(_)));
        assert_eq!(grants.take_code(&hash, 51), CodeTaken::Reused(None));
        assert_eq!(grants.take_code("nope", 51), CodeTaken::Unknown);
        // Expired codes make room and are refused.
        let c = grants.add_code(code(200), 150).unwrap();
        let hash = hash_of(SecretKind::Code, c.expose()).unwrap();
        assert_eq!(grants.take_code(&hash, 200), CodeTaken::Expired);
    }

    #[test]
    fn refresh_rotates_and_a_reused_refresh_token_revokes_the_grant() {
        let grants = Grants::new(LIMITS);
        let first = issue(&grants, 0);
        let access_hash = hash_of(SecretKind::Access, first.access.expose()).unwrap();
        assert!(grants.access(&access_hash, 1).is_some());
        let old = hash_of(SecretKind::Refresh, first.refresh.expose()).unwrap();
        let Refreshed::Rotated(second) = grants.refresh(&old, "c", 10) else {
            panic!("rotated")
        };
        assert!(matches!(
            grants.refresh(
                &hash_of(SecretKind::Refresh, second.refresh.expose()).unwrap(),
                "other",
                11
            ),
            Refreshed::Refused(_)
        ));
        // The old one again: the grant is revoked, every token of it stops.
        assert!(matches!(
            grants.refresh(&old, "c", 12),
            Refreshed::Reused(_)
        ));
        assert!(grants.access(&access_hash, 13).is_none());
        let new = hash_of(SecretKind::Refresh, second.refresh.expose()).unwrap();
        assert!(matches!(
            grants.refresh(&new, "c", 14),
            Refreshed::Refused("the grant was revoked")
        ));
    }

    #[test]
    fn access_tokens_expire_and_grants_are_bounded() {
        let grants = Grants::new(LIMITS);
        let one = issue(&grants, 0);
        let hash = hash_of(SecretKind::Access, one.access.expose()).unwrap();
        assert!(grants.access(&hash, LIMITS.access_ttl_ms - 1).is_some());
        assert!(grants.access(&hash, LIMITS.access_ttl_ms).is_none());
        let _two = issue(&grants, 0);
        let secret = grants.add_code(code(60_000), 0).unwrap();
        let code_hash = hash_of(SecretKind::Code, secret.expose()).unwrap();
        let CodeTaken::Fresh(c) = grants.take_code(&code_hash, 0) else {
            panic!()
        };
        assert_eq!(
            grants
                .create_grant(&code_hash, c, "t".into(), 0)
                .unwrap_err(),
            Full(2)
        );
        // A revoked grant frees its slot; its code, presented again, names it.
        assert!(grants.revoke(&one.grant.id).is_some());
        assert!(grants.grant_of_token(&hash).is_none());
    }
}
