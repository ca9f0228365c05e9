//! The relay example as its own process, for the tests that run several replicas of it behind a
//! load balancer and kill them: the same command line as `cargo run --example relay`.

#[tokio::main]
async fn main() {
    agent_examples::serve::run_relay(agent_examples::relay::Relay, 8789).await;
}
