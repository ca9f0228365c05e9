//! A session's confirmations behind their lock, with their pending count reported: every lock
//! that could change them (a mutable borrow) reports the count again when it is released, so
//! `agent_pending_proposals` is exact under races, and a session that goes away takes its
//! count back (`docs/operations.md` §Metrics and traces). The same release charges what they
//! take on the heap to the host's budget of what sessions retain, as held bytes (never shed:
//! `docs/stores.md` §Memory).

use std::ops::{Deref, DerefMut};

use parking_lot::{Mutex, MutexGuard};

use super::confirm::ConfirmStore;
use super::retained::HeldCharge;
use crate::telemetry::PendingProposals;

/// The confirmations of one session.
#[derive(Debug)]
pub(crate) struct Confirms(Mutex<(ConfirmStore, PendingProposals, HeldCharge)>);

impl Confirms {
    /// `store`, its heap cost charged to `held`.
    pub(crate) fn new(store: ConfirmStore, mut held: HeldCharge) -> Self {
        held.set(store.heap_cost());
        Confirms(Mutex::new((store, PendingProposals::default(), held)))
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
    guard: MutexGuard<'a, (ConfirmStore, PendingProposals, HeldCharge)>,
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
            let (store, reported, held) = &mut *self.guard;
            reported.set(store.pending_count());
            held.set(store.heap_cost());
        }
    }
}
