//! Resuming, on one replica of a fleet, what a client saw on another (`docs/lap.md` §6.6,
//! `docs/stores.md` §PostgreSQL: replicas): the agents' view of the state at the commit the
//! client last saw is rebuilt from the store (the stored state at the commit published here,
//! walked back by the undo records' inverses of the commits after it), and diffed with the
//! view published now. Only when a replica cannot answer from what it holds in memory.

use std::collections::BTreeMap;

use super::undo_record::UndoRecord;
use super::{Published, SessionCore};
use crate::algo::diff::PatchOp;
use crate::algo::tree::Node;
use crate::app::App;

/// The snapshot published now and the patch from the agents' view at commit `since` to it,
/// rebuilt from the store. `None` without a store, when `since` is newer than the commit
/// published here, when the store's newest commit is not the one published here (a commit
/// in flight, or not caught up yet), or when the store no longer holds the inverse of every
/// commit after `since` (compacted away with the log, or never known): the caller then
/// answers as it would without the store (a snapshot, the whole state).
pub(crate) async fn view_patch_since<A: App>(
    core: &SessionCore<A>,
    since: u64,
) -> Option<(Published, Vec<PatchOp>)> {
    core.persist.as_ref()?;
    let published = core.published.borrow().clone();
    if since > published.seq {
        return None;
    }
    if since == published.seq {
        return Some((published, Vec::new()));
    }
    let (published, then) = view_at(core, since).await?;
    let diff = crate::algo::tree::diff_nodes(&then, &published.state);
    Some((published, diff))
}

/// The snapshot published now and the agents' view (redacted) at commit `since`, older than
/// it, rebuilt from the store; `None` as for [`view_patch_since`].
pub(crate) async fn view_at<A: App>(
    core: &SessionCore<A>,
    since: u64,
) -> Option<(Published, Node)> {
    let p = core.persist.as_ref()?;
    let published = core.published.borrow().clone();
    if since >= published.seq {
        return None;
    }
    let record = p.store.load_session(&core.id).await.ok()??;
    if record.seq != published.seq {
        return None;
    }
    let records: BTreeMap<u64, UndoRecord> = p
        .store
        .undo_records(&core.id, since)
        .await
        .ok()?
        .into_iter()
        .filter_map(|(seq, text)| Some((seq, serde_json::from_str(&text).ok()?)))
        .collect();
    let mut tree = Node::from_value(serde_json::from_str(&record.state).ok()?);
    for seq in (since + 1..=published.seq).rev() {
        let inverse = records.get(&seq)?.inverse.as_ref()?;
        crate::algo::inverse::invert(&mut tree, inverse).ok()?;
    }
    let state: A::State = serde_json::from_value(tree.to_value()).ok()?;
    let view = super::redact(&*core.app, core.catalog.redact_plan(), &state).ok()?;
    Some((published, Node::from_value(view)))
}
