//! PostgreSQL for production (`docs/stores.md` §PostgreSQL: connecting): TLS against a real
//! server with a certificate made here (a CA of the test's own signs the server's), the pool's
//! options (`PostgresStore::open_with`), a pool of the caller's (`PostgresStore::from_pool`),
//! and bad settings refused at open with an error naming them.

use std::time::{Duration, Instant};

use agent_examples::counter::Counter;
use agent_tests::postgres::{PgServer, PgTls};
use agent_tests::temp::TempDir;
use agent_tests::TestServer;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tea_agent_runtime::store::{PostgresOptions, PostgresStore, StoreKind, Stores};

/// A CA (its certificate, PEM) and a server certificate it signed for `localhost` and
/// `127.0.0.1`, with the server's key.
struct Certs {
    ca_pem: String,
    server: PgTls,
}

fn make_certs(tls_only: bool) -> Certs {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "agent test CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key")).expect("CA");
    let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("server params");
    let key = KeyPair::generate().expect("server key");
    let cert = params.signed_by(&key, &ca).expect("server certificate");
    Certs {
        ca_pem: ca.pem(),
        server: PgTls {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            tls_only,
        },
    }
}

/// `url` with `query` appended.
fn with(url: &str, query: &str) -> String {
    format!("{url}?{query}")
}

/// Whether the store's pool talks TLS to the server.
async fn pool_uses_tls(store: &PostgresStore) -> bool {
    sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(store.pool())
        .await
        .expect("pg_stat_ssl")
}

/// A session round-trip through a server on `stores`: a message committed, read back.
async fn round_trip(stores: &Stores) {
    let t = TestServer::builder(Counter).stores(stores).start().await;
    let m = t.mint("alice", None).await;
    let sent = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "inc"}, "waitFor": "idle"}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let read = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(read.body["state"]["count"], 1, "{}", read.body);
    assert_eq!(stores.sessions.session_count().await.expect("count"), 1);
}

/// Waits until the store's `LISTEN` task is listening (10 s at most).
async fn listening(stores: &Stores) {
    let _changes = stores
        .sessions
        .changes()
        .expect("PostgreSQL announces changes");
    let deadline = Instant::now() + Duration::from_secs(10);
    while stores.sessions.listener() != tea_agent_runtime::store::ChangesListener::Listening {
        assert!(Instant::now() < deadline, "the LISTEN task never listened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn tls_connects_verifies_the_server_and_plain_connections_are_refused() {
    let certs = make_certs(true);
    let pg = PgServer::start_with_tls(&certs.server);
    let dir = TempDir::new("pg-tls");
    let ca = dir.file("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).expect("write the CA");
    let url = pg.url();

    // `require`: encrypted, the server's certificate not checked; the whole store works,
    // its LISTEN connection included (the server takes no other on TCP).
    let store = PostgresStore::open(&with(&url, "sslmode=require"))
        .await
        .expect("sslmode=require connects");
    assert!(pool_uses_tls(&store).await);
    drop(store);
    let stores = Stores::open(&with(&url, "sslmode=require"))
        .await
        .expect("Stores::open with sslmode=require");
    assert_eq!(stores.kind, StoreKind::Postgres);
    round_trip(&stores).await;
    listening(&stores).await;

    // `verify-full` and `verify-ca` with the CA: the certificate (and the host) checked.
    for mode in ["verify-full", "verify-ca"] {
        let store = PostgresStore::open(&with(&url, &format!("sslmode={mode}&sslrootcert={ca}")))
            .await
            .unwrap_or_else(|e| panic!("sslmode={mode} with the CA: {e}"));
        assert!(pool_uses_tls(&store).await);
    }

    // Without TLS: refused by the server (`hostssl` only), with the server's reason.
    let err = PostgresStore::open(&with(&url, "sslmode=disable"))
        .await
        .expect_err("a plain connection is refused");
    let text = err.to_string();
    assert!(
        text.starts_with("store failed: cannot connect to PostgreSQL at 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("pg_hba.conf"), "{text}");

    // Another CA: the server's certificate does not verify.
    let other = make_certs(true);
    let wrong = dir.file("other-ca.pem");
    std::fs::write(&wrong, &other.ca_pem).expect("write the other CA");
    let started = Instant::now();
    let err = PostgresStore::open_with(
        &with(&url, &format!("sslmode=verify-full&sslrootcert={wrong}")),
        &short_acquire(),
    )
    .await
    .expect_err("a certificate of another CA is refused");
    let text = err.to_string();
    assert!(text.contains("cannot connect to PostgreSQL"), "{text}");
    assert!(
        text.to_lowercase().contains("certificate") || text.contains("UnknownIssuer"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // A pool of the caller's, with TLS: the store creates nothing twice, and works.
    let connect: PgConnectOptions = with(&url, &format!("sslmode=verify-full&sslrootcert={ca}"))
        .parse()
        .expect("connect options");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(connect)
        .await
        .expect("the caller's pool");
    let store = PostgresStore::from_pool(pool).await.expect("from_pool");
    assert!(pool_uses_tls(&store).await);
    let from_pool = Stores::from_store(store, StoreKind::Postgres);
    assert_eq!(from_pool.sessions.session_count().await.expect("count"), 1);
    listening(&from_pool).await;
}

/// Options that give up on a connection after half a second.
fn short_acquire() -> PostgresOptions {
    let mut options = PostgresOptions::default();
    options.acquire_timeout = Duration::from_millis(500);
    options
}

#[tokio::test]
async fn the_pool_options_are_honoured() {
    let certs = make_certs(false);
    let pg = PgServer::start_with_tls(&certs.server);
    let url = with(&pg.url(), "sslmode=require");

    // One connection: the store works, and the LISTEN task (a connection of its own) hears
    // its writes.
    let mut options = short_acquire();
    options.max_connections = 1;
    options.statement_timeout = Some(Duration::from_millis(200));
    let store = PostgresStore::open_with(&url, &options)
        .await
        .expect("one connection");
    let stores = Stores::from_store(store.clone(), StoreKind::Postgres);
    listening(&stores).await;
    let mut changes = stores.sessions.changes().expect("changes");
    round_trip(&stores).await;
    let heard = tokio::time::timeout(Duration::from_secs(10), changes.recv())
        .await
        .expect("a change announced")
        .expect("a payload");
    assert_eq!(heard.split(' ').count(), 3, "{heard}");

    // The statement timeout is the server's, on every connection.
    let shown: String = sqlx::query_scalar("SHOW statement_timeout")
        .fetch_one(store.pool())
        .await
        .expect("SHOW");
    assert_eq!(shown, "200ms");
    let err = sqlx::query("SELECT pg_sleep(2)")
        .execute(store.pool())
        .await
        .expect_err("cancelled by the statement timeout");
    assert!(err.to_string().contains("statement timeout"), "{err}");

    // The one connection held elsewhere: a store call fails after the acquire timeout.
    let held = store.pool().acquire().await.expect("the one connection");
    let started = Instant::now();
    let err = stores
        .sessions
        .session_count()
        .await
        .expect_err("no connection to be had");
    let waited = started.elapsed();
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    drop(held);
    assert_eq!(stores.sessions.session_count().await.expect("count"), 1);
}

#[tokio::test]
async fn bad_settings_fail_at_open_naming_the_setting() {
    let dir = TempDir::new("pg-bad");
    let base = "postgres://postgres@127.0.0.1:1/postgres";

    let err = PostgresStore::open("postgres://postgres@127.0.0.1:notaport/postgres")
        .await
        .expect_err("a port that is no number");
    let text = err.to_string();
    assert!(
        text.starts_with("the PostgreSQL URL does not parse: "),
        "{text}"
    );

    let err = PostgresStore::open(&with(base, "sslmode=sometimes"))
        .await
        .expect_err("an unknown sslmode");
    assert!(err.to_string().contains("does not parse"), "{err}");

    let missing = dir.file("missing-ca.pem");
    let err = Stores::open(&with(
        base,
        &format!("sslmode=verify-full&sslrootcert={missing}"),
    ))
    .await
    .expect_err("a root certificate that does not exist");
    let text = err.to_string();
    assert!(text.contains("(sslrootcert)"), "{text}");
    assert!(text.contains(&missing), "{text}");
    assert!(text.contains("does not read"), "{text}");

    let garbage = dir.file("garbage.pem");
    std::fs::write(&garbage, "not a certificate").expect("write");
    let err = PostgresStore::open(&with(
        base,
        &format!("sslmode=verify-ca&sslrootcert={garbage}"),
    ))
    .await
    .expect_err("a root file without a certificate");
    assert!(
        err.to_string().contains("holds no PEM certificate"),
        "{err}"
    );

    // Deserialized options: durations as humantime spells them, unknown keys refused.
    let options: PostgresOptions =
        serde_json::from_value(json!({"max_connections": 3, "acquire_timeout": "250ms"}))
            .expect("options");
    assert_eq!(options.max_connections, 3);
    assert_eq!(options.acquire_timeout, Duration::from_millis(250));
    assert_eq!(
        options.idle_timeout,
        PostgresOptions::default().idle_timeout
    );
    let err = serde_json::from_value::<PostgresOptions>(json!({"max_conections": 3}))
        .expect_err("a misspelled key");
    assert!(err.to_string().contains("max_conections"), "{err}");
}
