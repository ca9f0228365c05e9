//! The in-memory [`OAuthStore`]: the records of a server without a durable store, gone with
//! the process. One lock over plain maps, so every primitive is atomic.

use std::collections::HashMap;

use futures::future::{ready, BoxFuture};
use parking_lot::Mutex;

use super::records::{AccessRecord, ClientRecord, CodeRecord, CodeTaken, GrantRecord};
use super::store::{
    GrantStored, NewGrant, OAuthStore, Rotation, ACCESS_PER_GRANT, RETIRED_PER_GRANT,
};
use crate::security::store_error::StoreResult;

/// A code and whether it was spent (and presented again since), with the grant it made.
struct Code {
    code: CodeRecord,
    spent: bool,
    reused: bool,
    grant_id: Option<String>,
}

/// A token hash of a grant, with the generation it was made in.
struct Owned {
    grant_id: String,
    generation: u64,
}

#[derive(Default)]
struct Inner {
    clients: HashMap<String, ClientRecord>,
    codes: HashMap<String, Code>,
    grants: HashMap<String, GrantRecord>,
    /// Refresh token hashes, current and retired.
    refresh: HashMap<String, Owned>,
    /// Access token hashes.
    access: HashMap<String, (AccessRecord, u64)>,
}

/// The OAuth records of one process.
#[derive(Default)]
pub(crate) struct MemoryOAuthStore {
    inner: Mutex<Inner>,
}

impl MemoryOAuthStore {
    pub(crate) fn new() -> Self {
        Self::default()
    }
}

impl Inner {
    fn drop_grant_tokens(&mut self, keep: impl Fn(&str) -> bool) {
        self.refresh.retain(|_, o| keep(&o.grant_id));
        self.access.retain(|_, (a, _)| keep(&a.grant_id));
    }
}

impl OAuthStore for MemoryOAuthStore {
    fn register_client(
        &self,
        client: ClientRecord,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let mut inner = self.inner.lock();
        inner.clients.retain(|_, c| c.expires_at > now);
        let stored = (inner.clients.len() as u64) < max;
        if stored {
            inner.clients.insert(client.client_id.clone(), client);
        }
        Box::pin(ready(Ok(stored)))
    }

    fn find_client<'a>(
        &'a self,
        client_id: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<Option<ClientRecord>>> {
        let inner = self.inner.lock();
        let found = inner
            .clients
            .get(client_id)
            .filter(|c| c.expires_at > now)
            .cloned();
        Box::pin(ready(Ok(found)))
    }

    fn client_used<'a>(
        &'a self,
        client_id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(c) = self.inner.lock().clients.get_mut(client_id) {
            c.expires_at = c.expires_at.max(expires_at);
        }
        Box::pin(ready(Ok(())))
    }

    fn add_code(
        &self,
        hash: String,
        code: CodeRecord,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let mut inner = self.inner.lock();
        inner.codes.retain(|_, c| c.code.expires_at > now);
        let waiting = inner.codes.values().filter(|c| !c.spent).count() as u64;
        let stored = waiting < max;
        if stored {
            let code = Code {
                code,
                spent: false,
                reused: false,
                grant_id: None,
            };
            inner.codes.insert(hash, code);
        }
        Box::pin(ready(Ok(stored)))
    }

    fn take_code<'a>(&'a self, hash: &'a str, now: u64) -> BoxFuture<'a, StoreResult<CodeTaken>> {
        let mut inner = self.inner.lock();
        let taken = match inner.codes.get_mut(hash) {
            None => CodeTaken::Unknown,
            Some(c) if c.spent => {
                c.reused = true;
                CodeTaken::Reused(c.grant_id.clone())
            }
            Some(c) => {
                c.spent = true;
                if c.code.expires_at <= now {
                    CodeTaken::Expired
                } else {
                    CodeTaken::Fresh(c.code.clone())
                }
            }
        };
        Box::pin(ready(Ok(taken)))
    }

    fn create_grant(
        &self,
        new: NewGrant,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<GrantStored>> {
        let mut inner = self.inner.lock();
        if inner.codes.get(&new.code_hash).is_none_or(|c| c.reused) {
            return Box::pin(ready(Ok(GrantStored::CodeNotHeld)));
        }
        inner.access.retain(|_, (a, _)| a.expires_at > now);
        inner.grants.retain(|_, g| g.expires_at > now && !g.revoked);
        let grants: std::collections::HashSet<String> = inner.grants.keys().cloned().collect();
        inner.drop_grant_tokens(|id| grants.contains(id));
        if inner.grants.len() as u64 >= max {
            return Box::pin(ready(Ok(GrantStored::Full)));
        }
        let grant = new.grant;
        let owned = Owned {
            grant_id: grant.id.clone(),
            generation: 0,
        };
        inner.refresh.insert(grant.refresh_hash.clone(), owned);
        let access = AccessRecord {
            grant_id: grant.id.clone(),
            tid: grant.tid.clone(),
            expires_at: new.access_expires_at,
        };
        inner.access.insert(new.access_hash, (access, 0));
        if let Some(code) = inner.codes.get_mut(&new.code_hash) {
            code.grant_id = Some(grant.id.clone());
        }
        inner.grants.insert(grant.id.clone(), grant);
        Box::pin(ready(Ok(GrantStored::Stored)))
    }

    fn rotate(&self, r: Rotation, now: u64) -> BoxFuture<'_, StoreResult<bool>> {
        let mut inner = self.inner.lock();
        let applies = inner
            .grants
            .get(&r.grant_id)
            .is_some_and(|g| !g.revoked && g.expires_at > now && g.refresh_hash == r.old_hash);
        if !applies {
            return Box::pin(ready(Ok(false)));
        }
        if let Some(g) = inner.grants.get_mut(&r.grant_id) {
            g.refresh_hash = r.new_hash.clone();
            g.generation = r.generation;
        }
        let owned = Owned {
            grant_id: r.grant_id.clone(),
            generation: r.generation,
        };
        inner.refresh.insert(r.new_hash, owned);
        let retired_from = r.generation.saturating_sub(RETIRED_PER_GRANT);
        inner
            .refresh
            .retain(|_, o| o.grant_id != r.grant_id || o.generation >= retired_from);
        let access = AccessRecord {
            grant_id: r.grant_id.clone(),
            tid: r.tid,
            expires_at: r.access_expires_at,
        };
        inner.access.insert(r.access_hash, (access, r.generation));
        let access_from = r.generation.saturating_sub(ACCESS_PER_GRANT - 1);
        inner.access.retain(|_, (a, generation)| {
            a.grant_id != r.grant_id || (*generation >= access_from && a.expires_at > now)
        });
        Box::pin(ready(Ok(true)))
    }

    fn grant_by_refresh<'a>(
        &'a self,
        hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>> {
        let inner = self.inner.lock();
        let grant = inner
            .refresh
            .get(hash)
            .and_then(|o| inner.grants.get(&o.grant_id))
            .cloned();
        Box::pin(ready(Ok(grant)))
    }

    fn grant_by_access<'a>(
        &'a self,
        hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>> {
        let inner = self.inner.lock();
        let grant = inner
            .access
            .get(hash)
            .and_then(|(a, _)| inner.grants.get(&a.grant_id))
            .cloned();
        Box::pin(ready(Ok(grant)))
    }

    fn access<'a>(
        &'a self,
        hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<Option<AccessRecord>>> {
        let inner = self.inner.lock();
        let live = inner.access.get(hash).filter(|(a, _)| {
            a.expires_at > now && inner.grants.get(&a.grant_id).is_some_and(|g| !g.revoked)
        });
        Box::pin(ready(Ok(live.map(|(a, _)| a.clone()))))
    }

    fn revoke_grant<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>> {
        let mut inner = self.inner.lock();
        let before = inner.grants.get_mut(id).map(|g| {
            let before = g.clone();
            g.revoked = true;
            before
        });
        inner.access.retain(|_, (a, _)| a.grant_id != id);
        Box::pin(ready(Ok(before)))
    }

    fn revoke_access<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let existed = self.inner.lock().access.remove(hash).is_some();
        Box::pin(ready(Ok(existed)))
    }
}
