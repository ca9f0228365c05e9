//! The caller's side of a hop: [`ForwardedRelay`], the backend of a paired session whose
//! socket another replica holds. Every operation is one signed `POST` to that replica's
//! [`CALL_PATH`] carrying the operation and the request body as it came; its answer is read as
//! lines ([`HopLine`]) with the byte budget of a frame per line and the ping interval as the
//! longest silence, so a holder that dies or goes silent ends the call with 503 `paused` and
//! its reconnect hint, never a hang.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tea_agent_schema::protocol::{
    CancelRequest, ConfirmResultRequest, EmptyRequest, LogEntry, MessageRequest, NarrateRequest,
    QueryDomRequest, QueryStateRequest, RecentActionsRequest, StateRequest, WaitRequest,
    WithdrawRequest, WouldDispatchRequest,
};

use super::wire::{
    HopCall, HopLine, HopNote, Watching, ACTIVATED_PATH, CALL_PATH, CANCEL_PATH, MAX_LINE_BYTES,
};
use crate::app::App;
use crate::engine::paired::fleet::{wall_ms, Fleet, SIGNATURE_HEADER, TIME_HEADER};
use crate::engine::session::keyed::KeyedDispatch;
use crate::engine::session::progress::DispatchWatch;
use crate::engine::store::fleet_leases::Lease;
use crate::ops::backend::{Served, SessionBackend};
use crate::ops::context::{AuditDetail, Call, Serialized};
use crate::ops::error::ApiError;
use crate::ops::reply::Success;
use crate::ops::spec::OperationSpec;
use crate::ops::state::ServerState;
use crate::security::TokenRecord;

/// The relay to a paired app whose socket another replica of the fleet holds.
pub(crate) struct ForwardedRelay<A: App> {
    server: ServerState<A>,
    fleet: Arc<Fleet>,
    lease: Lease,
}

/// Why a hop ended without the holder's answer.
enum HopFailure {
    /// No connection could be made (nothing was sent: the holder is gone).
    NotConnected(String),
    /// The connection broke (the holder died), or the answer ended without its last line.
    Unreachable(String),
    /// Nothing heard within the ping interval.
    Silent,
    /// The holder refused the hop (its status), or an answer over its budget or not parsing.
    Refused(u16),
    /// An answer line over its budget or that does not parse.
    Malformed(String),
}

impl HopFailure {
    fn reason(&self) -> &'static str {
        match self {
            HopFailure::NotConnected(_) | HopFailure::Unreachable(_) => "unreachable",
            HopFailure::Silent => "silent",
            HopFailure::Refused(_) => "refused",
            HopFailure::Malformed(_) => "malformed",
        }
    }

    fn detail(&self) -> String {
        match self {
            HopFailure::NotConnected(why)
            | HopFailure::Unreachable(why)
            | HopFailure::Malformed(why) => why.clone(),
            HopFailure::Silent => "nothing heard within the ping interval".into(),
            HopFailure::Refused(status) => format!("answered {status}"),
        }
    }
}

/// Signs and sends `body` to `path` of the replica at `address`.
pub(crate) fn signed_post(
    fleet: &Fleet,
    address: &str,
    path: &str,
    body: Vec<u8>,
) -> reqwest::RequestBuilder {
    let time = wall_ms();
    let signature = fleet.sign(time, path, &body);
    fleet
        .client()
        .post(format!("{address}{path}"))
        .header(TIME_HEADER, time.to_string())
        .header(SIGNATURE_HEADER, signature)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
}

/// Sends a note (`activated`, `cancel`, `supersede`) to the replica at `address`, on its own
/// task: a failure is logged and counted, the caller never waits on it.
pub(crate) fn send_note(fleet: Arc<Fleet>, address: String, path: &'static str, note: HopNote) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    handle.spawn(async move {
        let body = match serde_json::to_vec(&note) {
            Ok(body) => body,
            Err(_) => return,
        };
        let sent = signed_post(&fleet, &address, path, body)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                crate::telemetry::fleet_hop_failed("refused");
                tracing::warn!(%address, path, status = r.status().as_u16(), "fleet: a note was refused");
            }
            Err(e) => {
                crate::telemetry::fleet_hop_failed("unreachable");
                tracing::warn!(%address, path, "fleet: a note was not delivered: {e}");
            }
        }
    });
}

impl<A: App> ForwardedRelay<A> {
    /// The relay through the replica of `lease`.
    pub(crate) fn new(server: ServerState<A>, fleet: Arc<Fleet>, lease: Lease) -> Self {
        ForwardedRelay {
            server,
            fleet,
            lease,
        }
    }

    /// The longest silence of a hop: the ping interval (30 s when pings are off).
    fn silence(&self) -> Duration {
        match self.server.pairing().options.ping_interval {
            Duration::ZERO => Duration::from_secs(30),
            every => every,
        }
    }

    /// The answer of a failed hop: 503 `paused` with the hint of a session without socket
    /// when the holder is gone or silent (the app reconnects to any replica), 500 with the
    /// reason when the fleet is misconfigured or a replica answered what does not parse.
    fn failed(&self, record: &TokenRecord, failure: &HopFailure) -> ApiError {
        crate::telemetry::fleet_hop_failed(failure.reason());
        tracing::warn!(
            tid = %record.tid, holder = %self.lease.address, reason = failure.reason(),
            detail = %failure.detail(),
            "fleet: the hop to the socket's replica failed"
        );
        match failure {
            HopFailure::NotConnected(_) | HopFailure::Unreachable(_) | HopFailure::Silent => {
                crate::ops::paired::paused(
                    Some(record),
                    self.server.now(),
                    self.server.pairing().options.retry_after.as_secs(),
                )
            }
            HopFailure::Refused(status) => ApiError::internal(format!(
                "the replica holding the paired socket refused this replica's hop (status \
                 {status}): check that every replica shares pairing.fleet_secret"
            )),
            HopFailure::Malformed(why) => ApiError::internal(format!(
                "the replica holding the paired socket answered what does not read: {why}"
            )),
        }
    }

    /// Carries the operation of `spec` with `args` to the holder; `follow` when the caller
    /// follows a `/message`'s work. A keyed `/message`'s `key` is given back when the hop
    /// failed without its message reaching the app (no connection was made), or when the
    /// holder said the app deduplicates keys and the hop broke (`docs/pairing.md` §A fleet
    /// of replicas): its 503 is then not the key's answer, and a retry runs it again.
    async fn hop(
        &self,
        record: &TokenRecord,
        spec: Result<&'static OperationSpec, Watching>,
        args: Value,
        follow: Option<Arc<DispatchWatch>>,
        key: Option<KeyedDispatch>,
    ) -> Result<Serialized, ApiError> {
        let started = Instant::now();
        let hop = uuid::Uuid::new_v4().to_string();
        let (tool, watch, label) = match spec {
            Ok(spec) => (spec.tool.to_owned(), None, spec.tool),
            Err(watch) => (String::new(), Some(watch), "watch"),
        };
        let call = HopCall {
            hop: hop.clone(),
            tid: record.tid.clone(),
            tool,
            watch,
            args,
            follow: follow.is_some(),
        };
        if let Some(follow) = &follow {
            // The caller's cancellation reaches the holder's relay, which tells the app.
            let (fleet, address) = (self.fleet.clone(), self.lease.address.clone());
            let note = HopNote { id: hop, epoch: 0 };
            follow.arm(Box::new(move || {
                send_note(fleet, address, CANCEL_PATH, note)
            }));
        }
        let mut dedupes = false;
        let answered = self.exchange(&call, follow.as_deref(), &mut dedupes).await;
        let seconds = started.elapsed().as_secs_f64();
        crate::telemetry::fleet_forwarded(label, answered.is_ok(), seconds);
        match answered {
            Ok(Ok(served)) => Ok(served),
            Ok(Err(e)) => Err(e),
            Err(failure) => {
                let released = match failure {
                    HopFailure::NotConnected(_) => true,
                    HopFailure::Unreachable(_) | HopFailure::Silent => {
                        dedupes || self.lease.dedupes
                    }
                    HopFailure::Refused(_) | HopFailure::Malformed(_) => false,
                };
                if let (true, Some(key)) = (released, key) {
                    tracing::info!(tid = %record.tid, key = key.key(), "fleet: the keyed message's hop failed before an answer; its key is given back");
                    key.release();
                }
                Err(self.failed(record, &failure))
            }
        }
    }

    /// One hop: the request, then the answer's lines until the one that ends it.
    async fn exchange(
        &self,
        call: &HopCall,
        follow: Option<&DispatchWatch>,
        dedupes: &mut bool,
    ) -> Result<Result<Serialized, ApiError>, HopFailure> {
        let body = serde_json::to_vec(call).map_err(|e| HopFailure::Malformed(e.to_string()))?;
        let silence = self.silence();
        // However lively the holder, no hop outlives the longest call it can carry.
        let options = self.server.options();
        let cap = options.max_wait + options.pairing.forward_timeout + Duration::from_secs(30);
        let deadline = tokio::time::Instant::now() + cap;
        let request = signed_post(&self.fleet, &self.lease.address, CALL_PATH, body).send();
        let mut response = match tokio::time::timeout(silence, request).await {
            Err(_) => return Err(HopFailure::Silent),
            Ok(Err(e)) if e.is_connect() => return Err(HopFailure::NotConnected(e.to_string())),
            Ok(Err(e)) => return Err(HopFailure::Unreachable(e.to_string())),
            Ok(Ok(r)) => r,
        };
        if response.status() != reqwest::StatusCode::OK {
            return Err(HopFailure::Refused(response.status().as_u16()));
        }
        let mut buffer: Vec<u8> = Vec::new();
        loop {
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                match HopLine::parse(&line[..end]) {
                    Ok(HopLine::Alive { dedupes: said }) => *dedupes |= said,
                    Ok(HopLine::Progress { progress }) => {
                        if let Some(follow) = follow {
                            follow.report(progress);
                        }
                    }
                    Ok(HopLine::Answer {
                        body,
                        read,
                        event,
                        detail,
                    }) => {
                        let body = Success::of(body, false)
                            .map_err(|e| HopFailure::Malformed(e.to_string()))?;
                        return Ok(Ok(Serialized {
                            body,
                            read,
                            audit: (event, AuditDetail::Value(detail)),
                        }));
                    }
                    Ok(HopLine::Error { error, not_holder }) => {
                        if not_holder {
                            crate::telemetry::fleet_hop_failed("not-holder");
                        }
                        return Ok(Err(ApiError::from_parts(error)));
                    }
                    Err(e) => return Err(HopFailure::Malformed(e)),
                }
            }
            if buffer.len() > MAX_LINE_BYTES {
                return Err(HopFailure::Malformed(format!(
                    "an answer line over {MAX_LINE_BYTES} bytes"
                )));
            }
            let wait = silence.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            match tokio::time::timeout(wait, response.chunk()).await {
                Err(_) => return Err(HopFailure::Silent),
                Ok(Err(e)) => return Err(HopFailure::Unreachable(e.to_string())),
                Ok(Ok(None)) => {
                    return Err(HopFailure::Unreachable(
                        "the answer ended before its last line".into(),
                    ))
                }
                Ok(Ok(Some(chunk))) => buffer.extend_from_slice(&chunk),
            }
        }
    }

    /// The hop of `call`, with its request body as it came (the holder follows the work only
    /// of a `/message`).
    fn carried<'a>(&'a self, call: &'a Call<'a>) -> Served<'a> {
        let follow = call.follow.clone();
        Box::pin(self.hop(call.record, Ok(call.spec), call.args.clone(), follow, None))
    }

    /// A watcher's hop (not a call of the gate): the answer's value.
    #[cfg(feature = "mcp")]
    async fn watching(&self, record: &TokenRecord, watch: Watching) -> Result<Value, ApiError> {
        let served = self
            .hop(record, Err(watch), Value::Null, None, None)
            .await?;
        Ok(served.body.into_parts().0)
    }
}

impl<A: App> SessionBackend for ForwardedRelay<A> {
    fn observe<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        self.carried(call)
    }

    fn describe<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        self.carried(call)
    }

    fn state<'a>(&'a self, call: &'a Call<'a>, _: StateRequest) -> Served<'a> {
        self.carried(call)
    }

    fn query_state<'a>(&'a self, call: &'a Call<'a>, _: QueryStateRequest) -> Served<'a> {
        self.carried(call)
    }

    fn recent_actions<'a>(&'a self, call: &'a Call<'a>, _: RecentActionsRequest) -> Served<'a> {
        self.carried(call)
    }

    fn would_dispatch<'a>(&'a self, call: &'a Call<'a>, _: WouldDispatchRequest) -> Served<'a> {
        self.carried(call)
    }

    fn actions<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        self.carried(call)
    }

    fn message<'a>(
        &'a self,
        call: &'a Call<'a>,
        _: MessageRequest,
        key: Option<KeyedDispatch>,
    ) -> Served<'a> {
        let follow = call.follow.clone();
        Box::pin(self.hop(call.record, Ok(call.spec), call.args.clone(), follow, key))
    }

    fn confirm_result<'a>(&'a self, call: &'a Call<'a>, _: ConfirmResultRequest) -> Served<'a> {
        self.carried(call)
    }

    fn wait<'a>(&'a self, call: &'a Call<'a>, _: WaitRequest) -> Served<'a> {
        self.carried(call)
    }

    fn narrate<'a>(&'a self, call: &'a Call<'a>, _: NarrateRequest) -> Served<'a> {
        self.carried(call)
    }

    fn query_dom<'a>(&'a self, call: &'a Call<'a>, _: QueryDomRequest) -> Served<'a> {
        self.carried(call)
    }

    fn describe_visible<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        self.carried(call)
    }

    fn context<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        self.carried(call)
    }

    fn pending<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        self.carried(call)
    }

    fn withdraw<'a>(&'a self, call: &'a Call<'a>, _: WithdrawRequest) -> Served<'a> {
        self.carried(call)
    }

    fn cancel<'a>(&'a self, call: &'a Call<'a>, _: CancelRequest) -> Served<'a> {
        self.carried(call)
    }

    fn is_relay(&self) -> bool {
        true
    }

    fn append_log(&self, _: LogEntry) {}

    fn activated(&self, record: &TokenRecord) {
        let note = HopNote {
            id: record.tid.clone(),
            epoch: 0,
        };
        let (fleet, address) = (self.fleet.clone(), self.lease.address.clone());
        send_note(fleet, address, ACTIVATED_PATH, note);
    }

    #[cfg(feature = "mcp")]
    fn next_change<'a>(
        &'a self,
        record: &'a TokenRecord,
        timeout: Duration,
    ) -> futures::future::BoxFuture<'a, Result<crate::ops::backend::Change, ApiError>> {
        Box::pin(async move {
            let timeout_ms = crate::clock::millis(timeout);
            let waited = self
                .watching(record, Watching::Change { timeout_ms })
                .await?;
            Ok(match waited.get("status").and_then(Value::as_str) {
                Some("changed") => crate::ops::backend::Change::Changed,
                _ => crate::ops::backend::Change::Quiet,
            })
        })
    }

    #[cfg(feature = "mcp")]
    fn available_actions<'a>(
        &'a self,
        record: &'a TokenRecord,
    ) -> futures::future::BoxFuture<'a, Result<Vec<tea_agent_schema::protocol::Action>, ApiError>>
    {
        Box::pin(async move {
            let actions = self.watching(record, Watching::Actions).await?;
            serde_json::from_value::<tea_agent_schema::protocol::ActionsResponse>(actions)
                .map(|r| r.actions.actions())
                .map_err(|e| ApiError::internal(format!("the app's actions: {e}")))
        })
    }

    #[cfg(feature = "mcp")]
    fn description<'a>(
        &'a self,
        record: &'a TokenRecord,
    ) -> futures::future::BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move { self.watching(record, Watching::Description).await })
    }
}
