//! The probes an orchestrator asks (`docs/operations.md` §Health): `GET /agent/healthz`
//! (liveness: the process answers) and `GET /agent/readyz` (readiness: the store answers, its
//! change listener is not reconnecting, the server is not draining). Both are mounted outside
//! the agent routes' `Host` rule, so that a probe on the pod's address is answered, and they
//! say nothing an attacker could use: fixed words, no error text, no version.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::app::App;
use crate::engine::store::{ChangesListener, SessionStore};
use crate::ops::ServerState;

/// How long the store's answer to the readiness query is awaited.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A store check this recent answers the next probe too: probes that arrive together (or an
/// attacker's flood) cost the database one query per second at most.
const STORE_CHECK_REUSE: Duration = Duration::from_secs(1);

/// The liveness and readiness routes.
pub(crate) fn health_routes<A: App>(server: &ServerState<A>) -> Router {
    let probe = Arc::new(StoreProbe {
        store: server.host().session_store().cloned(),
        last: tokio::sync::Mutex::new(None),
    });
    let server = server.clone();
    Router::new().route("/agent/healthz", get(alive)).route(
        "/agent/readyz",
        get(move || {
            let (server, probe) = (server.clone(), probe.clone());
            async move { ready(&server, &probe).await }
        }),
    )
}

async fn alive() -> Response {
    no_store(StatusCode::OK, json!({"status": "alive"}))
}

async fn ready<A: App>(server: &ServerState<A>, probe: &StoreProbe) -> Response {
    let store = probe.check().await;
    let draining = server.is_draining();
    let fleet = fleet_check(server);
    let ready = store.answered == StoreAnswer::Ok
        && store.listener.is_ready()
        && !draining
        && fleet != "unreachable";
    let body = json!({
        "status": if ready { "ready" } else { "not-ready" },
        "checks": {
            "store": store.answered.as_str(),
            "listener": store.listener.as_str(),
            "draining": draining,
            "fleet": fleet,
        },
    });
    let status = match ready {
        true => StatusCode::OK,
        false => StatusCode::SERVICE_UNAVAILABLE,
    };
    no_store(status, body)
}

/// Whether this replica reaches its fleet's backplane (`docs/operations.md` §Health `fleet`):
/// `off` without a fleet, `ok` when its heartbeat renewed its leases in the shared store
/// within three periods, `unreachable` otherwise (other replicas then stop hopping to it, and
/// it cannot tell where other sockets are).
fn fleet_check<A: App>(server: &ServerState<A>) -> &'static str {
    #[cfg(feature = "fleet")]
    if let Some(fleet) = &server.pairing().fleet {
        return match fleet.reaches_backplane() {
            true => "ok",
            false => "unreachable",
        };
    }
    let _ = server;
    "off"
}

fn no_store(status: StatusCode, body: serde_json::Value) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

/// How the store answered the readiness query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreAnswer {
    Ok,
    /// It answered with an error (logged, never shown).
    Unreachable,
    /// It did not answer within [`STORE_PROBE_TIMEOUT`].
    Timeout,
}

impl StoreAnswer {
    fn as_str(self) -> &'static str {
        match self {
            StoreAnswer::Ok => "ok",
            StoreAnswer::Unreachable => "unreachable",
            StoreAnswer::Timeout => "timeout",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct StoreCheck {
    answered: StoreAnswer,
    listener: ChangesListener,
}

/// The store's side of readiness, asked at most once per [`STORE_CHECK_REUSE`].
struct StoreProbe {
    /// `None` in memory: nothing to ask.
    store: Option<Arc<dyn SessionStore>>,
    /// The last check and when it ended; held while a check runs, so that concurrent probes
    /// wait for it instead of each asking.
    last: tokio::sync::Mutex<Option<(Instant, StoreCheck)>>,
}

impl StoreProbe {
    async fn check(&self) -> StoreCheck {
        let Some(store) = &self.store else {
            return StoreCheck {
                answered: StoreAnswer::Ok,
                listener: ChangesListener::NotShared,
            };
        };
        let mut last = self.last.lock().await;
        if let Some((at, check)) = *last {
            if at.elapsed() < STORE_CHECK_REUSE {
                return check;
            }
        }
        let answered = match tokio::time::timeout(STORE_PROBE_TIMEOUT, store.ping()).await {
            Ok(Ok(())) => StoreAnswer::Ok,
            Ok(Err(e)) => {
                tracing::warn!(target: "tea_agent_runtime::health", "readiness: the store failed: {e}");
                StoreAnswer::Unreachable
            }
            Err(_) => {
                tracing::warn!(target: "tea_agent_runtime::health", "readiness: the store did not answer within {STORE_PROBE_TIMEOUT:?}");
                StoreAnswer::Timeout
            }
        };
        let check = StoreCheck {
            answered,
            listener: store.listener(),
        };
        *last = Some((Instant::now(), check));
        check
    }
}
