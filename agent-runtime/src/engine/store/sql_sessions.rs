//! The session half of the SQL both database stores share: `impl_sql_sessions!` implements
//! [`SessionStore`](crate::engine::store::SessionStore) for a type holding `pool` (reads)
//! and `writer` (writes; see `sql`), with the commit log of `docs/stores.md` §The commit log:
//! a commit is one transaction that records its key (if any), moves `agent_sessions.seq`
//! (compare-and-set), appends its patch to `agent_session_log`, and, with a snapshot,
//! replaces the stored state and deletes the patches at or before the previous snapshot. The
//! snapshot lives in its own table (`agent_session_snapshots`): a commit updates the small
//! session row, and SQLite rewrites a whole row on any update, big state included.
//! Invoked by `impl_sql_store!`.

macro_rules! impl_sql_sessions {
    ($store:ty, $db:ty, { $($changes:tt)* }) => {
        // States and patches are read `CAST … AS TEXT`: the SQLite writer stores a big one as
        // a blob it writes in pieces (`sqlite_writer_thread`); the cast is a no-op on text.
        const SESSION_COLUMNS: &str = "s.id, s.owner, s.created_at, s.updated_at, s.seq, \
             CAST(p.state AS TEXT) AS state, s.schema_hash, s.confirms, s.log_tail, s.snapshot_seq";

        /// A session row: the record (its state is the snapshot's) and its snapshot's commit.
        fn session_from_row(
            row: &<$db as sqlx::Database>::Row,
        ) -> Result<($crate::engine::store::SessionRecord, u64), sqlx::Error> {
            use sqlx::Row as _;
            use $crate::engine::store::sql_values::from_db;
            Ok((
                $crate::engine::store::SessionRecord {
                    id: row.try_get("id")?,
                    owner: row.try_get("owner")?,
                    created_at: from_db(row.try_get("created_at")?),
                    updated_at: from_db(row.try_get("updated_at")?),
                    seq: from_db(row.try_get("seq")?),
                    state: row.try_get("state")?,
                    schema_hash: row.try_get("schema_hash")?,
                    confirms: row.try_get("confirms")?,
                    log_tail: row.try_get("log_tail")?,
                },
                from_db(row.try_get("snapshot_seq")?),
            ))
        }

        impl $store {
            /// The logged patches of session `id` after commit `after` up to `to`, in order.
            async fn patches(
                &self,
                id: &str,
                after: u64,
                to: u64,
            ) -> Result<Vec<(u64, String)>, $crate::engine::store::StoreError> {
                use $crate::engine::store::sql_values::{from_db, to_db};
                let rows: Vec<(i64, String)> = sqlx::query_as(
                    "SELECT seq, CAST(patch AS TEXT) FROM agent_session_log \
                     WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
                )
                .bind(id)
                .bind(to_db(after))
                .bind(to_db(to))
                .fetch_all(&self.pool)
                .await?;
                Ok(rows.into_iter().map(|(s, p)| (from_db(s), p)).collect())
            }

            /// The log of session `id` as stored (`None`: the session is gone).
            async fn log_state(
                &self,
                id: &str,
            ) -> Result<
                Option<(u64, $crate::engine::store::LogState)>,
                $crate::engine::store::StoreError,
            > {
                use $crate::engine::store::sql_values::from_db;
                let row: Option<(i64, i64, i64)> = sqlx::query_as(
                    "SELECT seq, snapshot_seq, log_bytes FROM agent_sessions WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
                Ok(row.map(|(seq, snapshot_seq, log_bytes)| {
                    (
                        from_db(seq),
                        $crate::engine::store::LogState {
                            snapshot_seq: from_db(snapshot_seq),
                            log_bytes: from_db(log_bytes),
                        },
                    )
                }))
            }
        }

        impl $crate::engine::store::SessionStore for $store {
            fn insert_session(
                &self,
                r: $crate::engine::store::SessionRecord,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<()>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    let delete_log: &[$crate::engine::store::sql_values::Param<'_>] =
                        &[(&r.id).into()];
                    let insert: &[$crate::engine::store::sql_values::Param<'_>] = &[
                        (&r.id).into(),
                        (&r.owner).into(),
                        to_db(r.created_at).into(),
                        to_db(r.updated_at).into(),
                        to_db(r.seq).into(),
                        (&r.schema_hash).into(),
                        (&r.confirms).into(),
                        (&r.log_tail).into(),
                    ];
                    let snapshot: &[$crate::engine::store::sql_values::Param<'_>] = &[
                        (&r.id).into(),
                        $crate::engine::store::sql_values::Param::Document(
                            &r.state,
                            $crate::engine::store::sql_values::SNAPSHOT_STATE,
                        ),
                    ];
                    self.writer
                        .write_all(&[
                            // A log left by an earlier session of the same id is not this one's.
                            ("DELETE FROM agent_session_log WHERE session_id = $1", delete_log),
                            ("DELETE FROM agent_session_undo WHERE session_id = $1", delete_log),
                            (
                                "DELETE FROM agent_session_snapshots WHERE session_id = $1",
                                delete_log,
                            ),
                            (
                                "INSERT INTO agent_sessions (id, owner, created_at, updated_at, \
                                 seq, state, schema_hash, confirms, log_tail, snapshot_seq, \
                                 log_bytes) VALUES ($1, $2, $3, $4, $5, '', $6, $7, $8, $5, 0)",
                                insert,
                            ),
                            (
                                "INSERT INTO agent_session_snapshots (session_id, state) \
                                 VALUES ($1, $2)",
                                snapshot,
                            ),
                        ])
                        .await?;
                    Ok(())
                })
            }

            fn load_session<'a>(
                &'a self,
                id: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<Option<$crate::engine::store::SessionRecord>>,
            > {
                use $crate::engine::store::log::{reaches, replay};
                Box::pin(async move {
                    // The row and the log are two reads: a compaction between them can only
                    // drop patches at or before an older snapshot, and a newer commit only
                    // adds patches past `seq`, so a gap means "read again".
                    for _ in 0..8 {
                        let row = sqlx::query(&format!(
                            "SELECT {SESSION_COLUMNS} FROM agent_sessions s \
                             JOIN agent_session_snapshots p ON p.session_id = s.id \
                             WHERE s.id = $1"
                        ))
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await?;
                        let Some((mut record, snapshot_seq)) =
                            row.as_ref().map(session_from_row).transpose()?
                        else {
                            return Ok(None);
                        };
                        if record.seq == snapshot_seq {
                            return Ok(Some(record));
                        }
                        let patches = self.patches(id, snapshot_seq, record.seq).await?;
                        if reaches(&patches, snapshot_seq, record.seq) {
                            record.state =
                                replay(&record.state, patches.iter().map(|(_, p)| p.as_str()))?;
                            return Ok(Some(record));
                        }
                    }
                    Err($crate::engine::store::StoreError::Database(format!(
                        "the log of session {id} does not reach its newest commit"
                    )))
                })
            }

            fn commit<'a>(
                &'a self,
                w: $crate::engine::store::CommitWrite<'a>,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<$crate::engine::store::Committed>,
            > {
                use $crate::engine::store::sql_values::{
                    to_db, Param, LOG_PATCH, SNAPSHOT_STATE, UNDO_RECORD,
                };
                use $crate::engine::store::{Committed, SNAPSHOT_BYTES, SNAPSHOT_EVERY};
                Box::pin(async move {
                    let Some(previous) = w.seq.checked_sub(1) else {
                        return Ok(Committed::Raced);
                    };
                    let patch_len = w.patch.map_or(0, |p| p.len() as u64);
                    let undo_len = w.undo.map_or(0, |u| u.len() as u64);
                    let key_params: Vec<Param<'_>> = match &w.key {
                        Some(k) => vec![
                            k.tid.into(),
                            k.key.into(),
                            to_db(k.created_at).into(),
                            k.msg.into(),
                            w.id.into(),
                            to_db(w.seq).into(),
                        ],
                        None => Vec::new(),
                    };
                    let id_param: [Param<'_>; 1] = [w.id.into()];
                    let snapshot_params: Vec<Param<'_>> = match w.snapshot {
                        Some(state) => vec![w.id.into(), Param::Document(state, SNAPSHOT_STATE)],
                        None => Vec::new(),
                    };
                    let update_params: Vec<Param<'_>> = match w.snapshot {
                        Some(_) => vec![
                            w.id.into(),
                            to_db(w.seq).into(),
                            w.schema_hash.into(),
                            to_db(w.now).into(),
                            to_db(previous).into(),
                        ],
                        None => vec![
                            w.id.into(),
                            to_db(w.seq).into(),
                            w.schema_hash.into(),
                            to_db(w.now).into(),
                            to_db(patch_len + undo_len).into(),
                            to_db(previous).into(),
                            to_db(SNAPSHOT_EVERY).into(),
                            to_db(SNAPSHOT_BYTES).into(),
                        ],
                    };
                    let log_params: Vec<Param<'_>> = match w.patch {
                        Some(p) => vec![
                            w.id.into(),
                            to_db(w.seq).into(),
                            Param::Document(p, LOG_PATCH),
                        ],
                        None => Vec::new(),
                    };
                    let undo_params: Vec<Param<'_>> = match w.undo {
                        Some(u) => vec![
                            w.id.into(),
                            to_db(w.seq).into(),
                            Param::Document(u, UNDO_RECORD),
                        ],
                        None => Vec::new(),
                    };
                    let mut statements: Vec<(&str, &[Param<'_>], bool)> = Vec::new();
                    if w.key.is_some() {
                        // Recorded under the key, unless another commit recorded it first;
                        // a claim row (no answer, no commit) is completed.
                        statements.push((
                            "INSERT INTO agent_idempotency (tid, key, created_at, msg, status, \
                             body, headers, session_id, seq, claimed_at) \
                             VALUES ($1, $2, $3, $4, 0, '', '[]', $5, $6, $3) \
                             ON CONFLICT (tid, key) DO UPDATE SET \
                             session_id = excluded.session_id, seq = excluded.seq \
                             WHERE agent_idempotency.seq IS NULL \
                             AND agent_idempotency.status = 0",
                            &key_params,
                            true,
                        ));
                    }
                    match w.snapshot {
                        Some(_) => {
                            // Compaction: the patches up to the previous snapshot go; those
                            // after it stay, for replicas that hold a commit since.
                            statements.push((
                                "DELETE FROM agent_session_log WHERE session_id = $1 AND \
                                 seq <= (SELECT snapshot_seq FROM agent_sessions WHERE id = $1)",
                                &id_param,
                                false,
                            ));
                            statements.push((
                                "DELETE FROM agent_session_undo WHERE session_id = $1 AND \
                                 seq <= (SELECT snapshot_seq FROM agent_sessions WHERE id = $1)",
                                &id_param,
                                false,
                            ));
                            statements.push((
                                "UPDATE agent_sessions SET seq = $2, schema_hash = $3, \
                                 updated_at = $4, snapshot_seq = $2, log_bytes = 0 \
                                 WHERE id = $1 AND seq = $5",
                                &update_params,
                                true,
                            ));
                        }
                        None => statements.push((
                            "UPDATE agent_sessions SET seq = $2, schema_hash = $3, \
                             updated_at = $4, log_bytes = log_bytes + $5 \
                             WHERE id = $1 AND seq = $6 AND $2 - snapshot_seq <= $7 \
                             AND log_bytes + $5 <= $8",
                            &update_params,
                            true,
                        )),
                    }
                    // The compare-and-set's index.
                    let session_at = statements.len() - 1;
                    if w.snapshot.is_some() {
                        statements.push((
                            "INSERT INTO agent_session_snapshots (session_id, state) \
                             VALUES ($1, $2) ON CONFLICT (session_id) \
                             DO UPDATE SET state = excluded.state",
                            &snapshot_params,
                            false,
                        ));
                    }
                    // A patch over the bytes bound is not logged (its commit carries a
                    // snapshot): a replica before it reloads the whole state.
                    if w.patch.is_some() && patch_len <= SNAPSHOT_BYTES {
                        statements.push((
                            "INSERT INTO agent_session_log (session_id, seq, patch) \
                             VALUES ($1, $2, $3) ON CONFLICT (session_id, seq) \
                             DO UPDATE SET patch = excluded.patch",
                            &log_params,
                            false,
                        ));
                    }
                    if w.undo.is_some() && undo_len <= SNAPSHOT_BYTES {
                        statements.push((
                            "INSERT INTO agent_session_undo (session_id, seq, record) \
                             VALUES ($1, $2, $3) ON CONFLICT (session_id, seq) \
                             DO UPDATE SET record = excluded.record",
                            &undo_params,
                            false,
                        ));
                    }
                    let hold = w
                        .snapshot
                        .and($crate::engine::store::log::compaction_hold());
                    match self.writer.write_checked(&statements, hold).await? {
                        None => Ok(Committed::Stored),
                        Some(0) if w.key.is_some() => Ok(Committed::KeyUsed),
                        Some(i) if i == session_at && w.snapshot.is_none() => {
                            match self.log_state(w.id).await? {
                                Some((seq, log)) if seq == previous => {
                                    Ok(Committed::SnapshotDue(log))
                                }
                                _ => Ok(Committed::Raced),
                            }
                        }
                        Some(_) => Ok(Committed::Raced),
                    }
                })
            }

            fn load_since<'a>(
                &'a self,
                id: &'a str,
                after: u64,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<Option<$crate::engine::store::SessionChanges>>,
            > {
                use $crate::engine::store::sql_values::from_db;
                use $crate::engine::store::SessionChanges;
                Box::pin(async move {
                    let row: Option<(i64, String, String)> = sqlx::query_as(
                        "SELECT seq, schema_hash, confirms FROM agent_sessions WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                    let Some((seq, schema_hash, confirms)) = row else {
                        return Ok(None);
                    };
                    let seq = from_db(seq);
                    let patches = if seq > after {
                        self.patches(id, after, seq).await?
                    } else {
                        Vec::new()
                    };
                    if seq < after || !$crate::engine::store::log::reaches(&patches, after, seq) {
                        return Ok(self.load_session(id).await?.map(SessionChanges::Whole));
                    }
                    Ok(Some(SessionChanges::Patches {
                        seq,
                        schema_hash,
                        confirms,
                        patches: patches.into_iter().map(|(_, p)| p).collect(),
                    }))
                })
            }

            fn undo_records<'a>(
                &'a self,
                id: &'a str,
                after: u64,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<Vec<(u64, String)>>,
            > {
                use $crate::engine::store::sql_values::{from_db, to_db};
                Box::pin(async move {
                    let rows: Vec<(i64, String)> = sqlx::query_as(
                        "SELECT seq, CAST(record AS TEXT) FROM agent_session_undo \
                         WHERE session_id = $1 AND seq > $2 ORDER BY seq",
                    )
                    .bind(id)
                    .bind(to_db(after))
                    .fetch_all(&self.pool)
                    .await?;
                    Ok(rows.into_iter().map(|(s, r)| (from_db(s), r)).collect())
                })
            }

            fn swap_confirms<'a>(
                &'a self,
                id: &'a str,
                expected: &'a str,
                confirms: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<$crate::engine::store::ConfirmsSwap>,
            > {
                use $crate::engine::store::ConfirmsSwap;
                Box::pin(async move {
                    let changed = self
                        .writer
                        .write(
                            "UPDATE agent_sessions SET confirms = $3 \
                             WHERE id = $1 AND confirms = $2",
                            &[id.into(), expected.into(), confirms.into()],
                        )
                        .await?;
                    if changed > 0 {
                        return Ok(ConfirmsSwap::Stored);
                    }
                    let now: Option<(String,)> =
                        sqlx::query_as("SELECT confirms FROM agent_sessions WHERE id = $1")
                            .bind(id)
                            .fetch_optional(&self.pool)
                            .await?;
                    Ok(match now {
                        Some((now,)) => ConfirmsSwap::Changed(now),
                        None => ConfirmsSwap::Gone,
                    })
                })
            }

            fn save_log_tail<'a>(
                &'a self,
                id: &'a str,
                log_tail: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    self.writer
                        .write(
                            "UPDATE agent_sessions SET log_tail = $2 WHERE id = $1",
                            &[id.into(), log_tail.into()],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn delete_session<'a>(
                &'a self,
                id: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<bool>> {
                Box::pin(async move {
                    let params: &[$crate::engine::store::sql_values::Param<'_>] = &[id.into()];
                    let done = self
                        .writer
                        .write_all(&[
                            ("DELETE FROM agent_session_log WHERE session_id = $1", params),
                            ("DELETE FROM agent_session_undo WHERE session_id = $1", params),
                            ("DELETE FROM agent_session_snapshots WHERE session_id = $1", params),
                            ("DELETE FROM agent_sessions WHERE id = $1", params),
                        ])
                        .await?;
                    Ok(done.get(3).copied().unwrap_or(0) > 0)
                })
            }

            fn delete_session_unused<'a>(
                &'a self,
                id: &'a str,
                before: u64,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<bool>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    let row: &[$crate::engine::store::sql_values::Param<'_>] =
                        &[id.into(), to_db(before).into()];
                    let params: &[$crate::engine::store::sql_values::Param<'_>] = &[id.into()];
                    // The row first, only if still unused; its log and snapshot only once the
                    // row is gone (one transaction).
                    let done = self
                        .writer
                        .write_all(&[
                            ("DELETE FROM agent_sessions WHERE id = $1 AND updated_at < $2", row),
                            (
                                "DELETE FROM agent_session_log WHERE session_id = $1 \
                                 AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE id = $1)",
                                params,
                            ),
                            (
                                "DELETE FROM agent_session_undo WHERE session_id = $1 \
                                 AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE id = $1)",
                                params,
                            ),
                            (
                                "DELETE FROM agent_session_snapshots WHERE session_id = $1 \
                                 AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE id = $1)",
                                params,
                            ),
                        ])
                        .await?;
                    Ok(done.first().copied().unwrap_or(0) > 0)
                })
            }

            fn sessions_of<'a>(
                &'a self,
                owner: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<Vec<String>>> {
                Box::pin(async move {
                    let ids: Vec<(String,)> = sqlx::query_as(
                        "SELECT id FROM agent_sessions WHERE owner = $1 ORDER BY created_at, id",
                    )
                    .bind(owner)
                    .fetch_all(&self.pool)
                    .await?;
                    Ok(ids.into_iter().map(|(id,)| id).collect())
                })
            }

            fn ping(&self) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    sqlx::query("SELECT 1").execute(&self.pool).await?;
                    Ok(())
                })
            }

            fn session_count(
                &self,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<u64>> {
                Box::pin(async move {
                    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM agent_sessions")
                        .fetch_one(&self.pool)
                        .await?;
                    Ok($crate::engine::store::sql_values::from_db(n))
                })
            }

            fn touch_session<'a>(
                &'a self,
                id: &'a str,
                at: u64,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    self.writer
                        .write(
                            "UPDATE agent_sessions SET updated_at = $2 \
                             WHERE id = $1 AND updated_at < $2",
                            &[id.into(), $crate::engine::store::sql_values::to_db(at).into()],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn stale_sessions(
                &self,
                before: u64,
                limit: u64,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<Vec<String>>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    let ids: Vec<(String,)> = sqlx::query_as(
                        "SELECT id FROM agent_sessions WHERE updated_at < $1 \
                         ORDER BY updated_at, id LIMIT $2",
                    )
                    .bind(to_db(before))
                    .bind(to_db(limit))
                    .fetch_all(&self.pool)
                    .await?;
                    Ok(ids.into_iter().map(|(id,)| id).collect())
                })
            }

            $($changes)*
        }
    };
}

pub(super) use impl_sql_sessions;
