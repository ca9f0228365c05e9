//! The OAuth store conformance bodies (`security/oauth/conformance`) on the SQL stores: SQLite
//! files and databases of a real PostgreSQL server, a fresh one per body.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::security::oauth::{conformance, OAuthStore};

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn the_sqlite_store_conforms() {
    use crate::engine::store::SqliteStore;
    let dir = std::env::temp_dir().join(format!("agent-oauth-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = AtomicUsize::new(0);
    conformance::all(|| {
        let path = dir.join(format!("{}.db", n.fetch_add(1, Ordering::Relaxed)));
        async move {
            let store = SqliteStore::open(path).await.unwrap();
            Arc::new(store) as Arc<dyn OAuthStore>
        }
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each body on a database of its own, created on one real server; the SQL is the SQLite
/// store's, so this is where PostgreSQL's own semantics (row locks, `INSERT … SELECT … WHERE`)
/// meet the bodies.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_postgres_store_conforms() {
    use crate::engine::store::PostgresStore;
    let pg = agent_tests::postgres::PgServer::start();
    let admin = sqlx::PgPool::connect(&pg.url()).await.expect("connect");
    let n = AtomicUsize::new(0);
    let base = pg.url();
    let base = base.trim_end_matches("/postgres");
    conformance::all(|| {
        let name = format!("oauth_{}", n.fetch_add(1, Ordering::Relaxed));
        let (admin, url) = (admin.clone(), format!("{base}/{name}"));
        async move {
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&admin)
                .await
                .expect("create database");
            let store = PostgresStore::open(&url).await.expect("open");
            Arc::new(store) as Arc<dyn OAuthStore>
        }
    })
    .await;
}
