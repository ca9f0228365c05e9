//! The in-memory store: today's behaviour, everything is lost when the process ends.

use parking_lot::Mutex;
use std::collections::HashMap;

use futures::future::{self, BoxFuture, FutureExt as _};

use super::log::{reaches, replay};
use super::records::{
    CommitWrite, Committed, ConfirmsSwap, IdempotencyEntry, LogState, McpBinding, SessionChanges,
    SessionRecord,
};
use super::traits::{IdempotencyRecords, McpBindings, SessionStore, SigningKeys};
use super::StoreError;
use super::StoreResult;

/// A session as the memory store keeps it: like the databases, the newest snapshot (in
/// `record.state`) and the patches logged since the previous one.
#[derive(Debug)]
struct Stored {
    record: SessionRecord,
    log: LogState,
    patches: std::collections::BTreeMap<u64, String>,
    /// The commits' undo records, compacted with the patches.
    undo: std::collections::BTreeMap<u64, String>,
}

impl Stored {
    /// The record with its state rebuilt at its newest commit.
    fn rebuilt(&self) -> StoreResult<SessionRecord> {
        let mut record = self.record.clone();
        let after = self.log.snapshot_seq;
        if record.seq <= after {
            return Ok(record);
        }
        let patches: Vec<(u64, String)> = self
            .patches
            .range(after + 1..=record.seq)
            .map(|(s, p)| (*s, p.clone()))
            .collect();
        if !reaches(&patches, after, record.seq) {
            return Err(StoreError::Database(format!(
                "the log of session {} does not reach its newest commit",
                record.id
            )));
        }
        if !patches.is_empty() {
            record.state = replay(&record.state, patches.iter().map(|(_, p)| p.as_str()))?;
        }
        Ok(record)
    }
}

#[derive(Debug, Default)]
struct Maps {
    sessions: HashMap<String, Stored>,
    idempotency: HashMap<(String, String), IdempotencyEntry>,
    mcp: HashMap<String, McpBinding>,
    keys: HashMap<String, Vec<u8>>,
}

/// Sessions, idempotency answers, MCP bindings and signing keys in maps behind one lock (the
/// library default; tokens live in [`crate::store::InMemoryTokenStore`]).
#[derive(Debug, Default)]
pub struct MemoryStore {
    maps: Mutex<Maps>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, StoreResult<T>> {
    future::ready(Ok(value)).boxed()
}

impl SessionStore for MemoryStore {
    fn insert_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        let mut maps = self.maps.lock();
        if maps.sessions.contains_key(&record.id) {
            let id = record.id;
            return future::ready(Err(StoreError::Conflict(format!("session {id} exists"))))
                .boxed();
        }
        let log = LogState {
            snapshot_seq: record.seq,
            log_bytes: 0,
        };
        maps.sessions.insert(
            record.id.clone(),
            Stored {
                record,
                log,
                patches: Default::default(),
                undo: Default::default(),
            },
        );
        ready(())
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        let found = self
            .maps
            .lock()
            .sessions
            .get(id)
            .map(Stored::rebuilt)
            .transpose();
        future::ready(found).boxed()
    }

    fn commit<'a>(&'a self, w: CommitWrite<'a>) -> BoxFuture<'a, StoreResult<Committed>> {
        let mut maps = self.maps.lock();
        let maps = &mut *maps;
        let Some(stored) = maps.sessions.get_mut(w.id) else {
            return ready(Committed::Raced);
        };
        if stored.record.seq.checked_add(1) != Some(w.seq) {
            return ready(Committed::Raced);
        }
        let patch_len = w.patch.map_or(0, |p| p.len() as u64);
        let undo_len = w.undo.map_or(0, |u| u.len() as u64);
        if w.snapshot.is_none() && super::snapshot_due(stored.log, w.seq, patch_len + undo_len) {
            return ready(Committed::SnapshotDue(stored.log));
        }
        if let Some(k) = &w.key {
            let slot = (k.tid.to_owned(), k.key.to_owned());
            match maps.idempotency.get_mut(&slot) {
                Some(e) if e.commit.is_some() || e.status != 0 => return ready(Committed::KeyUsed),
                Some(e) => e.commit = Some((w.id.to_owned(), w.seq)),
                None => {
                    maps.idempotency.insert(
                        slot,
                        IdempotencyEntry {
                            tid: k.tid.to_owned(),
                            key: k.key.to_owned(),
                            created_at: k.created_at,
                            msg: k.msg.to_owned(),
                            status: 0,
                            body: String::new(),
                            headers: "[]".into(),
                            commit: Some((w.id.to_owned(), w.seq)),
                            claimed_at: k.created_at,
                        },
                    );
                }
            }
        }
        let r = &mut stored.record;
        r.seq = w.seq;
        r.schema_hash = w.schema_hash.to_owned();
        r.updated_at = w.now;
        match w.snapshot {
            Some(state) => {
                let horizon = stored.log.snapshot_seq;
                stored.patches.retain(|seq, _| *seq > horizon);
                stored.undo.retain(|seq, _| *seq > horizon);
                r.state = state.to_owned();
                stored.log = LogState {
                    snapshot_seq: w.seq,
                    log_bytes: 0,
                };
            }
            None => stored.log.log_bytes += patch_len + undo_len,
        }
        if let Some(p) = w.patch.filter(|_| patch_len <= super::SNAPSHOT_BYTES) {
            stored.patches.insert(w.seq, p.to_owned());
        }
        if let Some(u) = w.undo.filter(|_| undo_len <= super::SNAPSHOT_BYTES) {
            stored.undo.insert(w.seq, u.to_owned());
        }
        ready(Committed::Stored)
    }

    fn load_since<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Option<SessionChanges>>> {
        let maps = self.maps.lock();
        let Some(stored) = maps.sessions.get(id) else {
            return ready(None);
        };
        let seq = stored.record.seq;
        let patches: Vec<(u64, String)> = if seq > after {
            stored
                .patches
                .range(after + 1..=seq)
                .map(|(s, p)| (*s, p.clone()))
                .collect()
        } else {
            Vec::new()
        };
        if seq < after || !reaches(&patches, after, seq) {
            let whole = stored.rebuilt().map(|r| Some(SessionChanges::Whole(r)));
            return future::ready(whole).boxed();
        }
        ready(Some(SessionChanges::Patches {
            seq,
            schema_hash: stored.record.schema_hash.clone(),
            confirms: stored.record.confirms.clone(),
            patches: patches.into_iter().map(|(_, p)| p).collect(),
        }))
    }

    fn undo_records<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        let maps = self.maps.lock();
        let records = maps.sessions.get(id).map_or_else(Vec::new, |stored| {
            stored
                .undo
                .range(after.saturating_add(1)..)
                .map(|(s, u)| (*s, u.clone()))
                .collect()
        });
        ready(records)
    }

    fn swap_confirms<'a>(
        &'a self,
        id: &'a str,
        expected: &'a str,
        confirms: &'a str,
    ) -> BoxFuture<'a, StoreResult<ConfirmsSwap>> {
        let swapped = match self.maps.lock().sessions.get_mut(id) {
            None => ConfirmsSwap::Gone,
            Some(s) if s.record.confirms != expected => {
                ConfirmsSwap::Changed(s.record.confirms.clone())
            }
            Some(s) => {
                s.record.confirms = confirms.to_owned();
                ConfirmsSwap::Stored
            }
        };
        ready(swapped)
    }

    fn save_log_tail<'a>(
        &'a self,
        id: &'a str,
        log_tail: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(s) = self.maps.lock().sessions.get_mut(id) {
            s.record.log_tail = log_tail.to_owned();
        }
        ready(())
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        ready(self.maps.lock().sessions.remove(id).is_some())
    }

    fn delete_session_unused<'a>(
        &'a self,
        id: &'a str,
        before: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let mut maps = self.maps.lock();
        let unused = maps
            .sessions
            .get(id)
            .is_some_and(|s| s.record.updated_at < before);
        ready(unused && maps.sessions.remove(id).is_some())
    }

    fn sessions_of<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        let maps = self.maps.lock();
        let mut owned: Vec<&SessionRecord> = maps
            .sessions
            .values()
            .map(|s| &s.record)
            .filter(|r| r.owner.as_deref() == Some(owner))
            .collect();
        owned.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        ready(owned.into_iter().map(|r| r.id.clone()).collect())
    }

    fn session_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        ready(self.maps.lock().sessions.len() as u64)
    }

    fn touch_session<'a>(&'a self, id: &'a str, at: u64) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(s) = self.maps.lock().sessions.get_mut(id) {
            s.record.updated_at = s.record.updated_at.max(at);
        }
        ready(())
    }

    fn stale_sessions(&self, before: u64, limit: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        let maps = self.maps.lock();
        let mut stale: Vec<&SessionRecord> = maps
            .sessions
            .values()
            .map(|s| &s.record)
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
    fn put_idempotent(&self, mut entry: IdempotencyEntry) -> BoxFuture<'_, StoreResult<()>> {
        let mut maps = self.maps.lock();
        let slot = (entry.tid.clone(), entry.key.clone());
        // The commit recorded under the key stays.
        if let Some(old) = maps.idempotency.get(&slot) {
            entry.commit = old.commit.clone();
            entry.claimed_at = old.claimed_at;
        }
        maps.idempotency.insert(slot, entry);
        ready(())
    }

    fn claim_idempotent(
        &self,
        entry: IdempotencyEntry,
        expired_before: u64,
        stale_before: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let mut maps = self.maps.lock();
        let slot = (entry.tid.clone(), entry.key.clone());
        let free = maps.idempotency.get(&slot).is_none_or(|e| {
            e.created_at < expired_before
                || (e.status == 0 && e.commit.is_none() && e.claimed_at < stale_before)
        });
        if free {
            let claimed_at = entry.created_at;
            maps.idempotency.insert(
                slot,
                IdempotencyEntry {
                    status: 0,
                    body: String::new(),
                    headers: "[]".into(),
                    commit: None,
                    claimed_at,
                    ..entry
                },
            );
        }
        ready(free)
    }

    fn get_idempotent<'a>(
        &'a self,
        tid: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<IdempotencyEntry>>> {
        let found = self
            .maps
            .lock()
            .idempotency
            .get(&(tid.to_owned(), key.to_owned()))
            .cloned();
        ready(found)
    }

    fn sweep_idempotent(&self, before: u64) -> BoxFuture<'_, StoreResult<u64>> {
        let mut maps = self.maps.lock();
        let held = maps.idempotency.len();
        maps.idempotency.retain(|_, e| e.created_at >= before);
        ready((held - maps.idempotency.len()) as u64)
    }
}

impl McpBindings for MemoryStore {
    fn bind_mcp(&self, binding: McpBinding) -> BoxFuture<'_, StoreResult<()>> {
        let mut maps = self.maps.lock();
        match maps.mcp.get_mut(&binding.id) {
            // Known fields are completed.
            Some(stored) => {
                if !binding.tid.is_empty() {
                    stored.tid = binding.tid;
                    stored.token_hash = binding.token_hash;
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
        ready(self.maps.lock().mcp.get(id).cloned())
    }

    fn delete_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.maps.lock().mcp.remove(id);
        ready(())
    }

    fn unbind_mcp<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(b) = self.maps.lock().mcp.get_mut(id) {
            b.tid.clear();
            b.token_hash.clear();
        }
        ready(())
    }

    fn mcp_ids_of<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        let maps = self.maps.lock();
        let mut of: Vec<&McpBinding> = maps.mcp.values().filter(|b| b.tid == tid).collect();
        of.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        ready(of.into_iter().map(|b| b.id.clone()).collect())
    }

    fn mcp_count(&self) -> BoxFuture<'_, StoreResult<u64>> {
        ready(self.maps.lock().mcp.len() as u64)
    }

    fn oldest_mcp(&self, n: u64) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        let maps = self.maps.lock();
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
            .maps
            .lock()
            .keys
            .entry(name.to_owned())
            .or_insert(candidate)
            .clone();
        ready(key)
    }

    fn set_signing_key<'a>(
        &'a self,
        name: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.maps.lock().keys.insert(name.to_owned(), bytes);
        ready(())
    }
}
