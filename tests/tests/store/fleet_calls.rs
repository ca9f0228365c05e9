//! What the fleet tests share: the replicas' pairing options, an agent's LAP call, the replica
//! holding a socket (its lease in the store), and the counter's count read through a replica.

use std::time::{Duration, Instant};

use agent_tests::lb::RelayFleet;
use serde_json::{json, Value};

/// The replicas' pairing options: a short ping interval (the longest silence of a hop), a
/// short forward timeout, and a grace long enough for an app to re-pair.
pub(crate) const PAIRING: &str =
    "ping_interval = \"2s\"\nforward_timeout = \"3s\"\ngrace = \"60s\"";

/// An agent's LAP call at `base` with `token`: status, the reconnect hint, body.
pub(crate) async fn lap(
    base: &str,
    token: &str,
    tail: &str,
    body: Value,
) -> (u16, Option<String>, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/agent/lap/v1{tail}"))
        .bearer_auth(token)
        .json(&body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("LAP call");
    let status = resp.status().as_u16();
    let reconnect = resp
        .headers()
        .get("x-llui-reconnect")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, reconnect, resp.json().await.unwrap_or(Value::Null))
}

/// A LAP call on its own task.
pub(crate) fn spawn_lap(
    base: &str,
    token: &str,
    tail: &'static str,
    body: Value,
) -> tokio::task::JoinHandle<(u16, Option<String>, Value)> {
    let (base, token) = (base.to_owned(), token.to_owned());
    tokio::spawn(async move { lap(&base, &token, tail, body).await })
}

/// The replica (index) whose lease holds `tid`'s socket, once one that `accept`s holds it,
/// waiting up to `within`.
pub(crate) async fn holder_where(
    fleet: &RelayFleet,
    tid: &str,
    within: Duration,
    accept: impl Fn(usize) -> bool,
) -> usize {
    let pool = sqlx::PgPool::connect(&fleet.pg.url()).await.expect("db");
    let deadline = Instant::now() + within;
    loop {
        let address: Option<(String,)> =
            sqlx::query_as("SELECT address FROM agent_paired_sockets WHERE tid = $1")
                .bind(tid)
                .fetch_optional(&pool)
                .await
                .expect("lease");
        if let Some((address,)) = address {
            let i = (0..fleet.ports.len())
                .find(|i| address == fleet.base(*i))
                .expect("a replica's address");
            if accept(i) {
                pool.close().await;
                return i;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no accepted lease for {tid} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The counter's count through `base`, retrying for up to `within` while the app re-pairs.
pub(crate) async fn count(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    within: Duration,
) -> i64 {
    let deadline = Instant::now() + within;
    loop {
        let resp = http
            .post(format!("{base}/agent/lap/v1/state"))
            .bearer_auth(token)
            .json(&json!({}))
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        if let Ok(r) = resp {
            if r.status().as_u16() == 200 {
                let body: Value = r.json().await.expect("json");
                return body["state"]["count"].as_i64().expect("count");
            }
        }
        assert!(Instant::now() < deadline, "no state within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
