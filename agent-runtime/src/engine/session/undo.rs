//! Undo of an agent's commit by the human (`docs/semantics.md` §12): the request travels to
//! the session's task (the single writer decides it against the commits around it), which
//! reads the commits' undo records from the store, checks them, applies the inverse ops to the
//! stored state, reads the result back as the app's `State`, and commits it as the next
//! commit (a snapshot), by the human, with an `undone` log entry and a `commit-undone` audit.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use tea_agent_schema::protocol::LogKind;
use tokio::sync::oneshot;

use super::commit_log::Change;
use super::events::EventBody;
use super::queue::{Envelope, Origin};
use super::undo_record::{Author, UndoRecord};
use super::{activity, Published, Session, SessionCore};
use crate::app::App;
use crate::engine::store::{CommitWrite, Committed, SNAPSHOT_BYTES};
use crate::security::AuditEvent;

/// An undo that was committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    /// The undo's own commit (the session's new `seq`).
    pub seq: u64,
    /// The commits it reverted, newest first.
    pub undid: Vec<u64>,
}

/// Why an undo changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UndoError {
    /// No such commit in the log (never made, or older than the log keeps).
    #[error("unknown commit {0}: the session's log does not hold it")]
    Unknown(u64),
    /// The commit was not an agent's (the human's, or an effect's).
    #[error(
        "commit {seq} was made by {by}, not by an agent: only an agent's commit can be undone"
    )]
    NotAgents {
        /// The commit.
        seq: u64,
        /// `the human` or `the app`.
        by: String,
    },
    /// The commit was undone already.
    #[error("commit {seq} is already undone (by commit {by})")]
    AlreadyUndone {
        /// The commit.
        seq: u64,
        /// The undo's commit.
        by: u64,
    },
    /// The commit cannot be undone (its message started effects, or its inverse is unknown).
    #[error("commit {seq} cannot be undone: {reason}")]
    NotUndoable {
        /// The commit.
        seq: u64,
        /// Why.
        reason: String,
    },
    /// Later commits changed the same data.
    #[error("commits {} changed the same data after commit {seq}; undo back to {seq} (andLater) to undo them too", list(later))]
    Conflict {
        /// The commit.
        seq: u64,
        /// The later commits in the way, oldest first.
        later: Vec<u64>,
    },
    /// The state after the undo is not a valid `State`.
    #[error(
        "the state after undoing commit {seq} does not deserialize as the app's State: {detail}"
    )]
    Invalid {
        /// The commit.
        seq: u64,
        /// The deserializer's error.
        detail: String,
    },
    /// The session has no store: it keeps no undo records.
    #[error("the session has no store, so it keeps no undo records")]
    NoStore,
    /// The store failed (nothing changed).
    #[error("undo not stored: {0}")]
    Store(String),
    /// The session is closed.
    #[error("session closed")]
    Closed,
}

fn list(seqs: &[u64]) -> String {
    seqs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// An undo on its way to the task.
pub(crate) struct UndoRequest {
    pub seq: u64,
    pub and_later: bool,
    pub answer: oneshot::Sender<Result<Undone, UndoError>>,
}

/// Who made a commit, read from its envelope before `update` takes the message.
pub(crate) struct Authored {
    by: Author,
    tid: Option<String>,
    variant: String,
}

pub(crate) fn author<A: App>(core: &SessionCore<A>, env: &Envelope<A::Msg>) -> Authored {
    let _ = core;
    let (by, tid) = match &env.origin {
        Origin::App => (Author::App, None),
        Origin::Plain => (Author::Human, None),
        Origin::Agent(agent) => (Author::Agent, agent.tid.clone()),
        Origin::Approved(approval) => (Author::Agent, approval.tid.clone()),
    };
    Authored {
        by,
        tid,
        variant: tea_agent_schema::AgentMsg::variant_name(&env.msg).to_string(),
    }
}

impl Authored {
    /// The commit's undo record as text (the `@emits` rule applied), and what its log entry
    /// says of it: why the human cannot undo it (an agent's commit only).
    pub(crate) fn record<A: App, T>(
        self,
        core: &SessionCore<A>,
        change: &Change,
        outcome: &Result<Vec<A::Effect>, T>,
    ) -> (Option<String>, Option<String>) {
        let emits = core
            .catalog
            .annotations(&self.variant)
            .is_some_and(|a| !a.emits.is_empty());
        let started = matches!(outcome, Ok(effects) if !effects.is_empty());
        let no_undo =
            ((emits || started) && !core.app.undoable_with_effects(&self.variant)).then(|| {
                format!(
                    "{} starts effects (@emits), and an undo never reverts effects",
                    self.variant
                )
            });
        let agents = self.by == Author::Agent;
        let (text, why) = UndoRecord {
            by: self.by,
            tid: self.tid,
            variant: Some(self.variant),
            inverse: change.inverse.clone(),
            no_undo,
            undoes: Vec::new(),
        }
        .fit(SNAPSHOT_BYTES as usize);
        (text, why.filter(|_| agents))
    }

    /// Why the human cannot undo this commit when it keeps no undo record (`stored`: the
    /// session has a store, but the commit's change was not computed).
    pub(crate) fn unrecorded(&self, stored: bool) -> Option<String> {
        (self.by == Author::Agent).then(|| {
            if stored {
                "its change was not logged (the state failed to serialize)".to_string()
            } else {
                "the session keeps no undo records (it has no store)".to_string()
            }
        })
    }
}

impl<A: App> Session<A> {
    /// Undoes commit `seq`, an agent's, by the human (`docs/semantics.md` §12): its inverse
    /// applied when no later commit changed the same data, or, with `and_later`, every commit
    /// from the newest down to `seq` as one commit. Decided by the session's task, in order
    /// with the messages; answers the undo's own commit.
    pub async fn undo(&self, seq: u64, and_later: bool) -> Result<Undone, UndoError> {
        let (answer, rx) = oneshot::channel();
        self.core
            .undo
            .send(UndoRequest {
                seq,
                and_later,
                answer,
            })
            .map_err(|_| UndoError::Closed)?;
        rx.await.unwrap_or(Err(UndoError::Closed))
    }
}

/// Runs one undo in the task.
pub(crate) async fn run<A: App>(core: &Arc<SessionCore<A>>, req: UndoRequest) {
    let result = apply(core, req.seq, req.and_later).await;
    let _ = req.answer.send(result);
}

async fn apply<A: App>(
    core: &Arc<SessionCore<A>>,
    seq: u64,
    and_later: bool,
) -> Result<Undone, UndoError> {
    let p = core.persist.as_ref().ok_or(UndoError::NoStore)?;
    let current = core.published.borrow().seq;
    if seq == 0 || seq > current {
        return Err(UndoError::Unknown(seq));
    }
    let records: BTreeMap<u64, UndoRecord> = p
        .store
        .undo_records(&core.id, seq - 1)
        .await
        .map_err(|e| UndoError::Store(e.to_string()))?
        .into_iter()
        .filter_map(|(s, text)| Some((s, serde_json::from_str(&text).ok()?)))
        .collect();
    let target = records.get(&seq).ok_or(UndoError::Unknown(seq))?;
    match target.by {
        Author::Agent => {}
        Author::Human => {
            return Err(UndoError::NotAgents {
                seq,
                by: "the human".into(),
            })
        }
        Author::App => {
            return Err(UndoError::NotAgents {
                seq,
                by: "the app".into(),
            })
        }
    }
    if let Some((by, _)) = records.iter().find(|(_, r)| r.undoes.contains(&seq)) {
        return Err(UndoError::AlreadyUndone { seq, by: *by });
    }
    let undoable = |s: u64, r: Option<&UndoRecord>| -> Result<Vec<_>, UndoError> {
        let r = r.ok_or_else(|| UndoError::NotUndoable {
            seq: s,
            reason: "the log keeps no inverse of it".into(),
        })?;
        if let Some(reason) = &r.no_undo {
            return Err(UndoError::NotUndoable {
                seq: s,
                reason: reason.clone(),
            });
        }
        r.inverse.clone().ok_or_else(|| UndoError::NotUndoable {
            seq: s,
            reason: super::undo_record::NO_INVERSE.into(),
        })
    };
    let mut ops = undoable(seq, Some(target))?;
    let mut undid = vec![seq];
    if and_later {
        let mut all = Vec::new();
        undid.clear();
        for s in (seq..=current).rev() {
            all.extend(undoable(s, records.get(&s))?);
            undid.push(s);
        }
        ops = all;
    } else {
        let paths = target.paths().unwrap_or_default();
        let later: Vec<u64> = (seq + 1..=current)
            .filter(|s| records.get(s).is_none_or(|r| r.touches(&paths)))
            .collect();
        if !later.is_empty() {
            return Err(UndoError::Conflict { seq, later });
        }
    }
    // The stored state now, the inverse applied to it, read back as the app's `State`.
    let Some(mut after) = p.log.lock().node().cloned() else {
        return Err(UndoError::Store(
            "the session's stored state is not known here; try again".into(),
        ));
    };
    let inverse =
        crate::algo::inverse::invert(&mut after, &ops).map_err(|_| UndoError::NotUndoable {
            seq,
            reason: "its inverse no longer fits the state".into(),
        })?;
    let state: A::State =
        serde_json::from_value(after.to_value()).map_err(|e| UndoError::Invalid {
            seq,
            detail: e.to_string(),
        })?;
    let next = current + 1;
    let snapshot = p.log.lock().reset(next, &state).map_err(UndoError::Store)?;
    let record = UndoRecord {
        by: Author::Human,
        tid: None,
        variant: None,
        inverse: Some(inverse),
        no_undo: None,
        undoes: undid.clone(),
    }
    .text(SNAPSHOT_BYTES as usize);
    let write = CommitWrite {
        id: &core.id,
        seq: next,
        patch: None,
        snapshot: Some(&snapshot),
        schema_hash: &p.schema_hash,
        now: core.now(),
        key: None,
        undo: record.as_deref(),
    };
    match p.store.commit(write).await {
        Ok(Committed::Stored) => {}
        Ok(_) => {
            p.log.lock().forget();
            return Err(UndoError::Store(
                "another writer committed first; look again and retry".into(),
            ));
        }
        Err(e) => {
            p.log.lock().forget();
            return Err(UndoError::Store(e.to_string()));
        }
    }
    publish(core, next, state, target, &undid);
    Ok(Undone { seq: next, undid })
}

/// The undo is stored: the state replaced, published like a commit, logged and audited.
fn publish<A: App>(
    core: &Arc<SessionCore<A>>,
    seq: u64,
    state: A::State,
    target: &UndoRecord,
    undid: &[u64],
) {
    let prev = core.published.borrow().clone();
    let redacted = super::redact(&*core.app, core.catalog.redact_plan(), &state)
        .map(crate::algo::tree::Node::from_value);
    *core.state.write() = state;
    let published = match redacted {
        Ok(node) => {
            let gates = {
                let mut snapshots = core.snapshots.lock();
                snapshots.forget_spare();
                snapshots.unknown_gates()
            };
            let patch = crate::algo::tree::diff_nodes(&prev.state, &node);
            Published::new(seq, Arc::new(node), patch.into(), gates)
        }
        Err(_) => Published {
            seq,
            ..prev.clone()
        }
        .with_patch(Arc::from([])),
    };
    core.publish(published.clone());
    core.events
        .lock()
        .publish(EventBody::State(published.clone()));
    let first = undid.last().copied().unwrap_or_default();
    let mut entry = activity::entry(LogKind::Undone, core.now());
    entry.variant = target.variant.clone();
    entry.intent = Some(match undid.len() {
        1 => format!("Undo commit {first}"),
        _ => format!("Undo back to commit {first}"),
    });
    entry.detail = Some(format!(
        "commits {} undone by the human, as commit {seq}",
        list(undid)
    ));
    entry.state_diff = Some(published.patch().to_vec());
    // The agent whose commit was undone, so it can tell its own work was reverted.
    entry.tid = target.tid.clone();
    entry.seq = Some(seq);
    entry.undid = undid.to_vec();
    core.append_log(entry);
    core.audit(
        AuditEvent::CommitUndone,
        target.tid.clone(),
        json!({"seq": seq, "undid": undid, "variant": target.variant, "by": "human"}),
    );
}
