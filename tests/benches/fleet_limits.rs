//! What a fleet's shared limits cost on one replica (`cargo bench -p agent-tests --bench
//! fleet_limits`, `docs/stores.md` §Limits across replicas): LAP `/observe` and `/message`
//! (`inc`, `waitFor: idle`) over loopback on two servers of the counter example on one
//! PostgreSQL the bench starts, in one run, their slices interleaved: one drawing its rate
//! limit from the store's shared buckets in slices (what a PostgreSQL store does now), one
//! keeping it in the process (`GovernorRateLimiter`, as before; the same as with SQLite or in
//! memory). Both at `100000/second`, so a lease is one round trip per 1,562 calls of a token.
//!
//! `FLEET_BENCH_SLICE_MS` and `FLEET_BENCH_ROUNDS` override the length and number of slices.

use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::load::{check_lap_sent, env_or, interleaved, report, Target, CONCURRENCY};
use agent_tests::postgres::PgServer;
use agent_tests::TestServer;
use serde_json::json;
use tea_agent_runtime::security::GovernorRateLimiter;
use tea_agent_runtime::store::Stores;

const SPEC: &str = "100000/second";

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let pg = PgServer::start();
        let stores = Stores::open(&pg.url()).await.expect("store");
        let fleet = TestServer::builder(Counter)
            .rate_limit(SPEC)
            .stores(&stores)
            .start()
            .await;
        let local = TestServer::builder(Counter)
            .rate_limit(SPEC)
            .stores(&stores)
            .into_agent_builder()
            .rate_limiter(Arc::new(GovernorRateLimiter::new(
                SPEC.parse().expect("spec"),
            )))
            .build()
            .await
            .expect("server");
        let local = agent_tests::serve(local).await;
        let slice = Duration::from_millis(env_or("FLEET_BENCH_SLICE_MS", 1000));
        let rounds = env_or("FLEET_BENCH_ROUNDS", 8);
        println!(
            "one replica on PostgreSQL, {CONCURRENCY} concurrent clients, {rounds} interleaved rounds of {slice:?} per target, rate limit {SPEC}"
        );
        let message = json!({"msg": {"type": "inc"}, "waitFor": "idle"}).to_string();
        let mut targets = Vec::new();
        for server in [&fleet, &local] {
            let (t, token) = (&server.base, server.mint("bench", None).await.token);
            targets.push(
                Target::new(format!("{t}/agent/lap/v1/observe"), Some(&token), "{}".into()).await,
            );
            targets.push(
                Target::checked(
                    format!("{t}/agent/lap/v1/message"),
                    Some(&token),
                    message.clone(),
                    check_lap_sent,
                )
                .await,
            );
        }
        let targets: [Arc<Target>; 4] = targets
            .into_iter()
            .map(Arc::new)
            .collect::<Vec<_>>()
            .try_into()
            .unwrap_or_else(|_| unreachable!("four targets"));
        let mut runs = interleaved(&targets, slice, rounds).await;
        let [fleet_observe, fleet_message, local_observe, local_message] = &mut runs;
        report("/observe, shared buckets", fleet_observe);
        report("/observe, in the process", local_observe);
        report("/message, shared buckets", fleet_message);
        report("/message, in the process", local_message);
        println!(
            "  shared buckets relative to in the process: /observe {:.1}%, /message {:.1}% (target >= 90%)",
            fleet_observe.rps() / local_observe.rps() * 100.0,
            fleet_message.rps() / local_message.rps() * 100.0
        );
    });
}
