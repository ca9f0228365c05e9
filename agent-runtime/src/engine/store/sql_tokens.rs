//! The token half of the SQL both database stores share: `impl_sql_tokens!` implements
//! [`TokenStore`](crate::security::TokenStore) for a type holding `pool: sqlx::Pool<DB>`
//! (reads), `writer` (writes; see `sql`), `touches: Arc<Touches>` (coalesced `lastSeenAt`
//! writes) and `token_cache: Option<Arc<TokenCache>>` (the records, cached when this process
//! is the database's only writer: SQLite; `None` for PostgreSQL, which replicas share).
//! Invoked by `impl_sql_store!`.

/// Writes every pending touch of `$touches` through `$writer` (a store's writer); evaluates to
/// the first failure, after trying them all (failures are logged).
macro_rules! write_touches {
    ($touches:expr, $writer:expr) => {{
        let mut failed = None;
        for (tid, at) in $touches.pending() {
            let done = $writer
                .write(
                    "UPDATE agent_tokens SET last_seen_at = $2 \
                     WHERE tid = $1 AND last_seen_at < $2",
                    &[
                        (&tid).into(),
                        $crate::engine::store::sql_values::to_db(at).into(),
                    ],
                )
                .await;
            match done {
                Ok(_) => $touches.written(&tid, at),
                Err(e) => {
                    $crate::engine::store::sql_values::token_failure("touch", &e);
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(()), Err::<(), $crate::security::StoreError>)
    }};
}
pub(super) use write_touches;

macro_rules! impl_sql_tokens {
    ($store:ty, $db:ty) => {
        const TOKEN_COLUMNS: &str = "tid, token_hash, uid, session_id, kind, status, \
             created_at, expires_at, last_seen_at, pending_resume_until, origin, label, scope";

        fn token_from_row(
            row: &<$db as sqlx::Database>::Row,
        ) -> Result<$crate::security::TokenRecord, sqlx::Error> {
            use sqlx::Row as _;
            use $crate::engine::store::sql_values::{from_db, kind_from, status_from};
            Ok($crate::security::TokenRecord {
                tid: row.try_get("tid")?,
                token_hash: row.try_get("token_hash")?,
                uid: row.try_get("uid")?,
                session_id: row.try_get("session_id")?,
                kind: kind_from(&row.try_get::<String, _>("kind")?)?,
                status: status_from(&row.try_get::<String, _>("status")?),
                created_at: from_db(row.try_get("created_at")?),
                expires_at: from_db(row.try_get("expires_at")?),
                last_seen_at: from_db(row.try_get("last_seen_at")?),
                pending_resume_until: row
                    .try_get::<Option<i64>, _>("pending_resume_until")?
                    .map(from_db),
                origin: row.try_get("origin")?,
                label: row.try_get("label")?,
                scope: row.try_get("scope")?,
            })
        }

        impl $store {
            async fn tokens_where(
                &self,
                condition: &str,
                value: &str,
            ) -> $crate::security::StoreResult<Vec<$crate::security::TokenRecord>> {
                let sql = format!(
                    "SELECT {TOKEN_COLUMNS} FROM agent_tokens WHERE {condition} ORDER BY ord, tid"
                );
                // The pending touches are read before the query too: a touch the flusher
                // writes while the query runs may be stored after the query's snapshot and
                // forgotten (written) before the overlay below, and would be lost to this read.
                let before = self.touches.snapshot();
                let rows = sqlx::query(&sql).bind(value).fetch_all(&self.pool).await?;
                let mut records = rows
                    .iter()
                    .map(token_from_row)
                    .collect::<Result<Vec<_>, sqlx::Error>>()?;
                for r in &mut records {
                    let pending = [before.get(&r.tid).copied(), self.touches.get(&r.tid)];
                    for at in pending.into_iter().flatten() {
                        r.last_seen_at = r.last_seen_at.max(at);
                    }
                }
                Ok(records)
            }

            /// The token whose `tid` (`by_tid`) or `token_hash` is `value`: from the cache
            /// when this process is the database's only writer, else from the database.
            async fn token_where(
                &self,
                by_tid: bool,
                value: &str,
            ) -> $crate::security::StoreResult<Option<$crate::security::TokenRecord>> {
                use $crate::engine::store::token_cache::Lookup;
                let generation = match &self.token_cache {
                    None => None,
                    Some(cache) => {
                        let found = if by_tid { cache.by_tid(value) } else { cache.by_hash(value) };
                        match found {
                            Lookup::Hit(record) => return Ok(Some(*record)),
                            Lookup::Miss(generation) => Some(generation),
                        }
                    }
                };
                let condition = if by_tid { "tid = $1" } else { "token_hash = $1" };
                let record = self.tokens_where(condition, value).await?.pop();
                if let (Some(cache), Some(generation), Some(record)) =
                    (&self.token_cache, generation, &record)
                {
                    cache.put(generation, record.clone());
                }
                Ok(record)
            }

            /// Drops the cached copy of `tid` after a write to its record.
            fn written(&self, tid: &str) {
                if let Some(cache) = &self.token_cache {
                    cache.drop_tid(tid);
                }
            }

            async fn create_token(
                &self,
                r: $crate::security::TokenRecord,
            ) -> Result<(), $crate::engine::store::StoreError> {
                use $crate::engine::store::sql_values::to_db;
                let insert = format!(
                    "INSERT INTO agent_tokens ({TOKEN_COLUMNS}, ord) VALUES ($1, $2, $3, $4, $5, \
                     $6, $7, $8, $9, $10, $11, $12, $13, \
                     (SELECT COALESCE(MAX(ord), 0) + 1 FROM agent_tokens))"
                );
                let status = r.status.as_str();
                let inserted: &[$crate::engine::store::sql_values::Param<'_>] = &[
                    (&r.tid).into(),
                    (&r.token_hash).into(),
                    (&r.uid).into(),
                    (&r.session_id).into(),
                    r.kind.as_str().into(),
                    status.into(),
                    to_db(r.created_at).into(),
                    to_db(r.expires_at).into(),
                    to_db(r.last_seen_at).into(),
                    r.pending_resume_until.map(to_db).into(),
                    (&r.origin).into(),
                    (&r.label).into(),
                    (&r.scope).into(),
                ];
                self.writer.write(&insert, inserted).await.map(|_| ())
            }

            /// Starts the task writing pending touches every [`TOUCH_FLUSH`]($crate::engine::store::touches::TOUCH_FLUSH) (it ends with the
            /// store).
            fn start_touch_flusher(&self) {
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                let touches = std::sync::Arc::downgrade(&self.touches);
                let writer = self.writer.clone();
                runtime.spawn(async move {
                    let mut tick = tokio::time::interval($crate::engine::store::touches::TOUCH_FLUSH);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        tick.tick().await;
                        let Some(touches) = touches.upgrade() else { return };
                        let _ = $crate::engine::store::sql_tokens::write_touches!(&touches, &writer);
                    }
                });
            }


            /// The conditional write of a [`TokenChange`]($crate::security::TokenChange): `UPDATE … WHERE tid = $1 AND status
            /// IN (…)`, the affected rows counted. The statuses are the code's own spellings,
            /// never caller text.
            async fn change_token(
                &self,
                tid: &str,
                change: &$crate::security::TokenChange,
            ) -> $crate::security::StoreResult<bool> {
                use $crate::engine::store::sql_values::{to_db, Param};
                let from: Vec<String> = change
                    .from
                    .iter()
                    .filter(|s| **s != $crate::security::TokenStatus::Revoked)
                    .map(|s| format!("'{}'", s.as_str()))
                    .collect();
                if from.is_empty() {
                    return Ok(false);
                }
                let sql = format!(
                    "UPDATE agent_tokens SET status = $2, pending_resume_until = $3, \
                     last_seen_at = COALESCE($4, last_seen_at), label = COALESCE($5, label), \
                     token_hash = COALESCE($6, token_hash) \
                     WHERE tid = $1 AND status IN ({})",
                    from.join(", ")
                );
                let params: [Param<'_>; 6] = [
                    tid.into(),
                    change.status.as_str().into(),
                    change.pending_resume_until.map(to_db).into(),
                    change.last_seen_at.map(to_db).into(),
                    change.label.as_deref().into(),
                    change.token_hash.as_deref().into(),
                ];
                self.written(tid);
                let changed = self.writer.write(&sql, &params).await;
                self.written(tid);
                Ok(changed? > 0)
            }
        }

        impl $crate::security::TokenStore for $store {
            fn create(
                &self,
                record: $crate::security::TokenRecord,
            ) -> futures::future::BoxFuture<'_, $crate::security::StoreResult<()>> {
                Box::pin(async move {
                    let tid = record.tid.clone();
                    let created = self.create_token(record).await;
                    self.written(&tid);
                    created
                })
            }

            fn find_by_tid<'a>(
                &'a self,
                tid: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::TokenRecord>>,
            > {
                Box::pin(self.token_where(true, tid))
            }

            fn find_by_token_hash<'a>(
                &'a self,
                token_hash: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::TokenRecord>>,
            > {
                Box::pin(self.token_where(false, token_hash))
            }

            fn list_by_identity<'a>(
                &'a self,
                uid: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Vec<$crate::security::TokenRecord>>,
            > {
                Box::pin(self.tokens_where("uid = $1", uid))
            }

            fn list_by_session<'a>(
                &'a self,
                session_id: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Vec<$crate::security::TokenRecord>>,
            > {
                Box::pin(self.tokens_where("session_id = $1", session_id))
            }

            fn touch<'a>(
                &'a self,
                tid: &'a str,
                now: u64,
            ) -> futures::future::BoxFuture<'a, $crate::security::StoreResult<()>> {
                if let Some(cache) = &self.token_cache {
                    cache.touch(tid, now);
                }
                if self.touches.add(tid, now) {
                    self.start_touch_flusher();
                }
                Box::pin(futures::future::ready(Ok(())))
            }

            fn change<'a>(
                &'a self,
                tid: &'a str,
                change: &'a $crate::security::TokenChange,
            ) -> futures::future::BoxFuture<'a, $crate::security::StoreResult<bool>> {
                Box::pin(self.change_token(tid, change))
            }

            fn revoke<'a>(
                &'a self,
                tid: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::security::StoreResult<bool>> {
                Box::pin(async move {
                    // Dropped from the cache before and after the write: a read between the
                    // two cannot keep the unrevoked copy.
                    self.written(tid);
                    let revoked = self
                        .writer
                        .write(
                            "UPDATE agent_tokens SET status = 'revoked' WHERE tid = $1",
                            &[tid.into()],
                        )
                        .await;
                    self.written(tid);
                    Ok(revoked? > 0)
                })
            }

            fn sweep_expired(
                &self,
                now: u64,
                retention_ms: u64,
            ) -> futures::future::BoxFuture<'_, $crate::security::StoreResult<usize>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    let done = self
                        .writer
                        .write(
                            "DELETE FROM agent_tokens WHERE expires_at <= $1",
                            &[to_db(now.saturating_sub(retention_ms)).into()],
                        )
                        .await;
                    if let Some(cache) = &self.token_cache {
                        cache.clear();
                    }
                    Ok(usize::try_from(done?).unwrap_or(usize::MAX))
                })
            }

            fn flush(&self) -> futures::future::BoxFuture<'_, $crate::security::StoreResult<()>> {
                Box::pin(async move {
                    $crate::engine::store::sql_tokens::write_touches!(&self.touches, &self.writer)
                })
            }
        }
    };
}

pub(super) use impl_sql_tokens;
