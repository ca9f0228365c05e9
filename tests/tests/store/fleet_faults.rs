//! What a replica answers when the replica holding a paired socket answers badly (issue 50,
//! `docs/pairing.md` §A fleet of replicas, failure cases): one real relay replica on a real
//! PostgreSQL, and a fake holder the test runs (an HTTP server at the address a lease row
//! names). A line that does not parse, a line without its fields, a line over its budget, a
//! refused hop, a holder that goes silent, one that dies mid-answer and one whose answer ends
//! without its last line: each is answered with
//! a clear error (500 `internal` with the reason, or 503 `paused` with the reconnect hint),
//! never a hang and never a success.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tests::lb::{mint_paired, RelayFleet};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Mutex;

use super::fleet_calls::{lap, PAIRING};

/// How the fake holder answers the next hop.
#[derive(Clone)]
enum Fake {
    /// Status 200 and these bytes, then the end of the body.
    Lines(Vec<u8>),
    /// This status, no body.
    Status(u16),
    /// Status 200, then nothing for a minute.
    Silent,
    /// Status 200, an `alive` line, then the connection ends before any answer.
    DiesMidAnswer,
}

async fn fake_holder(mode: Arc<Mutex<Fake>>) -> String {
    let app = axum::Router::new().route(
        "/agent/fleet/v1/call",
        axum::routing::post(move || {
            let mode = mode.lock().expect("mode").clone();
            async move {
                match mode {
                    Fake::Lines(bytes) => Response::new(Body::from(bytes)),
                    Fake::Status(status) => {
                        let mut r = Response::new(Body::empty());
                        *r.status_mut() = StatusCode::from_u16(status).expect("status");
                        r
                    }
                    Fake::Silent => {
                        let stream = async_stream(vec![], Duration::from_secs(60), false);
                        Response::new(Body::from_stream(stream))
                    }
                    Fake::DiesMidAnswer => {
                        let alive = b"{\"k\":\"alive\"}\n".to_vec();
                        let stream = async_stream(alive, Duration::from_millis(300), true);
                        Response::new(Body::from_stream(stream))
                    }
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    address
}

/// A body that sends `first`, waits `then`, and ends with an error (the connection cut) when
/// `cut`, else normally.
fn async_stream(
    first: Vec<u8>,
    then: Duration,
    cut: bool,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::unfold(0u8, move |step| {
        let first = first.clone();
        async move {
            match step {
                0 => Some((Ok(first), 1)),
                1 => {
                    tokio::time::sleep(then).await;
                    if cut {
                        Some((Err(std::io::Error::other("the holder died")), 2))
                    } else {
                        None
                    }
                }
                _ => None,
            }
        }
    })
}

/// Names the fake holder as the holder of `tid`'s socket, its heartbeat now.
async fn lease_to(pool: &sqlx::PgPool, tid: &str, address: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    sqlx::query(
        "INSERT INTO agent_paired_sockets (tid, replica, address, epoch, heartbeat) \
         VALUES ($1, 'the-fake-holder', $2, 1, $3) ON CONFLICT (tid) DO UPDATE SET \
         replica = excluded.replica, address = excluded.address, heartbeat = excluded.heartbeat",
    )
    .bind(tid)
    .bind(address)
    .bind(now)
    .execute(pool)
    .await
    .expect("lease row");
}

async fn state(base: &str, token: &str) -> (u16, Option<String>, Value, Duration) {
    let started = Instant::now();
    let (status, reconnect, body) = lap(base, token, "/state", json!({})).await;
    (status, reconnect, body, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_holder_that_answers_badly_gets_a_clear_error() {
    let fleet = RelayFleet::start(env!("CARGO_BIN_EXE_relay-server"), 1, PAIRING, "1s");
    let base = fleet.base(0);
    let (token, tid) = mint_paired(&base).await;
    let pool = sqlx::PgPool::connect(&fleet.pg.url()).await.expect("db");
    let mode = Arc::new(Mutex::new(Fake::Status(200)));
    let fake = fake_holder(mode.clone()).await;

    // Lines that do not read: 500 `internal` naming what was wrong.
    let cases: Vec<(Fake, &str)> = vec![
        (
            Fake::Lines(b"{\"k\":\"bogus\"}\n".to_vec()),
            "answered what does not read: unknown variant `bogus`",
        ),
        (
            Fake::Lines(b"not json at all\n".to_vec()),
            "answered what does not read: expected",
        ),
        (
            Fake::Lines(b"{\"k\":\"answer\",\"event\":\"lap-call\"}\n".to_vec()),
            "without its body",
        ),
        (
            Fake::Lines(vec![b'x'; 5 * 1024 * 1024]),
            "an answer line over",
        ),
        (
            Fake::Status(403),
            "check that every replica shares pairing.fleet_secret",
        ),
    ];
    for (answer, reason) in cases {
        *mode.lock().expect("mode") = answer;
        lease_to(&pool, &tid, &fake).await;
        let (status, _, body, _) = state(&base, &token).await;
        assert_eq!(status, 500, "{reason}: {body}");
        assert_eq!(body["error"]["code"], "internal", "{body}");
        let detail = body["error"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(reason), "{reason}: {body}");
    }

    // A holder that says nothing: 503 paused within the ping interval (2 s), not a hang.
    *mode.lock().expect("mode") = Fake::Silent;
    lease_to(&pool, &tid, &fake).await;
    let (status, reconnect, body, took) = state(&base, &token).await;
    assert_eq!(
        (status, reconnect.as_deref()),
        (503, Some("pending")),
        "{body}"
    );
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(4),
        "{took:?}"
    );

    // A holder that dies mid-answer (its connection cut): 503 paused at once.
    *mode.lock().expect("mode") = Fake::DiesMidAnswer;
    lease_to(&pool, &tid, &fake).await;
    let (status, reconnect, body, took) = state(&base, &token).await;
    assert_eq!(
        (status, reconnect.as_deref()),
        (503, Some("pending")),
        "{body}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");

    // A body that ends without an answer (the holder's process ended it): 503 paused too.
    *mode.lock().expect("mode") = Fake::Lines(b"{\"k\":\"alive\"}\n".to_vec());
    lease_to(&pool, &tid, &fake).await;
    let (status, reconnect, body, _) = state(&base, &token).await;
    assert_eq!(
        (status, reconnect.as_deref()),
        (503, Some("pending")),
        "{body}"
    );

    // A lease whose replica stopped renewing it (older than three heartbeats): no hop, paused.
    sqlx::query("UPDATE agent_paired_sockets SET heartbeat = 1 WHERE tid = $1")
        .bind(&tid)
        .execute(&pool)
        .await
        .expect("stale lease");
    *mode.lock().expect("mode") = Fake::Lines(b"{\"k\":\"bogus\"}\n".to_vec());
    let (status, reconnect, body, _) = state(&base, &token).await;
    assert_eq!(
        (status, reconnect.as_deref()),
        (503, Some("pending")),
        "{body}"
    );
    pool.close().await;
}
