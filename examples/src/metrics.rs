//! `--metrics-bind ADDR`: the runtime's metrics (`docs/operations.md` §Metrics and traces) in
//! Prometheus text at `GET /metrics` on an address of their own, apart from the agent routes
//! (a scraper inside the cluster reaches it; the public never needs to).
//!
//! The runtime records through the `metrics` facade; this installs the Prometheus exporter as
//! the process's recorder, which is the embedder's choice to make (an app may install an
//! OpenTelemetry exporter instead, see the README). The exporter is the cargo feature
//! `metrics` (`cargo run --example todo --features metrics -- --metrics-bind 127.0.0.1:9100`);
//! without it the flag is refused, naming the feature.

use std::net::SocketAddr;

/// How often histograms are drained into their buckets between scrapes.
#[cfg(feature = "metrics")]
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The metrics endpoint, serving until the process ends.
pub struct MetricsEndpoint {
    /// The bound address.
    pub addr: SocketAddr,
    /// The serving task.
    pub task: tokio::task::JoinHandle<()>,
}

/// Installs the Prometheus recorder, describes the runtime's metrics, binds `addr` and serves
/// `GET /metrics` there. Fails (naming `--metrics-bind`) when the address does not bind or a
/// recorder is already installed.
#[cfg(feature = "metrics")]
pub async fn serve_metrics(addr: SocketAddr) -> Result<MetricsEndpoint, String> {
    use axum::routing::get;
    use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--metrics-bind {addr}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("--metrics-bind {addr}: {e}"))?;
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| format!("--metrics-bind {addr}: {e}"))?;
    tea_agent_runtime::telemetry::describe_metrics();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(UPKEEP_EVERY);
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    let app = axum::Router::new().route(
        "/metrics",
        get(
            |axum::extract::State(handle): axum::extract::State<PrometheusHandle>| async move {
                (
                    [("content-type", "text/plain; version=0.0.4")],
                    handle.render(),
                )
            },
        )
        .with_state(handle),
    );
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics endpoint stopped");
        }
    });
    Ok(MetricsEndpoint { addr, task })
}

/// Without the feature `metrics`: the flag is refused, naming the feature.
#[cfg(not(feature = "metrics"))]
pub async fn serve_metrics(addr: SocketAddr) -> Result<MetricsEndpoint, String> {
    Err(format!(
        "--metrics-bind {addr}: this build has no metrics exporter (the examples' cargo feature \
         `metrics`: cargo run --example todo --features metrics -- --metrics-bind {addr})"
    ))
}
