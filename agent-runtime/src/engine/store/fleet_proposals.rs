//! The proposals a fleet's replicas relayed for paired sessions, and the human's decisions on
//! them (feature `fleet`, `docs/pairing.md` §A fleet of replicas): the rows of
//! `agent_paired_proposals` in the PostgreSQL store the replicas share, so that a replica the
//! app re-paired with answers `/confirm-result` for a proposal another replica relayed (and
//! died holding).
//!
//! Every statement runs within the leases' statement timeout; a failure is a [`StoreError`].
//! Bounded: at most [`MAX_PER_TOKEN`] rows per token (the oldest go), a `stateAfter` within
//! the caller's budget, and rows older than the outcomes' time to live swept.

use sqlx::PgPool;

use super::fleet_leases::timed;
use super::StoreError;

/// The most proposals kept per token, as a replica keeps in memory.
pub(crate) const MAX_PER_TOKEN: i64 = 64;

/// A stored proposal: its decision (`confirmed`, `user-cancelled`, `withdrawn`) once made,
/// with the `stateAfter` the app sent (when kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredProposal {
    pub(crate) decision: Option<String>,
    pub(crate) state_after: Option<String>,
    pub(crate) decided_at: Option<i64>,
}

/// The proposal rows, on the shared PostgreSQL pool.
#[derive(Clone)]
pub(crate) struct FleetProposals {
    pool: PgPool,
}

impl FleetProposals {
    /// The proposals on `pool` (a PostgreSQL store's, whose schema has the table).
    pub(crate) fn new(pool: PgPool) -> Self {
        FleetProposals { pool }
    }

    /// Records proposal `id` of `tid`, proposed `at` (kept as it is when recorded already),
    /// and forgets the token's oldest beyond [`MAX_PER_TOKEN`].
    pub(crate) async fn proposed(&self, tid: &str, id: &str, at: u64) -> Result<(), StoreError> {
        timed(
            "the proposal",
            sqlx::query(
                "INSERT INTO agent_paired_proposals (tid, confirm_id, at) VALUES ($1, $2, $3) \
                 ON CONFLICT (tid, confirm_id) DO NOTHING",
            )
            .bind(tid)
            .bind(id)
            .bind(at as i64)
            .execute(&self.pool),
        )
        .await?;
        timed(
            "the proposals kept",
            sqlx::query(
                "DELETE FROM agent_paired_proposals WHERE tid = $1 AND confirm_id NOT IN \
                 (SELECT confirm_id FROM agent_paired_proposals WHERE tid = $1 \
                  ORDER BY at DESC, confirm_id DESC LIMIT $2)",
            )
            .bind(tid)
            .bind(MAX_PER_TOKEN)
            .execute(&self.pool),
        )
        .await?;
        Ok(())
    }

    /// Records the decision on proposal `id` of `tid` when it is recorded and undecided (or
    /// withdrawn, and the decision an approval the app made before it read the withdrawal):
    /// whether it was recorded now. A proposal this fleet never relayed stays unknown.
    pub(crate) async fn decided(
        &self,
        tid: &str,
        id: &str,
        decision: &str,
        state_after: Option<&str>,
        at: u64,
    ) -> Result<bool, StoreError> {
        let done = timed(
            "the decision",
            sqlx::query(
                "UPDATE agent_paired_proposals SET decision = $3, state_after = $4, \
                 decided_at = $5 WHERE tid = $1 AND confirm_id = $2 AND (decision IS NULL \
                 OR (decision = 'withdrawn' AND $3 = 'confirmed'))",
            )
            .bind(tid)
            .bind(id)
            .bind(decision)
            .bind(state_after)
            .bind(at as i64)
            .execute(&self.pool),
        )
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Proposal `id` of `tid`, if this fleet relayed it (and has not forgotten it).
    pub(crate) async fn proposal(
        &self,
        tid: &str,
        id: &str,
    ) -> Result<Option<StoredProposal>, StoreError> {
        let row: Option<(Option<String>, Option<String>, Option<i64>)> = timed(
            "the proposal",
            sqlx::query_as(
                "SELECT decision, state_after, decided_at FROM agent_paired_proposals \
                 WHERE tid = $1 AND confirm_id = $2",
            )
            .bind(tid)
            .bind(id)
            .fetch_optional(&self.pool),
        )
        .await?;
        Ok(
            row.map(|(decision, state_after, decided_at)| StoredProposal {
                decision,
                state_after,
                decided_at,
            }),
        )
    }

    /// Forgets the proposals proposed and decided before `before` (milliseconds).
    pub(crate) async fn sweep(&self, before: u64) -> Result<u64, StoreError> {
        let done = timed(
            "the old proposals",
            sqlx::query(
                "DELETE FROM agent_paired_proposals WHERE at < $1 \
                 AND COALESCE(decided_at, 0) < $1",
            )
            .bind(before as i64)
            .execute(&self.pool),
        )
        .await?;
        Ok(done.rows_affected())
    }
}
