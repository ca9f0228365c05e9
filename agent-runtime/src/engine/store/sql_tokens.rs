//! The token half of the SQL both database stores share: `impl_sql_tokens!` implements
//! [`TokenStore`](crate::security::TokenStore) for a type holding `pool: sqlx::Pool<DB>`
//! (reads), `writer` (writes; see `sql`), `touches: Arc<Touches>` (coalesced `lastSeenAt`
//! writes) and `token_cache: Option<Arc<TokenCache>>` (the records, cached when this process
//! is the database's only writer: SQLite; `None` for PostgreSQL, which replicas share).
//! Invoked by `impl_sql_store!`.

macro_rules! impl_sql_tokens {
    ($store:ty, $db:ty) => {
        const TOKEN_COLUMNS: &str = "tid, token_hash, uid, session_id, status, created_at, \
             expires_at, last_seen_at, pending_resume_until, origin, label";

        fn token_from_row(
            row: &<$db as sqlx::Database>::Row,
        ) -> Result<$crate::security::TokenRecord, sqlx::Error> {
            use sqlx::Row as _;
            use $crate::engine::store::sql_values::{from_db, status_from};
            Ok($crate::security::TokenRecord {
                tid: row.try_get("tid")?,
                token_hash: row.try_get("token_hash")?,
                uid: row.try_get("uid")?,
                session_id: row.try_get("session_id")?,
                status: status_from(&row.try_get::<String, _>("status")?),
                created_at: from_db(row.try_get("created_at")?),
                expires_at: from_db(row.try_get("expires_at")?),
                last_seen_at: from_db(row.try_get("last_seen_at")?),
                pending_resume_until: row
                    .try_get::<Option<i64>, _>("pending_resume_until")?
                    .map(from_db),
                origin: row.try_get("origin")?,
                label: row.try_get("label")?,
            })
        }

        impl $store {
            async fn tokens_where(
                &self,
                op: &str,
                condition: &str,
                value: &str,
            ) -> Vec<$crate::security::TokenRecord> {
                let sql = format!(
                    "SELECT {TOKEN_COLUMNS} FROM agent_tokens WHERE {condition} ORDER BY ord, tid"
                );
                let rows = sqlx::query(&sql).bind(value).fetch_all(&self.pool).await;
                let records: Result<Vec<$crate::security::TokenRecord>, sqlx::Error> =
                    rows.and_then(|rows| rows.iter().map(token_from_row).collect());
                match records {
                    Ok(mut records) => {
                        for r in &mut records {
                            if let Some(at) = self.touches.get(&r.tid) {
                                r.last_seen_at = r.last_seen_at.max(at);
                            }
                        }
                        records
                    }
                    Err(e) => {
                        $crate::engine::store::sql_values::token_failure(op, &e);
                        Vec::new()
                    }
                }
            }

            /// The token whose `tid` (`by_tid`) or `token_hash` is `value`: from the cache
            /// when this process is the database's only writer, else from the database.
            async fn token_where(
                &self,
                op: &str,
                by_tid: bool,
                value: &str,
            ) -> Option<$crate::security::TokenRecord> {
                use $crate::engine::store::token_cache::Lookup;
                let generation = match &self.token_cache {
                    None => None,
                    Some(cache) => {
                        let found = if by_tid { cache.by_tid(value) } else { cache.by_hash(value) };
                        match found {
                            Lookup::Hit(record) => return Some(record),
                            Lookup::Miss(generation) => Some(generation),
                        }
                    }
                };
                let condition = if by_tid { "tid = $1" } else { "token_hash = $1" };
                let record = self.tokens_where(op, condition, value).await.pop();
                if let (Some(cache), Some(generation), Some(record)) =
                    (&self.token_cache, generation, &record)
                {
                    cache.put(generation, record.clone());
                }
                record
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
                     $6, $7, $8, $9, $10, $11, \
                     (SELECT COALESCE(MAX(ord), 0) + 1 FROM agent_tokens))"
                );
                let status = r.status.as_str();
                let replaced: &[$crate::engine::store::sql_values::Param<'_>] = &[(&r.tid).into()];
                let inserted: &[$crate::engine::store::sql_values::Param<'_>] = &[
                    (&r.tid).into(),
                    (&r.token_hash).into(),
                    (&r.uid).into(),
                    (&r.session_id).into(),
                    status.into(),
                    to_db(r.created_at).into(),
                    to_db(r.expires_at).into(),
                    to_db(r.last_seen_at).into(),
                    r.pending_resume_until.map(to_db).into(),
                    (&r.origin).into(),
                    (&r.label).into(),
                ];
                self.writer
                    .write_all(&[
                        ("DELETE FROM agent_tokens WHERE tid = $1", replaced),
                        (&insert, inserted),
                    ])
                    .await
                    .map(|_| ())
            }

            /// Starts the task writing pending touches every [`TOUCH_FLUSH`] (it ends with the
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
                        for (tid, at) in touches.pending() {
                            let done = writer
                                .write(
                                    "UPDATE agent_tokens SET last_seen_at = $2 \
                                     WHERE tid = $1 AND last_seen_at < $2",
                                    &[(&tid).into(), $crate::engine::store::sql_values::to_db(at).into()],
                                )
                                .await;
                            match done {
                                Ok(_) => touches.written(&tid, at),
                                Err(e) => {
                                    $crate::engine::store::sql_values::token_failure("touch", &e)
                                }
                            }
                        }
                    }
                });
            }

            async fn update_token(
                &self,
                op: &str,
                sql: &str,
                tid: &str,
                now: Option<u64>,
                label: Option<&str>,
            ) {
                let mut params: Vec<$crate::engine::store::sql_values::Param<'_>> = vec![tid.into()];
                if let Some(now) = now {
                    params.push($crate::engine::store::sql_values::to_db(now).into());
                }
                if let Some(label) = label {
                    params.push(label.into());
                }
                if let Err(e) = self.writer.write(sql, &params).await {
                    $crate::engine::store::sql_values::token_failure(op, &e);
                }
            }
        }

        impl $crate::security::TokenStore for $store {
            fn create(
                &self,
                record: $crate::security::TokenRecord,
            ) -> futures::future::BoxFuture<'_, ()> {
                Box::pin(async move {
                    let tid = record.tid.clone();
                    if let Err(e) = self.create_token(record).await {
                        $crate::engine::store::sql_values::token_failure("create", &e);
                    }
                    self.written(&tid);
                })
            }

            fn find_by_tid<'a>(
                &'a self,
                tid: &'a str,
            ) -> futures::future::BoxFuture<'a, Option<$crate::security::TokenRecord>> {
                Box::pin(self.token_where("find_by_tid", true, tid))
            }

            fn find_by_token_hash<'a>(
                &'a self,
                token_hash: &'a str,
            ) -> futures::future::BoxFuture<'a, Option<$crate::security::TokenRecord>> {
                Box::pin(self.token_where("find_by_token_hash", false, token_hash))
            }

            fn list_by_identity<'a>(
                &'a self,
                uid: &'a str,
            ) -> futures::future::BoxFuture<'a, Vec<$crate::security::TokenRecord>> {
                Box::pin(self.tokens_where("list_by_identity", "uid = $1", uid))
            }

            fn list_by_session<'a>(
                &'a self,
                session_id: &'a str,
            ) -> futures::future::BoxFuture<'a, Vec<$crate::security::TokenRecord>> {
                Box::pin(self.tokens_where("list_by_session", "session_id = $1", session_id))
            }

            fn touch<'a>(&'a self, tid: &'a str, now: u64) -> futures::future::BoxFuture<'a, ()> {
                if let Some(cache) = &self.token_cache {
                    cache.touch(tid, now);
                }
                if self.touches.add(tid, now) {
                    self.start_touch_flusher();
                }
                Box::pin(futures::future::ready(()))
            }

            fn mark_active<'a>(
                &'a self,
                tid: &'a str,
                label: &'a str,
                now: u64,
            ) -> futures::future::BoxFuture<'a, ()> {
                self.touches.forget(tid);
                Box::pin(async move {
                    self.update_token(
                        "mark_active",
                        "UPDATE agent_tokens SET status = 'active', last_seen_at = $2, \
                         label = $3 WHERE tid = $1",
                        tid,
                        Some(now),
                        Some(label),
                    )
                    .await;
                    self.written(tid);
                })
            }

            fn revoke<'a>(&'a self, tid: &'a str) -> futures::future::BoxFuture<'a, ()> {
                Box::pin(async move {
                    self.update_token(
                        "revoke",
                        "UPDATE agent_tokens SET status = 'revoked' WHERE tid = $1",
                        tid,
                        None,
                        None,
                    )
                    .await;
                    self.written(tid);
                })
            }

            fn sweep_expired(
                &self,
                now: u64,
                retention_ms: u64,
            ) -> futures::future::BoxFuture<'_, usize> {
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
                    match done {
                        Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
                        Err(e) => {
                            $crate::engine::store::sql_values::token_failure("sweep_expired", &e);
                            0
                        }
                    }
                })
            }
        }
    };
}

pub(super) use impl_sql_tokens;
