//! A paired `/message` round trip against an in-process one, in one run
//! (`cargo bench -p agent-tests --bench pairing`): the same counter, the same LAP request over
//! loopback HTTP; in-process the server's session applies it, paired the server relays it as
//! an `rpc` frame to a [`PairingClient`] (in this process, over a loopback WebSocket) whose
//! session applies it and answers.

use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::TestServer;
use criterion::{criterion_group, criterion_main, Criterion};
use tea_agent_runtime::pairing::client::{PairingClient, PairingConfig, PairingStatus};
use tea_agent_runtime::Host;

const BODY: &str = r#"{"msg":{"type":"inc"},"waitFor":"idle"}"#;

async fn round_trip(http: &reqwest::Client, url: &str, token: &str) {
    let response = http
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    let body = response.bytes().await.expect("body");
    assert!(body.starts_with(br#"{"status":"dispatched""#));
}

async fn mint(t: &TestServer<Counter>, paired: bool) -> String {
    let a = agent_tests::paired::mint_as(t, "bench", paired).await;
    a.body["token"].as_str().unwrap().to_string()
}

fn message_round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (t, hosted, paired, client) = rt.block_on(async {
        let t = TestServer::builder(Counter)
            .rate_limit("100000000/second")
            .start()
            .await;
        let hosted = mint(&t, false).await;
        let paired = mint(&t, true).await;
        let app = Host::new(Counter).unwrap();
        let session = app.create_session(None).unwrap();
        let client =
            PairingClient::new(&app, session, PairingConfig::new(&t.base, paired.clone())).spawn();
        let status = client
            .wait_for(Duration::from_secs(10), |s| *s == PairingStatus::Paired)
            .await;
        assert_eq!(status, PairingStatus::Paired);
        (t, hosted, paired, client)
    });
    let http = reqwest::Client::new();
    let url = format!("{}/agent/lap/v1/message", t.base);
    let mut group = c.benchmark_group("message_round_trip");
    group.bench_function("in_process", |b| {
        b.iter(|| rt.block_on(round_trip(&http, &url, &hosted)))
    });
    group.bench_function("paired", |b| {
        b.iter(|| rt.block_on(round_trip(&http, &url, &paired)))
    });
    group.finish();
    rt.block_on(client.stop());
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(50)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    targets = message_round_trip
}
criterion_main!(benches);
