//! The OAuth half of the SQL both database stores share (feature `oauth`):
//! `impl_sql_oauth!` implements [`OAuthStore`](crate::security::oauth::OAuthStore) for a
//! type holding `pool` (reads) and `writer` (writes; see `sql`), on the tables of schema
//! version 7 (`tables`). The atomic steps are single conditional statements, so they hold
//! across replicas on PostgreSQL as on SQLite's one writer:
//!
//! - taking a code is `UPDATE … SET spent = TRUE WHERE hash = $1 AND spent = FALSE`: one
//!   caller changes the row, any other reads it spent (a reuse);
//! - rotating a refresh token is `UPDATE agent_oauth_grants … WHERE id = $1 AND refresh_hash
//!   = <the one presented>` in the transaction that stores the new tokens, rolled back when
//!   it changes no row (PostgreSQL re-checks the condition on the row a concurrent
//!   transaction committed, so of two replicas one wins);
//! - the bounded inserts are `INSERT … SELECT … WHERE (SELECT COUNT(*) …) < max`.
//!
//! Every replica reads the grants and access tokens from the database on each request: a
//! revoke on one is seen by the others at once (no cache).

macro_rules! impl_sql_oauth {
    ($store:ty, $db:ty) => {
        const OAUTH_GRANT_COLUMNS: &str = "g.id, g.client_id, g.tid, g.uid, g.session_id, \
             g.scope, g.resource, g.created_at, g.expires_at, g.refresh_hash, g.generation, \
             g.revoked";

        fn oauth_grant_from_row(
            row: &<$db as sqlx::Database>::Row,
        ) -> Result<$crate::security::oauth::GrantRecord, sqlx::Error> {
            use sqlx::Row as _;
            use $crate::engine::store::sql_values::from_db;
            Ok($crate::security::oauth::GrantRecord {
                id: row.try_get("id")?,
                client_id: row.try_get("client_id")?,
                tid: row.try_get("tid")?,
                uid: row.try_get("uid")?,
                session_id: row.try_get("session_id")?,
                scope: row.try_get("scope")?,
                resource: row.try_get("resource")?,
                created_at: from_db(row.try_get("created_at")?),
                expires_at: from_db(row.try_get("expires_at")?),
                refresh_hash: row.try_get("refresh_hash")?,
                generation: from_db(row.try_get("generation")?),
                revoked: row.try_get("revoked")?,
            })
        }

        impl $store {
            /// Drops the expired rows (`sweep`, its `$1` = `now`), then runs `insert`, an
            /// `INSERT … SELECT … WHERE (SELECT COUNT(*) …) < max`, in one transaction:
            /// answers whether the row was inserted (false: the bound is reached).
            async fn swept_bounded_insert(
                &self,
                sweep: &str,
                now: u64,
                insert: &str,
                params: &[$crate::engine::store::sql_values::Param<'_>],
            ) -> $crate::security::StoreResult<bool> {
                use $crate::engine::store::sql_values::to_db;
                let stopped = self
                    .writer
                    .write_checked(
                        &[(sweep, &[to_db(now).into()], false), (insert, params, true)],
                        None,
                    )
                    .await?;
                Ok(stopped.is_none())
            }

            /// A spent code presented again: the reuse is recorded on the code first (so a
            /// grant not stored yet never will be), then the grant it made, if stored, is
            /// read to be revoked.
            async fn code_reused(
                &self,
                hash: &str,
            ) -> $crate::security::StoreResult<$crate::security::oauth::CodeTaken> {
                self.writer
                    .write(
                        "UPDATE agent_oauth_codes SET reused = TRUE WHERE hash = $1",
                        &[hash.into()],
                    )
                    .await?;
                let grant: Option<(Option<String>,)> =
                    sqlx::query_as("SELECT grant_id FROM agent_oauth_codes WHERE hash = $1")
                        .bind(hash)
                        .fetch_optional(&self.pool)
                        .await?;
                Ok($crate::security::oauth::CodeTaken::Reused(
                    grant.and_then(|(g,)| g),
                ))
            }

            /// The grant whose token table `table` (`agent_oauth_refresh`,
            /// `agent_oauth_access`) holds `hash`; `None` for `id` … the grant of that id.
            async fn oauth_grant_where(
                &self,
                table: Option<&str>,
                value: &str,
            ) -> $crate::security::StoreResult<Option<$crate::security::oauth::GrantRecord>> {
                let sql = match table {
                    Some(table) => format!(
                        "SELECT {OAUTH_GRANT_COLUMNS} FROM {table} t \
                         JOIN agent_oauth_grants g ON g.id = t.grant_id WHERE t.hash = $1"
                    ),
                    None => format!(
                        "SELECT {OAUTH_GRANT_COLUMNS} FROM agent_oauth_grants g WHERE g.id = $1"
                    ),
                };
                let row = sqlx::query(&sql)
                    .bind(value)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(row.as_ref().map(oauth_grant_from_row).transpose()?)
            }
        }

        impl $crate::security::oauth::OAuthStore for $store {
            fn register_client(
                &self,
                c: $crate::security::oauth::ClientRecord,
                max: u64,
                now: u64,
            ) -> futures::future::BoxFuture<'_, $crate::security::StoreResult<bool>> {
                use $crate::engine::store::sql_values::{to_db, Param};
                Box::pin(async move {
                    let uris = serde_json::to_string(&c.redirect_uris)
                        .map_err(|e| $crate::security::StoreError::Database(e.to_string()))?;
                    let insert: &[Param<'_>] = &[
                        (&c.client_id).into(),
                        (&c.client_name).into(),
                        (&uris).into(),
                        to_db(c.registered_at).into(),
                        to_db(c.expires_at).into(),
                        to_db(max).into(),
                    ];
                    self.swept_bounded_insert(
                        "DELETE FROM agent_oauth_clients WHERE expires_at <= $1",
                        now,
                        "INSERT INTO agent_oauth_clients (client_id, client_name, \
                         redirect_uris, registered_at, expires_at) \
                         SELECT $1, $2, $3, $4, $5 \
                         WHERE (SELECT COUNT(*) FROM agent_oauth_clients) < $6",
                        insert,
                    )
                    .await
                })
            }

            fn find_client<'a>(
                &'a self,
                client_id: &'a str,
                now: u64,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::oauth::ClientRecord>>,
            > {
                use $crate::engine::store::sql_values::{from_db, to_db};
                Box::pin(async move {
                    let row: Option<(String, String, i64, i64)> = sqlx::query_as(
                        "SELECT client_name, redirect_uris, registered_at, expires_at \
                         FROM agent_oauth_clients WHERE client_id = $1 AND expires_at > $2",
                    )
                    .bind(client_id)
                    .bind(to_db(now))
                    .fetch_optional(&self.pool)
                    .await?;
                    let Some((client_name, uris, registered_at, expires_at)) = row else {
                        return Ok(None);
                    };
                    let redirect_uris: Vec<String> = serde_json::from_str(&uris).map_err(|e| {
                        $crate::security::StoreError::Database(format!(
                            "the stored redirect URIs of client {client_id} do not read: {e}"
                        ))
                    })?;
                    Ok(Some($crate::security::oauth::ClientRecord {
                        client_id: client_id.to_owned(),
                        client_name,
                        redirect_uris,
                        registered_at: from_db(registered_at),
                        expires_at: from_db(expires_at),
                    }))
                })
            }

            fn client_used<'a>(
                &'a self,
                client_id: &'a str,
                expires_at: u64,
            ) -> futures::future::BoxFuture<'a, $crate::security::StoreResult<()>> {
                use $crate::engine::store::sql_values::to_db;
                Box::pin(async move {
                    self.writer
                        .write(
                            "UPDATE agent_oauth_clients SET expires_at = $2 \
                             WHERE client_id = $1 AND expires_at < $2",
                            &[client_id.into(), to_db(expires_at).into()],
                        )
                        .await?;
                    Ok(())
                })
            }

            fn add_code(
                &self,
                hash: String,
                c: $crate::security::oauth::CodeRecord,
                max: u64,
                now: u64,
            ) -> futures::future::BoxFuture<'_, $crate::security::StoreResult<bool>> {
                use $crate::engine::store::sql_values::{to_db, Param};
                Box::pin(async move {
                    let insert: &[Param<'_>] = &[
                        (&hash).into(),
                        (&c.client_id).into(),
                        (&c.redirect_uri).into(),
                        (&c.challenge).into(),
                        (&c.scope).into(),
                        (&c.uid).into(),
                        (&c.session_id).into(),
                        (&c.resource).into(),
                        to_db(c.expires_at).into(),
                        to_db(max).into(),
                    ];
                    self.swept_bounded_insert(
                        "DELETE FROM agent_oauth_codes WHERE expires_at <= $1",
                        now,
                        "INSERT INTO agent_oauth_codes (hash, client_id, redirect_uri, \
                         challenge, scope, uid, session_id, resource, expires_at, spent) \
                         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, FALSE \
                         WHERE (SELECT COUNT(*) FROM agent_oauth_codes WHERE spent = FALSE) < $10",
                        insert,
                    )
                    .await
                })
            }

            fn take_code<'a>(
                &'a self,
                hash: &'a str,
                now: u64,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<$crate::security::oauth::CodeTaken>,
            > {
                use $crate::engine::store::sql_values::from_db;
                use $crate::security::oauth::{CodeRecord, CodeTaken};
                type Row = (
                    String,
                    String,
                    String,
                    String,
                    String,
                    String,
                    String,
                    i64,
                    bool,
                );
                const READ: &str = "SELECT client_id, redirect_uri, challenge, scope, uid, \
                     session_id, resource, expires_at, spent \
                     FROM agent_oauth_codes WHERE hash = $1";
                Box::pin(async move {
                    let row: Option<Row> = sqlx::query_as(READ)
                        .bind(hash)
                        .fetch_optional(&self.pool)
                        .await?;
                    let Some(row) = row else {
                        return Ok(CodeTaken::Unknown);
                    };
                    let (client_id, redirect_uri, challenge, scope, uid, session_id) =
                        (row.0, row.1, row.2, row.3, row.4, row.5);
                    let (resource, expires_at, spent) = (row.6, from_db(row.7), row.8);
                    if spent {
                        return self.code_reused(hash).await;
                    }
                    // The one conditional write that spends it: a concurrent taker loses.
                    let won = self
                        .writer
                        .write(
                            "UPDATE agent_oauth_codes SET spent = TRUE \
                             WHERE hash = $1 AND spent = FALSE",
                            &[hash.into()],
                        )
                        .await?;
                    if won == 0 {
                        return self.code_reused(hash).await;
                    }
                    if expires_at <= now {
                        return Ok(CodeTaken::Expired);
                    }
                    Ok(CodeTaken::Fresh(CodeRecord {
                        client_id,
                        redirect_uri,
                        challenge,
                        scope,
                        uid,
                        session_id,
                        resource,
                        expires_at,
                    }))
                })
            }

            fn create_grant(
                &self,
                new: $crate::security::oauth::NewGrant,
                max: u64,
                now: u64,
            ) -> futures::future::BoxFuture<
                '_,
                $crate::security::StoreResult<$crate::security::oauth::GrantStored>,
            > {
                use $crate::engine::store::sql_values::{to_db, Param};
                Box::pin(async move {
                    let g = &new.grant;
                    let sweep: &[Param<'_>] = &[to_db(now).into()];
                    let grant: &[Param<'_>] = &[
                        (&g.id).into(),
                        (&g.client_id).into(),
                        (&g.tid).into(),
                        (&g.uid).into(),
                        (&g.session_id).into(),
                        (&g.scope).into(),
                        (&g.resource).into(),
                        to_db(g.created_at).into(),
                        to_db(g.expires_at).into(),
                        (&g.refresh_hash).into(),
                        to_db(max).into(),
                    ];
                    let refresh: &[Param<'_>] = &[(&g.refresh_hash).into(), (&g.id).into()];
                    let access: &[Param<'_>] = &[
                        (&new.access_hash).into(),
                        (&g.id).into(),
                        (&g.tid).into(),
                        to_db(new.access_expires_at).into(),
                    ];
                    let code: &[Param<'_>] = &[(&new.code_hash).into(), (&g.id).into()];
                    // The code is named first: its row lock orders this against a reuse
                    // being recorded (`code_reused`), and a reuse recorded first stops it.
                    let stopped = self
                        .writer
                        .write_checked(
                            &[
                                // Grants past their end or revoked go, with their tokens.
                                (
                                    "DELETE FROM agent_oauth_access WHERE expires_at <= $1 \
                                     OR grant_id IN (SELECT id FROM agent_oauth_grants \
                                     WHERE expires_at <= $1 OR revoked = TRUE)",
                                    sweep,
                                    false,
                                ),
                                (
                                    "DELETE FROM agent_oauth_refresh WHERE grant_id IN \
                                     (SELECT id FROM agent_oauth_grants \
                                     WHERE expires_at <= $1 OR revoked = TRUE)",
                                    sweep,
                                    false,
                                ),
                                (
                                    "DELETE FROM agent_oauth_grants \
                                     WHERE expires_at <= $1 OR revoked = TRUE",
                                    sweep,
                                    false,
                                ),
                                (
                                    "UPDATE agent_oauth_codes SET grant_id = $2 \
                                     WHERE hash = $1 AND reused = FALSE",
                                    code,
                                    true,
                                ),
                                (
                                    "INSERT INTO agent_oauth_grants (id, client_id, tid, uid, \
                                     session_id, scope, resource, created_at, expires_at, \
                                     refresh_hash, generation, revoked) \
                                     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, FALSE \
                                     WHERE (SELECT COUNT(*) FROM agent_oauth_grants) < $11",
                                    grant,
                                    true,
                                ),
                                (
                                    "INSERT INTO agent_oauth_refresh (hash, grant_id, generation) \
                                     VALUES ($1, $2, 0)",
                                    refresh,
                                    false,
                                ),
                                (
                                    "INSERT INTO agent_oauth_access (hash, grant_id, tid, \
                                     expires_at, generation) VALUES ($1, $2, $3, $4, 0)",
                                    access,
                                    false,
                                ),
                            ],
                            None,
                        )
                        .await?;
                    Ok(match stopped {
                        None => $crate::security::oauth::GrantStored::Stored,
                        Some(3) => $crate::security::oauth::GrantStored::CodeNotHeld,
                        Some(_) => $crate::security::oauth::GrantStored::Full,
                    })
                })
            }

            fn rotate(
                &self,
                r: $crate::security::oauth::Rotation,
                now: u64,
            ) -> futures::future::BoxFuture<'_, $crate::security::StoreResult<bool>> {
                use $crate::engine::store::sql_values::{to_db, Param};
                use $crate::security::oauth::{ACCESS_PER_GRANT, RETIRED_PER_GRANT};
                Box::pin(async move {
                    let generation = to_db(r.generation);
                    let swap: &[Param<'_>] = &[
                        (&r.grant_id).into(),
                        (&r.new_hash).into(),
                        generation.into(),
                        (&r.old_hash).into(),
                        to_db(now).into(),
                    ];
                    let refresh: &[Param<'_>] =
                        &[(&r.new_hash).into(), (&r.grant_id).into(), generation.into()];
                    let retired_from = to_db(r.generation.saturating_sub(RETIRED_PER_GRANT));
                    let forget: &[Param<'_>] = &[(&r.grant_id).into(), retired_from.into()];
                    let access: &[Param<'_>] = &[
                        (&r.access_hash).into(),
                        (&r.grant_id).into(),
                        (&r.tid).into(),
                        to_db(r.access_expires_at).into(),
                        generation.into(),
                    ];
                    let access_from = to_db(r.generation.saturating_sub(ACCESS_PER_GRANT - 1));
                    let retire: &[Param<'_>] =
                        &[(&r.grant_id).into(), access_from.into(), to_db(now).into()];
                    let stopped = self
                        .writer
                        .write_checked(
                            &[
                                (
                                    "UPDATE agent_oauth_grants SET refresh_hash = $2, \
                                     generation = $3 WHERE id = $1 AND refresh_hash = $4 \
                                     AND revoked = FALSE AND expires_at > $5",
                                    swap,
                                    true,
                                ),
                                (
                                    "INSERT INTO agent_oauth_refresh (hash, grant_id, generation) \
                                     VALUES ($1, $2, $3)",
                                    refresh,
                                    false,
                                ),
                                (
                                    "DELETE FROM agent_oauth_refresh \
                                     WHERE grant_id = $1 AND generation < $2",
                                    forget,
                                    false,
                                ),
                                (
                                    "INSERT INTO agent_oauth_access (hash, grant_id, tid, \
                                     expires_at, generation) VALUES ($1, $2, $3, $4, $5)",
                                    access,
                                    false,
                                ),
                                (
                                    "DELETE FROM agent_oauth_access WHERE grant_id = $1 \
                                     AND (generation < $2 OR expires_at <= $3)",
                                    retire,
                                    false,
                                ),
                            ],
                            None,
                        )
                        .await?;
                    Ok(stopped.is_none())
                })
            }

            fn grant_by_refresh<'a>(
                &'a self,
                hash: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::oauth::GrantRecord>>,
            > {
                Box::pin(self.oauth_grant_where(Some("agent_oauth_refresh"), hash))
            }

            fn grant_by_access<'a>(
                &'a self,
                hash: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::oauth::GrantRecord>>,
            > {
                Box::pin(self.oauth_grant_where(Some("agent_oauth_access"), hash))
            }

            fn access<'a>(
                &'a self,
                hash: &'a str,
                now: u64,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::oauth::AccessRecord>>,
            > {
                use $crate::engine::store::sql_values::{from_db, to_db};
                Box::pin(async move {
                    let row: Option<(String, String, i64)> = sqlx::query_as(
                        "SELECT a.grant_id, a.tid, a.expires_at FROM agent_oauth_access a \
                         JOIN agent_oauth_grants g ON g.id = a.grant_id \
                         WHERE a.hash = $1 AND a.expires_at > $2 AND g.revoked = FALSE",
                    )
                    .bind(hash)
                    .bind(to_db(now))
                    .fetch_optional(&self.pool)
                    .await?;
                    Ok(row.map(|(grant_id, tid, expires_at)| {
                        $crate::security::oauth::AccessRecord {
                            grant_id,
                            tid,
                            expires_at: from_db(expires_at),
                        }
                    }))
                })
            }

            fn revoke_grant<'a>(
                &'a self,
                id: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                $crate::security::StoreResult<Option<$crate::security::oauth::GrantRecord>>,
            > {
                Box::pin(async move {
                    let Some(before) = self.oauth_grant_where(None, id).await? else {
                        return Ok(None);
                    };
                    let params: &[$crate::engine::store::sql_values::Param<'_>] = &[id.into()];
                    self.writer
                        .write_all(&[
                            ("UPDATE agent_oauth_grants SET revoked = TRUE WHERE id = $1", params),
                            ("DELETE FROM agent_oauth_access WHERE grant_id = $1", params),
                        ])
                        .await?;
                    Ok(Some(before))
                })
            }

            fn revoke_access<'a>(
                &'a self,
                hash: &'a str,
            ) -> futures::future::BoxFuture<'a, $crate::security::StoreResult<bool>> {
                Box::pin(async move {
                    let gone = self
                        .writer
                        .write("DELETE FROM agent_oauth_access WHERE hash = $1", &[hash.into()])
                        .await?;
                    Ok(gone > 0)
                })
            }
        }
    };
}

pub(super) use impl_sql_oauth;

#[cfg(test)]
#[path = "sql_oauth_tests.rs"]
mod tests;
