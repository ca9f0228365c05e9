//! The SQL both database stores share: one macro implements every store trait for a type
//! holding `pool: sqlx::Pool<DB>` (reads) and `writer` (writes: `write(sql, params)` and
//! `write_all` for one transaction; SQLite writes through its one connection, PostgreSQL
//! through the pool); the token half, with its fields, is in `sql_tokens`. The statements are
//! written once, in the dialect SQLite and PostgreSQL both accept (`$N` parameters, `ON
//! CONFLICT`, `excluded.`); only the table definitions differ: the binary column type (see
//! `tables`) and PostgreSQL's change trigger.

macro_rules! impl_sql_store {
    ($store:ty, $db:ty, changes) => {
        $crate::engine::store::sql::impl_sql_store!(@impl $store, $db, {
            fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
                Some(self.changes.get_or_init(|| self.listen()).subscribe())
            }
        });
    };
    ($store:ty, $db:ty) => {
        $crate::engine::store::sql::impl_sql_store!(@impl $store, $db, {});
    };
    (@impl $store:ty, $db:ty, { $($changes:tt)* }) => {
        $crate::engine::store::sql_tokens::impl_sql_tokens!($store, $db);

        fn session_from_row(
            row: &<$db as sqlx::Database>::Row,
        ) -> Result<$crate::engine::store::SessionRecord, sqlx::Error> {
            use sqlx::Row as _;
            use $crate::engine::store::sql_values::from_db;
            Ok($crate::engine::store::SessionRecord {
                id: row.try_get("id")?,
                owner: row.try_get("owner")?,
                created_at: from_db(row.try_get("created_at")?),
                updated_at: from_db(row.try_get("updated_at")?),
                seq: from_db(row.try_get("seq")?),
                state: row.try_get("state")?,
                schema_hash: row.try_get("schema_hash")?,
                confirms: row.try_get("confirms")?,
                log_tail: row.try_get("log_tail")?,
            })
        }

        impl $crate::engine::store::SessionStore for $store {
            fn insert_session(
                &self,
                r: $crate::engine::store::SessionRecord,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<()>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    self.writer
                        .write(
                            "INSERT INTO agent_sessions (id, owner, created_at, updated_at, seq, \
                             state, schema_hash, confirms, log_tail) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                            &[
                                (&r.id).into(),
                                (&r.owner).into(),
                                to_db(r.created_at).into(),
                                to_db(r.updated_at).into(),
                                to_db(r.seq).into(),
                                (&r.state).into(),
                                (&r.schema_hash).into(),
                                (&r.confirms).into(),
                                (&r.log_tail).into(),
                            ],
                        )
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
                Box::pin(async move {
                    let row = sqlx::query(
                        "SELECT id, owner, created_at, updated_at, seq, state, schema_hash, \
                         confirms, log_tail FROM agent_sessions WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                    Ok(row.as_ref().map(session_from_row).transpose()?)
                })
            }

            fn commit_state<'a>(
                &'a self,
                id: &'a str,
                seq: u64,
                state: &'a str,
                schema_hash: &'a str,
                now: u64,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<bool>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    let Some(previous) = seq.checked_sub(1) else {
                        return Ok(false);
                    };
                    let done = self
                        .writer
                        .write(
                            "UPDATE agent_sessions SET seq = $2, state = $3, schema_hash = $4, \
                             updated_at = $5 WHERE id = $1 AND seq = $6",
                            &[
                                id.into(),
                                to_db(seq).into(),
                                state.into(),
                                schema_hash.into(),
                                to_db(now).into(),
                                to_db(previous).into(),
                            ],
                        )
                        .await?;
                    Ok(done == 1)
                })
            }

            fn save_confirms<'a>(
                &'a self,
                id: &'a str,
                confirms: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    self.writer
                        .write(
                            "UPDATE agent_sessions SET confirms = $2 WHERE id = $1",
                            &[id.into(), confirms.into()],
                        )
                        .await?;
                    Ok(())
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
                    let done = self
                        .writer
                        .write(
                            "DELETE FROM agent_sessions WHERE id = $1",
                            &[id.into()],
                        )
                        .await?;
                    Ok(done > 0)
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

        impl $crate::engine::store::IdempotencyRecords for $store {
            fn put_idempotent(
                &self,
                e: $crate::engine::store::IdempotencyEntry,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<()>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    self.writer
                        .write(
                            "INSERT INTO agent_idempotency (tid, key, created_at, msg, status, \
                             body, headers) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                             ON CONFLICT (tid, key) DO UPDATE SET \
                             created_at = excluded.created_at, msg = excluded.msg, \
                             status = excluded.status, body = excluded.body, \
                             headers = excluded.headers",
                            &[
                                (&e.tid).into(),
                                (&e.key).into(),
                                to_db(e.created_at).into(),
                                (&e.msg).into(),
                                i32::from(e.status).into(),
                                (&e.body).into(),
                                (&e.headers).into(),
                            ],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn get_idempotent<'a>(
                &'a self,
                tid: &'a str,
                key: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<Option<$crate::engine::store::IdempotencyEntry>>,
            > {
                Box::pin(async move {
                    let row: Option<(i64, String, i32, String, String)> = sqlx::query_as(
                        "SELECT created_at, msg, status, body, headers FROM agent_idempotency \
                         WHERE tid = $1 AND key = $2",
                    )
                    .bind(tid)
                    .bind(key)
                    .fetch_optional(&self.pool)
                    .await?;
                    Ok(row.map(|(created_at, msg, status, body, headers)| {
                        $crate::engine::store::IdempotencyEntry {
                            tid: tid.to_owned(),
                            key: key.to_owned(),
                            created_at: $crate::engine::store::sql_values::from_db(created_at),
                            msg,
                            status: u16::try_from(status).unwrap_or(500),
                            body,
                            headers,
                        }
                    }))
                })
            }

            fn sweep_idempotent(
                &self,
                before: u64,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<u64>> {
                Box::pin(async move {
                    let done = self
                        .writer
                        .write(
                            "DELETE FROM agent_idempotency WHERE created_at < $1",
                            &[$crate::engine::store::sql_values::to_db(before).into()],
                        )
                        .await?;
                    Ok(done)
                })
            }
        }

        impl $crate::engine::store::McpBindings for $store {
            fn bind_mcp(
                &self,
                b: $crate::engine::store::McpBinding,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    // Only an `initialize` (with its params) creates an id.
                    if b.init.is_empty() {
                        if !b.tid.is_empty() {
                            self.writer
                                .write(
                                    "UPDATE agent_mcp_sessions SET tid = $2 WHERE id = $1",
                                    &[(&b.id).into(), (&b.tid).into()],
                                )
                                .await?;
                        }
                        return Ok(());
                    }
                    self.writer
                        .write(
                            "INSERT INTO agent_mcp_sessions (id, tid, init, created_at, deleted) \
                             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET \
                             tid = CASE WHEN excluded.tid = '' THEN agent_mcp_sessions.tid \
                             ELSE excluded.tid END, init = excluded.init",
                            &[
                                (&b.id).into(),
                                (&b.tid).into(),
                                (&b.init).into(),
                                $crate::engine::store::sql_values::to_db(b.created_at).into(),
                                b.deleted.into(),
                            ],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn mcp_binding<'a>(
                &'a self,
                id: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::engine::store::StoreResult<Option<$crate::engine::store::McpBinding>>,
            > {
                Box::pin(async move {
                    let row: Option<(String, String, i64, bool)> = sqlx::query_as(
                        "SELECT tid, init, created_at, deleted FROM agent_mcp_sessions \
                         WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                    Ok(row.map(|(tid, init, created_at, deleted)| $crate::engine::store::McpBinding {
                        id: id.to_owned(),
                        tid,
                        init,
                        created_at: $crate::engine::store::sql_values::from_db(created_at),
                        deleted,
                    }))
                })
            }

            fn delete_mcp<'a>(
                &'a self,
                id: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    self.writer
                        .write(
                            "DELETE FROM agent_mcp_sessions WHERE id = $1",
                            &[id.into()],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn unbind_mcp<'a>(
                &'a self,
                id: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    self.writer
                        .write(
                            "UPDATE agent_mcp_sessions SET tid = '' WHERE id = $1",
                            &[id.into()],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn mcp_ids_of<'a>(
                &'a self,
                tid: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<Vec<String>>> {
                Box::pin(async move {
                    let ids: Vec<(String,)> = sqlx::query_as(
                        "SELECT id FROM agent_mcp_sessions WHERE tid = $1 \
                         ORDER BY created_at, id",
                    )
                    .bind(tid)
                    .fetch_all(&self.pool)
                    .await?;
                    Ok(ids.into_iter().map(|(id,)| id).collect())
                })
            }

            fn mcp_count(
                &self,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<u64>> {
                Box::pin(async move {
                    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM agent_mcp_sessions")
                        .fetch_one(&self.pool)
                        .await?;
                    Ok($crate::engine::store::sql_values::from_db(n))
                })
            }

            fn oldest_mcp(
                &self,
                n: u64,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<Vec<String>>> {
                Box::pin(async move {
                    let ids: Vec<(String,)> = sqlx::query_as(
                        "SELECT id FROM agent_mcp_sessions ORDER BY created_at, id LIMIT $1",
                    )
                    .bind($crate::engine::store::sql_values::to_db(n))
                    .fetch_all(&self.pool)
                    .await?;
                    Ok(ids.into_iter().map(|(id,)| id).collect())
                })
            }
        }

        impl $crate::engine::store::SigningKeys for $store {
            fn signing_key<'a>(
                &'a self,
                name: &'a str,
                candidate: Vec<u8>,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<Vec<u8>>> {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO agent_keys (name, bytes) VALUES ($1, $2) \
                         ON CONFLICT (name) DO NOTHING",
                    )
                    .bind(name)
                    .bind(&candidate)
                    .execute(&self.pool)
                    .await?;
                    let (bytes,): (Vec<u8>,) =
                        sqlx::query_as("SELECT bytes FROM agent_keys WHERE name = $1")
                            .bind(name)
                            .fetch_one(&self.pool)
                            .await?;
                    Ok(bytes)
                })
            }
        }
    };
}

pub(super) use impl_sql_store;
