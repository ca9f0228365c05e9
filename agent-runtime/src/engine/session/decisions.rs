//! Decisions on proposals (approve, reject, withdraw, expiry) and the confirmations a durable
//! store holds (`docs/stores.md` §Confirmations, `docs/semantics.md` §7).
//!
//! Without a store a decision is made in memory, under the confirmation store's lock. With
//! one, the store is the judge: a decision is a compare-and-set of the stored confirmations
//! ([`SessionStore::swap_confirms`](crate::engine::store::SessionStore::swap_confirms)),
//! written before it takes effect here (before an approved message is queued, before anyone
//! is told). When another process changed them first, their text is merged in and the
//! decision is tried again on it: of two decisions on one proposal, made through two
//! replicas at once, exactly one is stored, and the other is refused with the one that won.
//! Every other change (a proposal, an approved message's commit, decisions forgotten after
//! their retention) is written the same way, merged, so no write undoes a decision.

use std::sync::Arc;
use std::time::Duration;

use tea_agent_schema::protocol::ConfirmEntry;

use super::confirm::{ConfirmStore, Decision, WithdrawError};
use super::persist::{log_error, Persistence};
use super::SessionCore;
use crate::app::App;
use crate::engine::store::ConfirmsSwap;

/// How many times a write of the confirmations is tried again after another process
/// changed them first.
const MAX_SWAPS: usize = 64;

/// Why a decision was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecideError {
    /// The entry cannot take it (unknown, another token's, decided already: the decision
    /// that won).
    Refused(WithdrawError),
    /// The session is gone from the store (closed).
    Gone,
    /// The store failed; nothing was decided.
    Store(String),
}

impl<A: App> SessionCore<A> {
    /// Decides proposal `id`; answers the entry as decided. With a store, the decision is
    /// written there first and only then applied here (module doc).
    pub(crate) async fn decide(
        &self,
        id: &str,
        decision: &Decision,
    ) -> Result<ConfirmEntry, DecideError> {
        let Some(p) = &self.persist else {
            return self
                .confirms
                .lock()
                .decide(id, decision, self.now())
                .map_err(DecideError::Refused);
        };
        let _io = p.confirms_io.lock().await;
        decide_stored(self, p, id, decision).await
    }
}

/// Writes `decision` on `id` to the store (compare-and-set, merged and tried again while
/// other processes change the confirmations), then takes the stored text here. The caller
/// holds `p.confirms_io`.
pub(super) async fn decide_stored<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
    id: &str,
    decision: &Decision,
) -> Result<ConfirmEntry, DecideError> {
    for _ in 0..MAX_SWAPS {
        let known = p.stored_confirms.lock().clone();
        let now = core.now();
        let (decided, next) = {
            let mut next: ConfirmStore = core.confirms.lock().merged_with(&known, now);
            let decided = next.decide(id, decision, now);
            (decided, next.to_json())
        };
        let decided = decided.map_err(DecideError::Refused)?;
        match swap(core, p, &known, &next).await? {
            true => return Ok(decided),
            false => continue,
        }
    }
    Err(DecideError::Store(format!(
        "the confirmations kept changing under this decision ({MAX_SWAPS} tries)"
    )))
}

/// Writes everything this process changed in the confirmations (proposals, commits of
/// approved messages, decisions forgotten after their retention), merged with what the
/// store holds, so that no decision stored by another process is undone. The caller holds
/// `p.confirms_io`.
pub(super) async fn write_changes<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
) -> Result<(), DecideError> {
    for _ in 0..MAX_SWAPS {
        let known = p.stored_confirms.lock().clone();
        let next = core
            .confirms
            .lock()
            .merged_with(&known, core.now())
            .to_json();
        if next == known || swap(core, p, &known, &next).await? {
            return Ok(());
        }
    }
    Err(DecideError::Store(format!(
        "the confirmations kept changing under this write ({MAX_SWAPS} tries)"
    )))
}

/// One compare-and-set of `known` to `next`; either way the store's text is taken here
/// (merged). Answers whether `next` was stored.
async fn swap<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
    known: &str,
    next: &str,
) -> Result<bool, DecideError> {
    let swapped = p
        .store
        .swap_confirms(&core.id, known, next)
        .await
        .map_err(|e| DecideError::Store(e.to_string()))?;
    let (stored, won) = match swapped {
        ConfirmsSwap::Stored => (next.to_owned(), true),
        ConfirmsSwap::Changed(now) => (now, false),
        ConfirmsSwap::Gone => return Err(DecideError::Gone),
    };
    take_stored(core, p, stored, known);
    Ok(won)
}

/// Takes `stored` as the confirmations the store holds (this process knew it held
/// `known`): merged into the entries here, waking confirmation waiters when that changed
/// anything.
pub(super) fn take_stored<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
    stored: String,
    known: &str,
) {
    let changed = {
        let mut confirms = core.confirms.lock();
        // Also when the merge kept entries the store lacks: the saver writes them.
        confirms.merge_foreign(&stored, known, core.now()) || confirms.to_json() != stored
    };
    *p.stored_confirms.lock() = stored;
    if changed {
        core.confirm_changed.send_modify(|v| *v += 1);
    }
}

/// How long the saver waits after a failed write before it tries again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// For a durable session: expires the proposals that waited too long (each a decision
/// written first, announced only by the process whose expiry was stored) and writes the
/// confirmations after every change, until the session closes (closing, or dropping an idle
/// session from memory, never erases them).
pub(crate) fn spawn_confirm_saver<A: App>(core: &Arc<SessionCore<A>>) {
    let Some(p) = core.persist.clone() else {
        return;
    };
    let core = core.clone();
    let mut changed = core.confirm_changed.subscribe();
    let mut closed = core.closed.subscribe();
    tokio::spawn(async move {
        loop {
            let due = core
                .confirms
                .lock()
                .next_due()
                .map(|at| Duration::from_millis(at.saturating_sub(core.now())));
            tokio::select! {
                biased;
                _ = closed.wait_for(|c| *c) => return,
                r = changed.changed() => if r.is_err() { return },
                _ = tokio::time::sleep(due.unwrap_or(Duration::MAX)), if due.is_some() => {}
            }
            let failed = {
                let _io = p.confirms_io.lock().await;
                // `close` sets the flag before clearing the entries: an empty list read
                // after the clear is never written.
                if *core.closed.borrow() {
                    return;
                }
                match expire_and_write(&core, &p).await {
                    Ok(()) => false,
                    Err(DecideError::Gone) => return,
                    Err(e) => {
                        log_error(&core, "Confirmations not stored", format!("{e:?}"));
                        true
                    }
                }
            };
            if failed {
                tokio::select! {
                    _ = closed.wait_for(|c| *c) => return,
                    _ = tokio::time::sleep(RETRY_AFTER) => {}
                }
            }
        }
    });
}

/// Expires what is due, then writes the other changes. The caller holds `p.confirms_io`.
async fn expire_and_write<A: App>(
    core: &SessionCore<A>,
    p: &Persistence,
) -> Result<(), DecideError> {
    let due = core.confirms.lock().due(core.now());
    for id in due {
        match decide_stored(core, p, &id, &Decision::Expire).await {
            Ok(entry) => core.announce_expired(&[entry]),
            // Decided by another process first.
            Err(DecideError::Refused(_)) => {}
            Err(e) => return Err(e),
        }
    }
    write_changes(core, p).await
}
