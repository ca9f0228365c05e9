//! The SQL both database stores share: one macro implements every store trait for a type
//! holding `pool: sqlx::Pool<DB>` (reads) and `writer` (writes: `write(sql, params)` and
//! `write_all` for one transaction; SQLite writes through its one connection, PostgreSQL
//! through the pool, `write_checked` for a transaction that stops at a statement changing no
//! row); the token half, with its fields, is in `sql_tokens`, the session half (the commit
//! log) in `sql_sessions`. The statements are
//! written once, in the dialect SQLite and PostgreSQL both accept (`$N` parameters, `ON
//! CONFLICT`, `excluded.`); only the table definitions differ: the binary column type (see
//! `tables`) and PostgreSQL's change trigger.

macro_rules! impl_sql_store {
    ($store:ty, $db:ty, changes) => {
        $crate::engine::store::sql::impl_sql_store!(@impl $store, $db, {
            fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
                Some(self.channels().sessions.subscribe())
            }

            fn listener(&self) -> $crate::engine::store::ChangesListener {
                self.listener_state()
            }

            fn close(&self) -> futures::future::BoxFuture<'_, ()> {
                Box::pin(async move {
                    self.stop_listener();
                    self.pool.close().await
                })
            }
        });
    };
    ($store:ty, $db:ty) => {
        $crate::engine::store::sql::impl_sql_store!(@impl $store, $db, {
            fn close(&self) -> futures::future::BoxFuture<'_, ()> {
                Box::pin(async move {
                    // SQLite's writer thread: the queued writes first, then joined.
                    self.writer.close().await;
                    self.pool.close().await
                })
            }
        });
    };
    (@impl $store:ty, $db:ty, { $($changes:tt)* }) => {
        $crate::engine::store::sql_tokens::impl_sql_tokens!($store, $db);

        $crate::engine::store::sql_sessions::impl_sql_sessions!($store, $db, { $($changes)* });

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
                             body, headers, claimed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $3) \
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
                use $crate::engine::store::sql_values::from_db;
                type Row = (i64, String, i32, String, String, Option<String>, Option<i64>, i64);
                Box::pin(async move {
                    let row: Option<Row> = sqlx::query_as(
                        "SELECT created_at, msg, status, body, headers, session_id, seq, \
                         claimed_at FROM agent_idempotency WHERE tid = $1 AND key = $2",
                    )
                    .bind(tid)
                    .bind(key)
                    .fetch_optional(&self.pool)
                    .await?;
                    Ok(row.map(
                        |(created_at, msg, status, body, headers, session, seq, claimed_at)| {
                            $crate::engine::store::IdempotencyEntry {
                                tid: tid.to_owned(),
                                key: key.to_owned(),
                                created_at: from_db(created_at),
                                msg,
                                status: u16::try_from(status).unwrap_or(500),
                                body,
                                headers,
                                commit: session.zip(seq.map(from_db)),
                                claimed_at: from_db(claimed_at),
                            }
                        },
                    ))
                })
            }

            fn claim_idempotent(
                &self,
                e: $crate::engine::store::IdempotencyEntry,
                expired_before: u64,
                stale_before: u64,
            ) -> futures::future::BoxFuture<'_, $crate::engine::store::StoreResult<bool>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    let done = self
                        .writer
                        .write(
                            "INSERT INTO agent_idempotency (tid, key, created_at, msg, status, \
                             body, headers, session_id, seq, claimed_at) \
                             VALUES ($1, $2, $3, $4, 0, '', '[]', NULL, NULL, $3) \
                             ON CONFLICT (tid, key) DO UPDATE SET \
                             created_at = excluded.created_at, msg = excluded.msg, status = 0, \
                             body = '', headers = '[]', session_id = NULL, seq = NULL, \
                             claimed_at = excluded.claimed_at \
                             WHERE agent_idempotency.created_at < $5 \
                             OR (agent_idempotency.status = 0 AND agent_idempotency.seq IS NULL \
                             AND agent_idempotency.claimed_at < $6)",
                            &[
                                (&e.tid).into(),
                                (&e.key).into(),
                                to_db(e.created_at).into(),
                                (&e.msg).into(),
                                to_db(expired_before).into(),
                                to_db(stale_before).into(),
                            ],
                        )
                        .await?;
                    Ok(done == 1)
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
                                    "UPDATE agent_mcp_sessions SET tid = $2, token_hash = $3 \
                                     WHERE id = $1",
                                    &[(&b.id).into(), (&b.tid).into(), (&b.token_hash).into()],
                                )
                                .await?;
                        }
                        return Ok(());
                    }
                    self.writer
                        .write(
                            "INSERT INTO agent_mcp_sessions \
                             (id, tid, init, created_at, deleted, token_hash) \
                             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET \
                             token_hash = CASE WHEN excluded.tid = '' \
                             THEN agent_mcp_sessions.token_hash ELSE excluded.token_hash END, \
                             tid = CASE WHEN excluded.tid = '' THEN agent_mcp_sessions.tid \
                             ELSE excluded.tid END, init = excluded.init",
                            &[
                                (&b.id).into(),
                                (&b.tid).into(),
                                (&b.init).into(),
                                $crate::engine::store::sql_values::to_db(b.created_at).into(),
                                b.deleted.into(),
                                (&b.token_hash).into(),
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
                    let row: Option<(String, String, i64, bool, String)> = sqlx::query_as(
                        "SELECT tid, init, created_at, deleted, token_hash \
                         FROM agent_mcp_sessions WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                    Ok(row.map(|(tid, init, created_at, deleted, token_hash)| $crate::engine::store::McpBinding {
                        id: id.to_owned(),
                        tid,
                        token_hash,
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
                            "UPDATE agent_mcp_sessions SET tid = '', token_hash = '' WHERE id = $1",
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

            fn deleted(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
                self.mcp_deletes()
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

            fn set_signing_key<'a>(
                &'a self,
                name: &'a str,
                bytes: Vec<u8>,
            ) -> futures::future::BoxFuture<'a, $crate::engine::store::StoreResult<()>> {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO agent_keys (name, bytes) VALUES ($1, $2) \
                         ON CONFLICT (name) DO UPDATE SET bytes = excluded.bytes",
                    )
                    .bind(name)
                    .bind(&bytes)
                    .execute(&self.pool)
                    .await?;
                    Ok(())
                })
            }
        }
    };
}

pub(super) use impl_sql_store;
