//! The caps of `/agent/mcp` on the stored bindings (`docs/mcp.md` §Bounds on disk): a session
//! dropped from the registry (evicted, expired, ended, deleted) has its binding deleted by the
//! registry; [`trim`] deletes the oldest bindings no live session holds beyond
//! `maxSessionsPerToken` per token and `maxSessions` in all, so no caller can grow the table.

use std::collections::HashSet;
use std::sync::Arc;

use super::registry::McpSessions;
use super::restore::stored_id;
use crate::engine::store::{McpBindings, StoreResult};

/// Holds the stored bindings to the caps of `sessions`: with `tid`, deletes that token's oldest
/// stored sessions that are not live here until it has at most `maxSessionsPerToken`; then the
/// oldest stored sessions not live here until the store holds at most `maxSessions`. Live
/// sessions are never touched here (the registry evicts them, and deletes their bindings).
/// A failure is logged and answered.
///
/// With a fleet's store the bindings are the fleet's registry: a replica's trim deletes the
/// oldest sessions other replicas hold live too, and they end there (`deletions.rs`), so a
/// token holds at most `maxSessionsPerToken` sessions across the fleet.
pub(crate) async fn trim(
    store: &Arc<dyn McpBindings>,
    sessions: &McpSessions,
    tid: Option<&str>,
) -> StoreResult<()> {
    let trimmed = trim_to_caps(store, sessions, tid).await;
    if let Err(e) = &trimmed {
        tracing::error!(target: "tea_agent_runtime::store", "trimming the stored MCP sessions failed: {e}");
    }
    trimmed
}

async fn trim_to_caps(
    store: &Arc<dyn McpBindings>,
    sessions: &McpSessions,
    tid: Option<&str>,
) -> StoreResult<()> {
    let (per_token, max) = sessions.caps();
    if let Some(tid) = tid {
        let ids = store.mcp_ids_of(tid).await?;
        if ids.len() > per_token {
            let live: HashSet<String> = sessions
                .bound_to(tid)
                .iter()
                .map(|id| stored_id(id))
                .collect();
            let excess = ids.len() - per_token;
            for id in ids.iter().filter(|id| !live.contains(*id)).take(excess) {
                store.delete_mcp(id).await?;
            }
        }
    }
    let count = usize::try_from(store.mcp_count().await?).unwrap_or(usize::MAX);
    if count > max {
        let live: HashSet<String> = sessions.live_ids().iter().map(|id| stored_id(id)).collect();
        let excess = count - max;
        let oldest = store.oldest_mcp((excess + live.len()) as u64).await?;
        for id in oldest.iter().filter(|id| !live.contains(*id)).take(excess) {
            store.delete_mcp(id).await?;
        }
    }
    Ok(())
}
