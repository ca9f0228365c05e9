//! A socket's lease in a fleet (feature `fleet`, `docs/pairing.md` §A fleet of replicas): taken
//! when the socket opens, given back when it closes, both under the socket's fleet-wide lock
//! together with the token's status change, so that a socket opening on one replica and an
//! older one closing on another never overwrite each other's status: the same rule as the
//! one lock of a single server.

use std::sync::Arc;

use crate::engine::paired::fleet::Fleet;
use crate::engine::store::fleet_leases::SocketLock;
use crate::engine::store::StoreError;
use crate::ops::fleet::forwarded::send_note;
use crate::ops::fleet::wire::{HopNote, SUPERSEDE_PATH};

/// A socket being opened under its fleet-wide lock, its lease taken.
pub(super) struct Opening {
    lock: SocketLock,
    fleet: Arc<Fleet>,
    tid: String,
    epoch: i64,
    /// The replica whose socket this one supersedes: its address.
    elsewhere: Option<String>,
}

impl Opening {
    /// Takes `tid`'s lock and its lease for this replica.
    pub(super) async fn begin(fleet: &Arc<Fleet>, tid: &str) -> Result<Opening, StoreError> {
        let lock = fleet.lock(tid).await?;
        match fleet.claim(tid).await {
            Ok((before, epoch)) => Ok(Opening {
                lock,
                fleet: fleet.clone(),
                tid: tid.to_owned(),
                epoch,
                elsewhere: before.map(|b| b.address),
            }),
            Err(e) => {
                lock.unlock().await;
                Err(e)
            }
        }
    }

    /// Whether a socket on another replica is superseded.
    pub(super) fn supersedes(&self) -> bool {
        self.elsewhere.is_some()
    }

    /// The socket was refused after all (its token revoked meanwhile): the lease is given
    /// back.
    pub(super) async fn abandon(self) {
        if let Err(e) = self.fleet.release(&self.tid).await {
            tracing::warn!(tid = %self.tid, "fleet: a refused socket's lease not given back: {e}");
        }
        self.lock.unlock().await;
    }

    /// The socket is registered: the lock is given back, and the replica whose socket it
    /// supersedes is told to close that one (its heartbeat closes it anyway if the note is
    /// lost).
    pub(super) async fn done(self) {
        self.lock.unlock().await;
        if let Some(address) = self.elsewhere {
            let note = HopNote {
                id: self.tid,
                epoch: self.epoch,
            };
            send_note(self.fleet, address, SUPERSEDE_PATH, note);
        }
    }
}

/// The current socket of `tid` closed: under its lock, `closed` (the token's status change)
/// runs only when the lease was still this replica's; a newer socket elsewhere owns the token
/// otherwise. Without the lock (the store failing), nothing is written: the lease ages out.
pub(super) async fn close<F, Fut>(fleet: &Fleet, tid: &str, closed: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let lock = match fleet.lock(tid).await {
        Ok(lock) => lock,
        Err(e) => {
            fleet.forget(tid);
            tracing::error!(
                tid,
                "fleet: a closed socket's lock not taken; its status is left: {e}"
            );
            return;
        }
    };
    match fleet.release(tid).await {
        Ok(true) => closed().await,
        Ok(false) => {
            tracing::info!(
                tid,
                "fleet: a newer socket on another replica holds the session"
            );
        }
        Err(e) => tracing::error!(tid, "fleet: a closed socket's lease not given back: {e}"),
    }
    lock.unlock().await;
}
