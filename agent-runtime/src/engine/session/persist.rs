//! Durable sessions: the session's side of the store. A session with a [`Persistence`] is
//! written to its [`SessionStore`] when it starts, and every commit writes its patch (and,
//! every so often, a snapshot of the whole state) as the next sequence number before anyone
//! sees it and before its effects start (`docs/stores.md` §The commit log).
//!
//! The commit path calls exactly two functions: [`snapshot`] under the state lock and
//! [`commit`] after it. Reloads after another process's commits are in `catch_up`.

use std::sync::Arc;

use tea_agent_schema::protocol::{DrainError, DrainErrorKind, LogEntry, LogKind};

use super::commit_log::{Change, CommitLog};
use super::keyed::{KeyOutcome, KeyedDispatch};
use super::migrate::{read_state, Read};
use super::queue::CommitNote;
use super::{activity, Parts, Session, SessionCore, SessionError};
use crate::app::App;
use crate::engine::store::{CommitWrite, Committed, SessionRecord, SessionStore};

/// Where a session's commits go, and the schema hash they are written under.
#[derive(Clone)]
pub(crate) struct Persistence {
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) schema_hash: Arc<str>,
    /// The commit log as this process knows it (the task's).
    pub(super) log: Arc<parking_lot::Mutex<CommitLog>>,
    /// The confirmations JSON the store holds as far as this process knows (written here,
    /// or read back from another process's change), so none is written back needlessly.
    pub(super) stored_confirms: Arc<parking_lot::Mutex<String>>,
    /// Held by the confirmation saver from reading the entries to recording what it wrote,
    /// and by [`refresh`](super::catch_up::refresh) from loading the record to merging it: a load that started before
    /// one of this process's writes can then never be taken for another process's change.
    pub(super) confirms_io: Arc<tokio::sync::Mutex<()>>,
    /// `agent_commit_patch_bytes`, recorded at each stored commit.
    patch_bytes: metrics::Histogram,
}

impl Persistence {
    pub(crate) fn new(store: Arc<dyn SessionStore>, schema_hash: &str) -> Self {
        Persistence {
            store,
            schema_hash: Arc::from(schema_hash),
            log: Arc::default(),
            stored_confirms: Arc::new(parking_lot::Mutex::new("[]".into())),
            confirms_io: Arc::default(),
            patch_bytes: crate::telemetry::commit_patch_bytes(),
        }
    }

    /// The record of a new session.
    pub(crate) fn new_record<S: serde::Serialize>(
        &self,
        id: &str,
        owner: Option<String>,
        now: u64,
        state: &S,
    ) -> Result<SessionRecord, SessionError> {
        let state = self
            .log
            .lock()
            .reset(0, state)
            .map_err(SessionError::Internal)?;
        Ok(SessionRecord::new(
            id,
            owner,
            now,
            state,
            &*self.schema_hash,
        ))
    }
}

/// The first write of a session task, before it takes any message.
pub(crate) enum FirstWrite {
    /// A new session: insert its record.
    Insert(SessionRecord),
    /// A restored session whose stored state [`App::migrate`] carried over: commit the
    /// migrated state as the next sequence number.
    Migrated { seq: u64, state: String },
}

/// Does the first write; a failure is logged in the session (it keeps running in memory).
pub(crate) async fn first_write<A: App>(core: &SessionCore<A>, first: FirstWrite) {
    let Some(p) = &core.persist else { return };
    let result = match first {
        FirstWrite::Insert(record) => p.store.insert_session(record).await,
        FirstWrite::Migrated { seq, state } => {
            let write = CommitWrite {
                id: &core.id,
                seq,
                patch: None,
                snapshot: Some(&state),
                schema_hash: &p.schema_hash,
                now: core.now(),
                key: None,
                undo: None,
            };
            p.store.commit(write).await.map(|_| ())
        }
    };
    if let Err(e) = result {
        log_error(core, "Session not stored", e.to_string());
    }
}

/// The change commit `seq` writes (its patch, a snapshot when due), when the session
/// persists (called under the state lock, right after `update`).
/// `published` is the commit's published tree, whose list elements the stored tree shares
/// where they are the same.
pub(crate) fn snapshot<A: App>(
    core: &SessionCore<A>,
    seq: u64,
    state: &A::State,
    published: Option<Arc<crate::algo::tree::Node>>,
) -> Option<Result<Change, String>> {
    let p = core.persist.as_ref()?;
    Some(p.log.lock().change(seq, state, published))
}

/// The copy of a message kept to apply it again after a lost compare-and-set (only when the
/// session persists: `update` is a pure function of state and message).
pub(crate) fn retry_copy<A: App>(core: &SessionCore<A>, msg: &A::Msg) -> Option<A::Msg> {
    core.persist.as_ref().map(|_| msg.clone())
}

/// A commit that was applied again on the state another writer stored.
pub(crate) struct Redo<A: App> {
    /// Its sequence number.
    pub seq: u64,
    /// The redacted state after it.
    pub redacted: Arc<crate::algo::tree::Node>,
    /// The effects of this application.
    pub effects: Vec<A::Effect>,
}

/// How many times a commit is applied again before it is given up as not stored.
const MAX_REAPPLY: usize = 64;

/// The session is gone from its store (closed through another process, or expired there):
/// a commit that finds it so is not applied at all (no effect runs, nothing is published)
/// and the session closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SessionGone;

/// Why a commit was not stored.
enum NotStored {
    /// The session is gone from the store.
    Gone,
    /// Anything else (reported; the commit stays in memory).
    Failed(String),
}

impl From<String> for NotStored {
    fn from(message: String) -> Self {
        NotStored::Failed(message)
    }
}

/// Writes `change` as commit `seq` (compare-and-set), recording `key` with it and reporting
/// to the key's call whether it did ([`KeyedDispatch::report`]). When another
/// writer committed `seq` first, reloads the stored state, applies `retry` to it again, and
/// tries the next sequence number; answers the commit that was stored in the end. When the
/// key was recorded by another commit already, the message was applied there: this
/// application is dropped and the stored state put back (answered as a commit with no
/// effects). A failure (the database, or too many lost races) is reported like a failed
/// update: a drain error and an `error` log entry; the commit stays in memory. A session gone
/// from the store answers [`SessionGone`].
pub(crate) async fn commit<A: App>(
    core: &SessionCore<A>,
    seq: u64,
    change: Option<Result<Change, String>>,
    retry: Option<A::Msg>,
    key: Option<KeyedDispatch>,
) -> Result<Option<Redo<A>>, SessionGone> {
    let (Some(p), Some(Ok(mut change))) = (&core.persist, change) else {
        return Ok(None);
    };
    let message = loop {
        let write = CommitWrite {
            id: &core.id,
            seq,
            patch: change.patch.as_deref(),
            snapshot: change.snapshot.as_deref(),
            schema_hash: &p.schema_hash,
            now: core.now(),
            key: key.as_ref().map(KeyedDispatch::as_commit_key),
            undo: change.undo.as_deref(),
        };
        match p.store.commit(write).await {
            Ok(Committed::Stored) => {
                if let Some(patch) = &change.patch {
                    p.patch_bytes.record(patch.len() as f64);
                }
                p.log.lock().stored(seq, &change);
                if let Some(k) = key {
                    k.report(KeyOutcome::Recorded);
                }
                return Ok(None);
            }
            Ok(Committed::SnapshotDue(log)) if change.snapshot.is_none() => {
                match p.log.lock().snapshot_for(log) {
                    Some(snapshot) => change.snapshot = Some(snapshot),
                    None => break format!("commit {seq} not stored: no snapshot to write"),
                }
            }
            Ok(Committed::SnapshotDue(_)) => {
                break format!("commit {seq} not stored: the store refused its snapshot")
            }
            Ok(Committed::KeyUsed) => match revert(core, p, key).await {
                Ok(redo) => return Ok(Some(redo)),
                Err(NotStored::Gone) => return Err(SessionGone),
                Err(NotStored::Failed(message)) => break message,
            },
            Ok(Committed::Raced) => match retry {
                Some(msg) => match reapply(core, p, msg, key).await {
                    Ok(redo) => return Ok(Some(redo)),
                    Err(NotStored::Gone) => return Err(SessionGone),
                    Err(NotStored::Failed(message)) => break message,
                },
                None => {
                    break format!("commit {seq} not stored: another writer committed it first")
                }
            },
            Err(e) => break format!("commit {seq} not stored: {e}"),
        }
    };
    // The tree holds a state the store does not: the next commit starts over.
    p.log.lock().forget();
    core.notes.send(CommitNote::Error(DrainError {
        kind: DrainErrorKind::Error,
        message: message.clone(),
    }));
    log_error(core, "Commit not stored", message);
    Ok(None)
}

/// The stored record, its state read back.
async fn stored_state<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
) -> Result<(SessionRecord, A::State), NotStored> {
    let record = p
        .store
        .load_session(&core.id)
        .await
        .map_err(|e| format!("commit not stored: {e}"))?
        .ok_or(NotStored::Gone)?;
    let state = read_state(&*core.app, &record.state, &record.schema_hash)
        .map_err(|why| {
            why.log(&core.id, "commit not stored");
            format!("commit not stored: {}", why.shown)
        })?
        .into_state();
    Ok((record, state))
}

/// The key was recorded by another commit: puts the stored state back in place of this
/// application, which is dropped (no effects).
async fn revert<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
    key: Option<KeyedDispatch>,
) -> Result<Redo<A>, NotStored> {
    if let Some(k) = key {
        k.report(KeyOutcome::UsedElsewhere);
    }
    let (record, state) = stored_state(core, p).await?;
    let redacted = Arc::new(crate::algo::tree::Node::from_value(super::redact(
        &*core.app,
        core.catalog.redact_plan(),
        &state,
    )?));
    match serde_json::from_str(&record.state) {
        Ok(tree) => p.log.lock().replace(record.seq, tree),
        Err(_) => p.log.lock().forget(),
    }
    *core.state.write() = state;
    Ok(Redo {
        seq: record.seq,
        redacted,
        effects: Vec::new(),
    })
}

/// Reload, apply again, compare-and-set (a snapshot: the state was rebuilt); until it is
/// stored.
async fn reapply<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
    msg: A::Msg,
    key: Option<KeyedDispatch>,
) -> Result<Redo<A>, NotStored> {
    for _ in 0..MAX_REAPPLY {
        let (record, mut state) = stored_state(core, p).await?;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            core.app.update(&mut state, msg.clone())
        }));
        let effects = match outcome {
            Ok(effects) => effects,
            Err(payload) => {
                core.notes.send(CommitNote::Error(DrainError {
                    kind: DrainErrorKind::Error,
                    message: format!("update panicked: {}", super::panic_text(&*payload)),
                }));
                Vec::new()
            }
        };
        let seq = record.seq + 1;
        let text = p.log.lock().reset(seq, &state)?;
        let redacted = Arc::new(crate::algo::tree::Node::from_value(super::redact(
            &*core.app,
            core.catalog.redact_plan(),
            &state,
        )?));
        let write = CommitWrite {
            id: &core.id,
            seq,
            patch: None,
            snapshot: Some(&text),
            schema_hash: &p.schema_hash,
            now: core.now(),
            key: key.as_ref().map(KeyedDispatch::as_commit_key),
            undo: None,
        };
        let stored = p
            .store
            .commit(write)
            .await
            .map_err(|e| format!("commit {seq} not stored: {e}"))?;
        match stored {
            Committed::Stored => {
                if let Some(k) = key {
                    k.report(KeyOutcome::Recorded);
                }
                *core.state.write() = state;
                return Ok(Redo {
                    seq,
                    redacted,
                    effects,
                });
            }
            Committed::KeyUsed => return revert(core, p, key).await,
            Committed::Raced | Committed::SnapshotDue(_) => {}
        }
    }
    Err(NotStored::Failed(format!(
        "commit not stored: lost the race to other writers {MAX_REAPPLY} times"
    )))
}

pub(super) fn log_error<A: App>(core: &SessionCore<A>, intent: &str, detail: String) {
    tracing::error!(target: "tea_agent_runtime::store", session = %core.id, "{intent}: {detail}");
    let mut entry = activity::entry(LogKind::Error, core.now());
    entry.intent = Some(intent.into());
    entry.detail = Some(detail);
    core.append_log(entry);
}

/// Entries of the activity log a durable store keeps (the newest ones).
pub(crate) const LOG_TAIL_ENTRIES: usize = 32;

/// How long the log saver gathers new entries before one write.
const LOG_SAVE_DELAY: std::time::Duration = std::time::Duration::from_millis(500);

/// For a durable session: writes the newest [`LOG_TAIL_ENTRIES`] log entries to the store
/// after new ones were appended (at most one write per [`LOG_SAVE_DELAY`]; no timer while the
/// log is quiet), until the session closes.
pub(crate) fn spawn_log_saver<A: App>(core: &Arc<SessionCore<A>>) {
    let Some(p) = core.persist.clone() else {
        return;
    };
    let core = core.clone();
    let mut closed = core.closed.subscribe();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                _ = closed.wait_for(|c| *c) => return,
                _ = core.log_dirty.notified() => {}
            }
            tokio::select! {
                biased;
                _ = closed.wait_for(|c| *c) => return,
                _ = tokio::time::sleep(LOG_SAVE_DELAY) => {}
            }
            let mut tail = core.log.lock().recent(LOG_TAIL_ENTRIES, None);
            tail.reverse();
            let json = serde_json::to_string(&tail).unwrap_or_else(|_| "[]".into());
            if let Err(e) = p.store.save_log_tail(&core.id, &json).await {
                tracing::error!(target: "tea_agent_runtime::store", "storing the log of {} failed: {e}", core.id);
            }
        }
    });
}

/// The note agents get when a session was stored under another schema.
pub(crate) fn schema_changed_note(old: &str, new: &str) -> String {
    format!(
        "App schema changed (was {old}, now {new}). Descriptions, actions and examples read \
         before this are stale; use the ones in this result."
    )
}

/// Rebuilds a session from its record: the state exactly as committed and its sequence
/// number, the log tail. A state that no longer deserializes is carried over by
/// [`App::migrate`] (committed as the next sequence number, with a `Session migrated` log
/// entry); when that fails too, the record is left untouched and the session is refused
/// ([`SessionError::NotMigrated`]), never reset (`docs/stores.md` §Upgrades). A record written
/// under another schema hash gets a log entry with the schema-changed note.
pub(crate) fn restore<A: App>(
    record: SessionRecord,
    parts: Parts<A>,
    persist: Persistence,
) -> Result<Session<A>, SessionError> {
    let current_hash = persist.schema_hash.clone();
    let mut notes: Vec<(LogKind, &str, String)> = Vec::new();
    if record.schema_hash != *current_hash {
        notes.push((
            LogKind::Error,
            "App schema changed",
            schema_changed_note(&record.schema_hash, &current_hash),
        ));
    }
    let read = read_state(&*parts.app, &record.state, &record.schema_hash).map_err(|why| {
        why.log(&record.id, "session cannot be loaded");
        SessionError::NotMigrated(format!(
            "session {} cannot be loaded: {}. Its stored state (commit {}, schema {}) is kept \
             unchanged; a version of the app that reads it (App::migrate) brings it back",
            record.id, why.shown, record.seq, record.schema_hash
        ))
    })?;
    let (state, seq, first) = match read {
        Read::AsStored(state) => {
            // The tree is the stored JSON itself: the first commit's patch then applies to
            // what the store holds, whatever this version's serialization adds to it.
            *persist.log.lock() =
                CommitLog::at(record.seq, serde_json::from_str(&record.state).ok());
            (state, record.seq, None)
        }
        Read::Migrated { state, why } => {
            tracing::warn!(
                target: "tea_agent_runtime::store",
                session = %record.id,
                "session migrated from commit {}: {}",
                record.seq,
                why.full
            );
            let seq = record.seq + 1;
            let text = persist
                .log
                .lock()
                .reset(seq, &state)
                .map_err(SessionError::Internal)?;
            notes.push((
                LogKind::Error,
                "Session migrated",
                format!(
                    "the stored state (commit {}, schema {}) no longer deserialized ({}); \
                     App::migrate carried it over to this version's state, committed as \
                     commit {seq}",
                    record.seq, record.schema_hash, why.shown
                ),
            ));
            (state, seq, Some(FirstWrite::Migrated { seq, state: text }))
        }
    };
    let tail: Vec<LogEntry> = serde_json::from_str(&record.log_tail).unwrap_or_default();
    let (core, rx) = Session::core(
        record.id,
        record.owner,
        record.created_at,
        seq,
        state,
        parts,
        Some(persist),
    )?;
    // Event ids go on from the wall clock (ms): above those of the process before, so an
    // event stream reconnecting with its `Last-Event-ID` gets a snapshot, never another
    // process's events under the ids it saw.
    // (A fleet's session numbers them by commit instead: `Session::core`.)
    {
        let mut events = core.events.lock();
        if !events.by_commit() {
            events.continue_after(core.now());
        }
    }
    {
        let mut log = core.log.lock();
        for entry in tail {
            log.push(entry);
        }
    }
    if let Some(p) = &core.persist {
        *p.stored_confirms.lock() = record.confirms.clone();
    }
    if !core.confirms.lock().restore_json(&record.confirms) {
        notes.push((
            LogKind::Error,
            "Confirmations lost",
            "the stored confirmations no longer parse; they were dropped".into(),
        ));
    }
    for (kind, intent, detail) in notes {
        let mut entry = activity::entry(kind, core.now());
        entry.intent = Some(intent.into());
        entry.detail = Some(detail);
        core.append_log(entry);
    }
    let session = Session { core };
    session.spawn(rx, first, Vec::new());
    Ok(session)
}
