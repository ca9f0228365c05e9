//! The store conformance bodies (`agent_tests::store_conformance`) against the three
//! implementations; the durable ones are also reopened and read back.

use agent_tests::postgres::PgServer;
use agent_tests::store_conformance as conformance;
use agent_tests::temp::TempDir;
use tea_agent_runtime::store::{StoreKind, Stores};

#[tokio::test]
async fn in_memory_store_conforms() {
    let stores = Stores::in_memory();
    assert_eq!(stores.kind, StoreKind::Memory);
    assert!(!stores.is_durable());
    conformance::all(&stores).await;
}

#[tokio::test]
async fn sqlite_store_conforms_and_survives_reopening() {
    let dir = TempDir::new("sqlite");
    let spec = &dir.file("agent.db");
    {
        let stores = Stores::open(spec).await.expect("open SQLite");
        assert_eq!(stores.kind, StoreKind::Sqlite);
        conformance::all(&stores).await;
    }
    let reopened = Stores::open(spec).await.expect("reopen SQLite");
    conformance::reopened(&reopened).await;
    drop(reopened);
}

#[tokio::test]
async fn postgres_store_conforms_and_survives_reopening() {
    let pg = PgServer::start();
    {
        let stores = Stores::open(&pg.url()).await.expect("open PostgreSQL");
        assert_eq!(stores.kind, StoreKind::Postgres);
        conformance::all(&stores).await;
    }
    let reopened = Stores::open(&pg.url()).await.expect("reopen PostgreSQL");
    conformance::reopened(&reopened).await;
}

#[tokio::test]
async fn a_bad_spec_is_a_clear_error() {
    let err = Stores::open("postgres://nobody@127.0.0.1:1/none")
        .await
        .expect_err("nothing listens on port 1");
    assert!(err.to_string().starts_with("store failed: "), "{err}");
    let dir = TempDir::new("missing");
    let err = Stores::open(&dir.file("sub/x.db"))
        .await
        .expect_err("the parent directory does not exist");
    assert!(err.to_string().starts_with("store failed: "), "{err}");
}
