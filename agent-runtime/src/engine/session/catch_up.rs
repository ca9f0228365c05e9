//! A durable session catching up with another process's changes to its stored record
//! (`docs/stores.md` §PostgreSQL: replicas): the patches of the commits after the one held
//! are applied to the stored-state tree, and the state is read back from it; the whole
//! record is read only when the commit held is behind the log's horizon (compacted away).
//! Changed confirmations are merged in.

use std::sync::Arc;

use super::migrate::read_state;
use super::SessionCore;
use crate::app::App;
use crate::engine::store::SessionChanges;

/// Reloads what another process changed (called by the session task, so no commit runs
/// meanwhile): newer commits replace the state and are published (waking `/wait`, `waitFor`
/// and event streams); changed confirmations replace these (waking confirmation waiters).
pub(crate) async fn refresh<A: App>(core: &SessionCore<A>) {
    let Some(p) = &core.persist else { return };
    let _io = p.confirms_io.lock().await;
    let held = core.published.borrow().seq;
    let changes = match p.store.load_since(&core.id, held).await {
        Ok(Some(changes)) => changes,
        // Deleted from the store (closed through another process): it stops here too.
        Ok(None) => {
            drop(_io);
            core.close();
            return;
        }
        Err(e) => {
            tracing::error!(target: "tea_agent_runtime::store", "reloading session {} failed: {e}", core.id);
            return;
        }
    };
    // The commit to publish, with its state; and the stored confirmations.
    let (state, confirms) = match changes {
        SessionChanges::Patches {
            seq,
            confirms,
            patches,
            ..
        } if seq > held => {
            let caught_up = {
                let mut log = p.log.lock();
                // Read through the tree's text: a `Value` of it would cost eight times more.
                log.catch_up(&patches)
                    .and_then(|tree| serde_json::to_string(tree).ok())
                    .and_then(|text| serde_json::from_str::<A::State>(&text).ok())
            };
            let state = match caught_up {
                Some(state) => Some((seq, state)),
                // Not from the patches: the whole record.
                None => match p.store.load_session(&core.id).await {
                    Ok(Some(r)) => whole(core, &r.state, &r.schema_hash, r.seq).map(|s| (r.seq, s)),
                    _ => None,
                },
            };
            (state, confirms)
        }
        SessionChanges::Patches { confirms, .. } => (None, confirms),
        SessionChanges::Whole(record) => {
            let state = (record.seq > held)
                .then(|| whole(core, &record.state, &record.schema_hash, record.seq))
                .flatten()
                .map(|s| (record.seq, s));
            (state, record.confirms)
        }
    };
    if let Some((seq, state)) = state {
        publish(core, seq, state);
    }
    merge_confirms(core, p, confirms);
}

/// The state read from a whole stored record (JSON `text`) at commit `seq`; the tree
/// becomes that record's.
fn whole<A: App>(core: &SessionCore<A>, text: &str, hash: &str, seq: u64) -> Option<A::State> {
    let p = core.persist.as_ref()?;
    let state = match read_state(&*core.app, text, hash) {
        Ok(read) => read.into_state(),
        Err(why) => {
            why.log(&core.id, "catching up failed");
            return None;
        }
    };
    match serde_json::from_str(text) {
        Ok(tree) => p.log.lock().replace(seq, tree),
        Err(_) => p.log.lock().forget(),
    }
    Some(state)
}

/// Publishes `state` as commit `seq`, with the diff from what this process published.
fn publish<A: App>(core: &SessionCore<A>, seq: u64, state: A::State) {
    let Ok(redacted) = super::redact(&*core.app, core.catalog.redact_plan(), &state) else {
        return;
    };
    let redacted = Arc::new(crate::algo::tree::Node::from_value(redacted));
    *core.state.write() = state;
    // The snapshot trees knew only this process's commits.
    let gates = {
        let mut snapshots = core.snapshots.lock();
        snapshots.forget_spare();
        snapshots.unknown_gates()
    };
    let prev = core.published.borrow().state.clone();
    let patch = crate::algo::tree::diff_nodes(&prev, &redacted);
    let published = super::Published::new(seq, redacted, patch.into(), gates);
    core.publish(published.clone());
    core.events
        .lock()
        .publish(super::events::EventBody::State(published));
}

/// Confirmations another process wrote are merged into these (`decisions::take_stored`: a
/// decision wins over pending, the stored decision over another; proposals made here and not
/// yet written stay).
fn merge_confirms<A: App>(
    core: &SessionCore<A>,
    p: &super::persist::Persistence,
    confirms: String,
) {
    let known = p.stored_confirms.lock().clone();
    if known != confirms {
        super::decisions::take_stored(core, p, confirms, &known);
    }
}
