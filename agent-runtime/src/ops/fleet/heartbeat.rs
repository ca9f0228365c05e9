//! The heartbeat of a replica in its fleet: every period it renews the leases of the sockets
//! it holds (so the others keep hopping to it) and removes the rows of replicas that stopped
//! renewing theirs (they died), and forgets the proposals recorded for the fleet past the
//! outcomes' time to live; a socket whose lease is gone or names another replica lost its
//! session to a newer socket there, and is closed (1000), in case that replica's `supersede`
//! note did not arrive. The task holds the server weakly: it ends with it.

use std::sync::Arc;
use std::time::Instant;

use crate::app::App;
use crate::engine::paired::fleet::Fleet;
use crate::engine::paired::outbound::close_code;
use crate::ops::state::ServerState;

/// Starts `fleet`'s heartbeat for `server` (its first beat at once).
pub(crate) fn spawn<A: App>(server: &ServerState<A>, fleet: Arc<Fleet>) {
    let weak = server.downgrade();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::error!("fleet: no runtime to run the heartbeat on; the fleet is not served");
        return;
    };
    runtime.spawn(async move {
        let mut ticker = tokio::time::interval(fleet.heartbeat_period());
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            ticker.tick().await;
            let Some(server) = ServerState::upgrade(&weak) else {
                return;
            };
            if server.is_stopping() {
                return;
            }
            match fleet.beat(Instant::now()).await {
                Ok(lost) => {
                    if failing {
                        tracing::info!("fleet: the heartbeat reaches the store again");
                        failing = false;
                    }
                    for tid in lost {
                        tracing::info!(tid = %tid, "fleet: the socket's lease is another replica's; closing");
                        server.pairing().hub.drop_current(&tid, close_code::NORMAL, server.now());
                    }
                    // The proposals recorded for the fleet live as long as outcomes do.
                    let ttl = server.pairing().options.outcome_ttl;
                    if let Err(e) = fleet.sweep_proposals(ttl).await {
                        tracing::warn!("fleet: old proposals not swept: {e}");
                    }
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!("fleet: the heartbeat did not reach the store: {e}");
                    }
                    failing = true;
                }
            }
        }
    });
}
