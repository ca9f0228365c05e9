//! The MCP sessions of a revoked token end (`docs/mcp.md` §Bounds): every session the token
//! authenticated, bound to it or unbound since, is dropped and closed, and its stored binding
//! deleted, before the request that notices it is admitted. The registry reads the server's
//! revocation channel; when it missed some (the channel overflowed), every owner is looked up.
//! Likewise, with a fleet's store, the sessions whose bindings another replica deleted
//! (`docs/mcp.md` §Sessions across replicas).

use std::collections::HashSet;

use super::deletions::Deleted;
use super::registry::Revoked;
use super::restore::{binding, stored_id};
use super::McpState;
use crate::app::App;
use crate::security::TokenStatus;

/// Ends the sessions of the tokens revoked since the last look.
pub(crate) async fn end_revoked<A: App>(server: &McpState<A>) {
    let sessions = server.mcp_sessions();
    let revoked = match sessions.revoked_since() {
        Revoked::Tids(tids) => tids,
        Revoked::Missed => {
            let mut gone = Vec::new();
            for tid in sessions.owners() {
                // A record that cannot be read is taken as gone: a session never outlives
                // a token it cannot show is still valid.
                match server.tokens().find_by_tid(&tid).await {
                    Ok(Some(record)) if record.status != TokenStatus::Revoked => {}
                    _ => gone.push(tid),
                }
            }
            gone
        }
    };
    for tid in revoked {
        let ids = sessions.remove_owned_by(&tid);
        sessions.close(ids).await;
    }
}

/// Ends the sessions live here whose stored bindings were deleted since the last look (by
/// another replica: its token's cap, a `DELETE`, an expiry there). When some announcements
/// were missed, every live session's binding is looked up; one that cannot be read is taken
/// as gone (fail closed: the client initializes again).
pub(crate) async fn end_deleted<A: App>(server: &McpState<A>) {
    let sessions = server.mcp_sessions();
    let gone: Vec<String> = match sessions.deletions().since() {
        Deleted::Ids(ids) if ids.is_empty() => return,
        Deleted::Ids(ids) => {
            let ids: HashSet<String> = ids.into_iter().collect();
            sessions
                .live_ids()
                .into_iter()
                .filter(|id| ids.contains(&stored_id(id)))
                .collect()
        }
        Deleted::Missed => {
            let Some(store) = server.mcp_bindings() else {
                return;
            };
            let mut gone = Vec::new();
            for id in sessions.live_ids() {
                if sessions.is_rebuilding(&id) {
                    continue;
                }
                if !matches!(binding(store, &id).await, Ok(Some(_))) {
                    gone.push(id);
                }
            }
            gone
        }
    };
    let gone: Vec<String> = gone.into_iter().filter(|id| sessions.remove(id)).collect();
    if !gone.is_empty() {
        tracing::debug!(
            sessions = gone.len(),
            "MCP sessions deleted by another replica end here"
        );
        sessions.close(gone).await;
    }
}
