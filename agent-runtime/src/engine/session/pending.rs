//! A session's confirmations behind their lock, with their pending count reported: every lock
//! that could change them (a mutable borrow) reports the count again when it is released, so
//! `agent_pending_proposals` is exact under races, and a session that goes away takes its
//! count back (`docs/operations.md` §Metrics and traces).

use std::ops::{Deref, DerefMut};

use parking_lot::{Mutex, MutexGuard};

use super::confirm::ConfirmStore;
use crate::telemetry::PendingProposals;

/// The confirmations of one session.
#[derive(Debug)]
pub(crate) struct Confirms(Mutex<(ConfirmStore, PendingProposals)>);

impl Confirms {
    pub(crate) fn new(store: ConfirmStore) -> Self {
        Confirms(Mutex::new((store, PendingProposals::default())))
    }

    /// The confirmations, locked.
    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked {
            guard: self.0.lock(),
            changed: false,
        }
    }
}

/// The locked confirmations; reports the pending count on release when borrowed mutably.
pub(crate) struct Locked<'a> {
    guard: MutexGuard<'a, (ConfirmStore, PendingProposals)>,
    changed: bool,
}

impl Deref for Locked<'_> {
    type Target = ConfirmStore;

    fn deref(&self) -> &ConfirmStore {
        &self.guard.0
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut ConfirmStore {
        self.changed = true;
        &mut self.guard.0
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if self.changed {
            let (store, reported) = &mut *self.guard;
            reported.set(store.pending_count());
        }
    }
}
