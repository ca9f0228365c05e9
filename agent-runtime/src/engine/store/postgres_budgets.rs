//! The fleet's shared rate-limit buckets in PostgreSQL (`docs/stores.md` §Limits across
//! replicas): `agent_rate_budgets` holds one token bucket per `"<bucket>:<key>"`, and
//! `agent_rate_lease` refills one to the database's clock and takes a slice of it in one round
//! trip, under the row's lock, so replicas leasing at once never take the same token twice.
//! (`PostgresStore`'s `RateBudgets` calls these.)

use super::StoreResult;
use crate::security::Lease;

/// The lease, as a function created with the schema (PostgreSQL only; the table is created by
/// the migration that brings a database to the version with fleet limits). The clock is the
/// database's, so replicas whose clocks differ refill one bucket alike.
macro_rules! lease_function {
    () => {
        "
CREATE OR REPLACE FUNCTION agent_rate_lease(p_name TEXT, p_cap DOUBLE PRECISION,
    p_per_ms DOUBLE PRECISION, p_want DOUBLE PRECISION,
    OUT granted DOUBLE PRECISION, OUT left_tokens DOUBLE PRECISION) AS $$
DECLARE
    now_ms BIGINT := (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT;
    avail DOUBLE PRECISION;
BEGIN
    INSERT INTO agent_rate_budgets (name, tokens, at_ms, full_at_ms)
        VALUES (p_name, p_cap, now_ms, now_ms) ON CONFLICT (name) DO NOTHING;
    SELECT LEAST(p_cap, b.tokens + GREATEST(0, now_ms - b.at_ms) * p_per_ms) INTO avail
        FROM agent_rate_budgets b WHERE b.name = p_name FOR UPDATE;
    granted := GREATEST(0, LEAST(p_want, FLOOR(avail)));
    left_tokens := avail - granted;
    UPDATE agent_rate_budgets SET tokens = left_tokens, at_ms = GREATEST(at_ms, now_ms),
        full_at_ms = GREATEST(at_ms, now_ms) + CEIL((p_cap - left_tokens) / p_per_ms)::BIGINT
        WHERE name = p_name;
END
$$ LANGUAGE plpgsql;
"
    };
}
pub(super) use lease_function;

/// Refills bucket `name` (capacity `capacity`, refilled over `window_ms`) and takes up to
/// `want` whole tokens of it.
pub(super) async fn lease(
    pool: &sqlx::PgPool,
    name: &str,
    capacity: u32,
    window_ms: u64,
    want: u32,
) -> StoreResult<Lease> {
    let cap = f64::from(capacity);
    // Lossless below 2^53 ms; a window is at most an hour.
    let per_ms = cap / (window_ms.max(1) as f64);
    let (granted, left): (f64, f64) =
        sqlx::query_as("SELECT granted, left_tokens FROM agent_rate_lease($1, $2, $3, $4)")
            .bind(name)
            .bind(cap)
            .bind(per_ms)
            .bind(f64::from(want))
            .fetch_one(pool)
            .await?;
    let granted = if granted >= 1.0 {
        // Whole tokens, at most `want`.
        (granted.floor().min(f64::from(want))) as u32
    } else {
        0
    };
    let retry_after_ms = if granted == 0 {
        ((1.0 - left).max(0.0) / per_ms).ceil().max(1.0) as u64
    } else {
        0
    };
    Ok(Lease {
        granted,
        retry_after_ms,
    })
}

/// Deletes the buckets that are full again; answers how many.
pub(super) async fn sweep(pool: &sqlx::PgPool) -> StoreResult<u64> {
    let done = sqlx::query(
        "DELETE FROM agent_rate_budgets \
         WHERE full_at_ms <= (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
