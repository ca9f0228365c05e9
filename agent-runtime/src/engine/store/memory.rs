//! The in-memory store: today's behaviour, everything is lost when the process ends.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use futures::future::{self, BoxFuture, FutureExt as _};

use super::records::{IdempotencyEntry, McpBinding, SessionRecord};
use super::traits::{IdempotencyRecords, McpBindings, SessionStore, SigningKeys, StoreResult};
use super::StoreError;

#[derive(Debug, Default)]
struct Maps {
    sessions: HashMap<String, SessionRecord>,
    idempotency: HashMap<(String, String), IdempotencyEntry>,
    mcp: HashMap<String, McpBinding>,
    keys: HashMap<String, Vec<u8>>,
}

/// Sessions, idempotency answers, MCP bindings and signing keys in maps behind one lock (the
/// library default; tokens live in [`crate::security::InMemoryTokenStore`]).
#[derive(Debug, Default)]
pub struct MemoryStore {
    maps: Mutex<Maps>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    // Every mutation is one insert or remove, so a poisoned lock holds consistent maps.
    fn lock(&self) -> MutexGuard<'_, Maps> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, StoreResult<T>> {
    future::ready(Ok(value)).boxed()
}

impl SessionStore for MemoryStore {
    fn insert_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        let mut maps = self.lock();
        if maps.sessions.contains_key(&record.id) {
            let id = record.id;
            return future::ready(Err(StoreError::Conflict(format!("session {id} exists"))))
                .boxed();
        }
        maps.sessions.insert(record.id.clone(), record);
        ready(())
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        ready(self.lock().sessions.get(id).cloned())
    }

    fn commit_state<'a>(
        &'a self,
        id: &'a str,
        seq: u64,
        state: &'a str,
        schema_hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let mut maps = self.lock();
        let written = match maps.sessions.get_mut(id) {
            Some(r) if r.seq.checked_add(1) == Some(seq) => {
                r.seq = seq;
                r.state = state.to_owned();
                r.schema_hash = schema_hash.to_owned();
                r.updated_at = now;
                true
            }
            _ => false,
        };
        ready(written)
    }

    fn save_confirms<'a>(
        &'a self,
        id: &'a str,
        confirms: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(r) = self.lock().sessions.get_mut(id) {
            r.confirms = confirms.to_owned();
        }
        ready(())
    }

    fn save_log_tail<'a>(
        &'a self,
        id: &'a str,
        log_tail: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(r) = self.lock().sessions.get_mut(id) {
            r.log_tail = log_tail.to_owned();
        }
        ready(())
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        ready(self.lock().sessions.remove(id).is_some())
    }

    fn sessions_of<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        let maps = self.lock();
        let mut owned: Vec<&SessionRecord> = maps
            .sessions
            .values()
            .filter(|r| r.owner.as_deref() == Some(owner))
            .collect();
        owned.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        ready(owned.into_iter().map(|r| r.id.clone()).collect())
    }

    fn session_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        ready(self.lock().sessions.len() as u64)
    }

    fn touch_session<'a>(&'a self, id: &'a str, at: u64) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(r) = self.lock().sessions.get_mut(id) {
            r.updated_at = r.updated_at.max(at);
        }
        ready(())
    }

    fn stale_sessions(&self, before: u64, limit: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        let maps = self.lock();
        let mut stale: Vec<&SessionRecord> = maps
            .sessions
            .values()
            .filter(|r| r.updated_at < before)
            .collect();
        stale.sort_by(|a, b| (a.updated_at, &a.id).cmp(&(b.updated_at, &b.id)));
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        ready(
            stale
                .into_iter()
                .take(limit)
                .map(|r| r.id.clone())
                .collect(),
        )
    }
}

impl IdempotencyRecords for MemoryStore {
    fn put_idempotent(&self, entry: IdempotencyEntry) -> BoxFuture<'_, StoreResult<()>> {
        self.lock()
            .idempotency
            .insert((entry.tid.clone(), entry.key.clone()), entry);
        ready(())
    }

    fn get_idempotent<'a>(
        &'a self,
        tid: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<IdempotencyEntry>>> {
        let found = self
            .lock()
            .idempotency
            .get(&(tid.to_owned(), key.to_owned()))
            .cloned();
        ready(found)
    }

    fn sweep_idempotent(&self, before: u64) -> BoxFuture<'_, StoreResult<u64>> {
        let mut maps = self.lock();
        let held = maps.idempotency.len();
        maps.idempotency.retain(|_, e| e.created_at >= before);
        ready((held - maps.idempotency.len()) as u64)
    }
}

impl McpBindings for MemoryStore {
    fn bind_mcp(&self, binding: McpBinding) -> BoxFuture<'_, StoreResult<()>> {
        let mut maps = self.lock();
        match maps.mcp.get_mut(&binding.id) {
            // Known fields are completed.
            Some(stored) => {
                if !binding.tid.is_empty() {
                    stored.tid = binding.tid;
                }
                if !binding.init.is_empty() {
                    stored.init = binding.init;
                }
            }
            // Only an `initialize` creates an id.
            None if binding.init.is_empty() => {}
            None => {
                maps.mcp.insert(binding.id.clone(), binding);
            }
        }
        ready(())
    }

    fn mcp_binding<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<McpBinding>>> {
        ready(self.lock().mcp.get(id).cloned())
    }

    fn delete_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.lock().mcp.remove(id);
        ready(())
    }

    fn unbind_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(b) = self.lock().mcp.get_mut(id) {
            b.tid.clear();
        }
        ready(())
    }

    fn mcp_ids_of<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        let maps = self.lock();
        let mut of: Vec<&McpBinding> = maps.mcp.values().filter(|b| b.tid == tid).collect();
        of.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        ready(of.into_iter().map(|b| b.id.clone()).collect())
    }

    fn mcp_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        ready(self.lock().mcp.len() as u64)
    }

    fn oldest_mcp(&self, n: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        let maps = self.lock();
        let mut all: Vec<&McpBinding> = maps.mcp.values().collect();
        all.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        ready(all.into_iter().take(n).map(|b| b.id.clone()).collect())
    }
}

impl SigningKeys for MemoryStore {
    fn signing_key<'a>(
        &'a self,
        name: &'a str,
        candidate: Vec<u8>,
    ) -> BoxFuture<'a, StoreResult<Vec<u8>>> {
        let key = self
            .lock()
            .keys
            .entry(name.to_owned())
            .or_insert(candidate)
            .clone();
        ready(key)
    }
}
