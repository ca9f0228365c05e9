//! The MCP sessions of a revoked token end (`docs/mcp.md` §Bounds): every session the token
//! authenticated, bound to it or unbound since, is dropped and closed, and its stored binding
//! deleted, before the request that notices it is admitted. The registry reads the server's
//! revocation channel; when it missed some (the channel overflowed), every owner is looked up.

use super::registry::Revoked;
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
