//! A fleet of replicas behind one address (feature `fleet`, `docs/pairing.md` §A fleet of
//! replicas): a paired session's call that arrives on a replica without its socket is carried
//! to the replica holding it and answered from there.
//!
//! - `wire`: what replicas say to each other (the routes, the carried call, the answer's lines);
//! - `forwarded`: the caller's side, [`ForwardedRelay`](forwarded::ForwardedRelay), a
//!   `SessionBackend` whose every operation is one hop;
//! - the side of the replica holding the socket, which answers a hop as a local call of its
//!   relay (the gate ran where the call arrived), is `super::fleet_holder`: it runs operations
//!   from the table, which this folder (imported by the gate) must not import;
//! - `heartbeat`: the task that renews this replica's leases and closes the sockets whose
//!   session a newer socket elsewhere took.

pub(crate) mod forwarded;
pub(crate) mod heartbeat;
pub(crate) mod wire;

use std::sync::Arc;

use super::backend::SessionBackend;
use super::error::ApiError;
use super::state::ServerState;
use crate::app::App;
use crate::engine::paired::fleet::Fleet;
use crate::security::TokenRecord;

/// The backend of a paired `record` whose socket is not on this replica: the hop to the live
/// replica holding it, else 503 `paused` with the hint of a session without socket; 500 when
/// the store cannot say.
pub(crate) async fn backend_elsewhere<A: App>(
    server: &ServerState<A>,
    fleet: &Arc<Fleet>,
    record: &TokenRecord,
) -> Result<Arc<dyn SessionBackend>, ApiError> {
    match fleet.holder_elsewhere(&record.tid).await {
        Ok(Some(lease)) => Ok(Arc::new(forwarded::ForwardedRelay::new(
            server.clone(),
            fleet.clone(),
            lease,
        ))),
        Ok(None) => Err(super::paired::paused(
            Some(record),
            server.now(),
            server.pairing().options.retry_after.as_secs(),
        )),
        Err(e) => {
            tracing::error!(tid = %record.tid, "fleet: the socket's lease not read: {e}");
            crate::telemetry::fleet_hop_failed("store");
            Err(e.into())
        }
    }
}
