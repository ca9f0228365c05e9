//! The session task: the only code that mutates a session's state.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use tea_agent_schema::protocol::{DrainError, DrainErrorKind, LogKind, StartedBy};
use tea_agent_schema::AgentMsg as _;
use tokio::sync::mpsc;

use super::cancel::{self, Canceller};
use super::events::EventBody;
use super::queue::{Applied, Approval, CommitMark, CommitNote, Envelope, Origin};
use super::work::Starter;
use super::{activity, catch_up, effects, panic_text, persist, Published, SessionCore};
use crate::app::App;

pub(crate) async fn run<A: App>(
    core: Arc<SessionCore<A>>,
    mut inbox: mpsc::UnboundedReceiver<Envelope<A::Msg>>,
) {
    // Counted in `agent_sessions{kind="hosted"}` while the writer runs, however it ends.
    let _live = crate::telemetry::Live::hosted_session();
    let mut closed = core.closed.subscribe();
    let Some(mut undos) = core.undo_rx.lock().take() else {
        return;
    };
    let mut confirms_changed = core.confirm_changed.subscribe();
    let mut expiry = tokio::time::interval(Duration::from_secs(1));
    expiry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // An idle session with no confirmations has no timer: thousands of idle sessions cost
        // no wake-ups. A change to the confirmations wakes the loop to re-check.
        let sweeping = !core.confirms.lock().is_empty();
        let mut undo = None;
        let env = tokio::select! {
            biased;
            _ = closed.wait_for(|c| *c) => break,
            env = inbox.recv() => match env {
                Some(env) => Some(env),
                None => break,
            },
            _ = confirms_changed.changed() => continue,
            // Decided here, in order with the messages (the branch's value is taken below:
            // nothing of `select!` is held across the undo's awaits).
            Some(request) = undos.recv() => {
                undo = Some(request);
                None
            }
            // Another process changed the stored session.
            _ = core.refresh.notified() => None,
            _ = expiry.tick(), if sweeping => {
                core.sweep_confirms();
                continue;
            }
        };
        match (env, undo.take()) {
            (Some(env), _) => commit(&core, env).await,
            (None, Some(request)) => super::undo::run(&core, request).await,
            (None, None) => catch_up::refresh(&core).await,
        }
    }
}

async fn commit<A: App>(core: &Arc<SessionCore<A>>, mut env: Envelope<A::Msg>) {
    // An agent's message is checked against the action gates again at its turn (a no-op
    // under advisory gates).
    if let Some(agent) = env.origin.gated() {
        let session = super::Session { core: core.clone() };
        if let Some(detail) = session.refuse_at_turn(&env.msg, agent.tid.as_deref()) {
            // Nothing applied: the ticket is done, its waiter reads the refusal.
            core.committed_through
                .store(env.ticket, std::sync::atomic::Ordering::Release);
            if let Some(committed) = env.committed.take() {
                let _ = committed.send(Applied::Refused(detail));
            }
            return;
        }
    }
    let prev = core.published.borrow().clone();
    let retry = persist::retry_copy(core, &env.msg);
    let author = super::undo::author(core, &env);
    let variant = env.msg.variant_name();
    let no_undo;
    let (outcome, next, snapshot) = {
        let mut state = core.state.write();
        // The panic is caught inside the lock scope, so the lock is never poisoned; whatever
        // `update` changed before panicking stays (the commit still counts).
        let outcome = catch_unwind(AssertUnwindSafe(|| core.app.update(&mut state, env.msg)));
        let next = core
            .snapshots
            .lock()
            .next(&*core.app, &state, &prev.state, &prev.gates);
        let published = next.as_ref().ok().map(|(n, _)| n.state.clone());
        let mut snapshot = persist::snapshot(core, prev.seq + 1, &state, published);
        no_undo = match &mut snapshot {
            Some(Ok(change)) => {
                let (text, why) = author.record(core, change, &outcome);
                change.undo = text;
                why
            }
            other => author.unrecorded(other.is_some()),
        };
        (outcome, next, snapshot)
    };
    // A state that does not serialize is reported like a panicking `update` (drain errors
    // and an `error` log entry); agents keep the last state that did serialize.
    let published = match next {
        Ok((next, _)) if Arc::ptr_eq(&next.state, &prev.state) => Published {
            seq: prev.seq + 1,
            ..prev.clone()
        }
        .with_patch(next.patch),
        Ok((next, gates)) => Published::new(prev.seq + 1, next.state, next.patch, gates),
        Err(message) => {
            let mut entry = activity::entry(LogKind::Error, core.now());
            entry.intent = Some("State failed to serialize".into());
            entry.detail = Some(message.clone());
            core.append_log(entry);
            core.notes.send(CommitNote::Error(DrainError {
                kind: DrainErrorKind::Error,
                message,
            }));
            Published {
                seq: prev.seq + 1,
                ..prev.clone()
            }
            .with_patch(Arc::from([]))
        }
    };
    let (mut outcome, mut published) = (outcome, published);
    let starter = work_starter(core, &env.origin, variant);
    let (key, approval, follow) = match env.origin {
        Origin::Plain | Origin::App => (None, None, None),
        Origin::Agent(agent) => (agent.key, None, agent.follow),
        Origin::Approved(approval) => (None, Some(approval), None),
    };
    // Durable before anyone sees it, and before its effects start. Another replica may have
    // committed first: the message is then applied again on the state it stored.
    let redo = match persist::commit(core, published.seq, snapshot, retry, key).await {
        Ok(redo) => redo,
        Err(persist::SessionGone) => {
            // Deleted from the store (closed through another replica): nothing of this
            // message takes effect, and the session closes.
            core.notes.send(CommitNote::Error(DrainError {
                kind: DrainErrorKind::Error,
                message: format!(
                    "commit {} not stored: the session was closed",
                    published.seq
                ),
            }));
            core.close();
            return;
        }
    };
    if let Some(redo) = redo {
        // The walk's trees hold the state this process computed, not the one stored.
        let gates = {
            let mut snapshots = core.snapshots.lock();
            snapshots.forget_spare();
            snapshots.unknown_gates()
        };
        let patch = crate::algo::tree::diff_nodes(&prev.state, &redo.redacted);
        published = Published::new(redo.seq, redo.redacted, patch.into(), gates);
        outcome = Ok(redo.effects);
    }
    core.publish(published.clone());
    let effects = match outcome {
        Ok(effects) => effects,
        Err(payload) => {
            core.notes.send(CommitNote::Error(DrainError {
                kind: DrainErrorKind::Error,
                message: format!("update panicked: {}", panic_text(&*payload)),
            }));
            Vec::new()
        }
    };
    core.committed_through
        .store(env.ticket, std::sync::atomic::Ordering::Release);
    core.notes.send(CommitNote::Commit { ticket: env.ticket });
    // Started before the waiter wakes, so its drain follows them (`docs/semantics.md` §5.6).
    let started: Vec<_> = if effects.is_empty() {
        Vec::new()
    } else {
        let starter = Arc::new(starter);
        effects
            .into_iter()
            .filter_map(|effect| effects::spawn_effect(core, effect, published.seq, &starter))
            .collect()
    };
    if let Some(follow) = follow {
        let weak = Arc::downgrade(core);
        let slots = started.clone();
        follow.arm(Box::new(move || {
            if let Some(core) = weak.upgrade() {
                cancel::cancel_slots(&core, &slots, Canceller::McpClient);
            }
        }));
    }
    // After the note, so the waiter finds it queued when it wakes.
    if let Some(committed) = env.committed {
        let mark = CommitMark {
            seq: Some(published.seq),
            no_undo: no_undo.clone(),
        };
        let _ = committed.send(Applied::Committed(started, mark));
    }
    core.events
        .lock()
        .publish(EventBody::State(published.clone()));
    if let Some(approval) = approval {
        let Approval {
            confirm_id,
            applied,
            edited,
            intent,
            variant,
            tid,
        } = *approval;
        let mut entry = activity::entry(LogKind::Confirmed, core.now());
        entry.variant = Some(variant);
        entry.intent = Some(intent);
        entry.detail = activity::payload_detail(&applied);
        entry.state_diff = Some(published.patch().to_vec());
        entry.tid = tid;
        entry.seq = Some(published.seq);
        entry.no_undo = no_undo;
        entry.confirm_id = Some(confirm_id.clone());
        core.confirms.lock().mark_committed(
            &confirm_id,
            published.json(),
            edited.then_some(applied),
            published.seq,
        );
        core.append_log(entry);
        core.confirm_changed.send_modify(|v| *v += 1);
    }
}

/// What started the effects of a message from `origin` of `variant`.
fn work_starter<A: App>(core: &SessionCore<A>, origin: &Origin, variant: &str) -> Starter {
    let (started_by, tid, key) = match origin {
        Origin::Plain => (StartedBy::Human, None, None),
        Origin::App => return Starter::app(),
        Origin::Agent(agent) => {
            let key = agent
                .follow
                .as_ref()
                .and_then(|f| f.key().map(str::to_owned))
                .or_else(|| agent.key.as_ref().map(|k| k.key().to_owned()));
            (StartedBy::Agent, agent.tid.clone(), key)
        }
        Origin::Approved(approval) => match &approval.tid {
            Some(tid) => (StartedBy::Agent, Some(tid.clone()), None),
            None => (StartedBy::Human, None, None),
        },
    };
    let intent = core
        .catalog
        .annotations(variant)
        .and_then(|a| a.intent.clone());
    Starter {
        started_by,
        tid,
        key,
        variant: Some(variant.to_owned()),
        intent,
    }
}
