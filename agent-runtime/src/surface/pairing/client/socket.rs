//! The client's connection loop: connect, `hello`, answer frames until the socket drops, then
//! reconnect with backoff (or claim the session again, or stop).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{json, Value};
use tea_agent_schema::protocol::{ConfirmResultResponse, LogEntry};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::answer::{answer, hello};
use super::{PairingConfig, PairingStatus};
use crate::app::App;
use crate::engine::paired::frames::MAX_FRAME_BYTES;
use crate::engine::session::progress::DispatchWatch;
use crate::engine::session::Session;
use crate::ops::hosted::HostedSession;
use crate::ops::IdempotencyStore;

/// How long the client follows a proposal it reported as pending.
const CONFIRM_FOLLOW_MS: u64 = 10 * 60_000;

/// How long a connection attempt (TCP, TLS and the upgrade's answer) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a `watch` may stay armed.
const WATCH_MAX_MS: u64 = 60 * 60_000;

/// Why a socket's run ended.
enum Ended {
    /// Dropped: reconnect.
    Dropped,
    /// Revoked by the server.
    Revoked,
    /// Stopped by the host app.
    Stopped,
}

/// Why a connection attempt failed.
enum Refused {
    /// The server answered this HTTP status instead of upgrading.
    Status(u16),
    /// No connection (network, TLS, protocol).
    Unreachable(String),
}

/// What the client reports to its handle as it runs.
pub(super) struct Reports {
    /// Where the pairing stands.
    pub(super) status: watch::Sender<PairingStatus>,
    /// The bearer it pairs with (a claim rotates it).
    pub(super) token: watch::Sender<String>,
}

/// Pairs `session` (answering through `hosted`, its operations) until revoked, refused, out of
/// retries, or stopped.
pub(super) async fn run<A: App>(
    session: Session<A>,
    hosted: Arc<HostedSession<A>>,
    keys: Arc<IdempotencyStore>,
    describe: Value,
    mut config: PairingConfig,
    reports: Reports,
    mut stop: watch::Receiver<bool>,
) {
    let status = reports.status;
    // The agent reaches the session through this client, not the host: hold it so the host
    // never closes it as idle while the pairing runs.
    let _hold = session.hold();
    let mut delay = config.backoff.initial;
    let mut since = tokio::time::Instant::now();
    let mut claimed = false;
    loop {
        if *stop.borrow() {
            return;
        }
        status.send_replace(PairingStatus::Connecting);
        match connect(&config).await {
            Ok(ws) => {
                delay = config.backoff.initial;
                claimed = false;
                match serve(&session, &hosted, &keys, &describe, ws, &status, &mut stop).await {
                    Ended::Dropped => since = tokio::time::Instant::now(),
                    Ended::Revoked => {
                        status.send_replace(PairingStatus::Revoked);
                        return;
                    }
                    Ended::Stopped => {
                        status.send_replace(PairingStatus::Stopped("stopped".into()));
                        return;
                    }
                }
            }
            Err(Refused::Status(401 | 403)) if !claimed && config.claim.is_some() => {
                claimed = true;
                match claim(&config).await {
                    Ok(token) => {
                        tracing::info!(
                            "pairing: the session was claimed again; the bearer rotated"
                        );
                        config.token = token.clone();
                        reports.token.send_replace(token);
                        continue;
                    }
                    Err(e) => {
                        status.send_replace(PairingStatus::Stopped(e));
                        return;
                    }
                }
            }
            Err(Refused::Status(code @ (401 | 403))) => {
                status.send_replace(PairingStatus::Stopped(format!(
                    "the server refused the token ({code})"
                )));
                return;
            }
            Err(Refused::Status(code)) => tracing::warn!(code, "pairing: upgrade refused"),
            Err(Refused::Unreachable(e)) => tracing::debug!(error = %e, "pairing: unreachable"),
        }
        if since.elapsed() >= config.backoff.give_up {
            status.send_replace(PairingStatus::Stopped("gave up reconnecting".into()));
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.changed() => return,
        }
        delay = (delay * 2).min(config.backoff.max);
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(config: &PairingConfig) -> Result<Ws, Refused> {
    let url = format!("{}?token={}", config.ws_base(), config.token);
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    let attempt = tokio_tungstenite::connect_async_with_config(url, Some(ws_config), true);
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(WsError::Http(response))) => Err(Refused::Status(response.status().as_u16())),
        Ok(Err(e)) => Err(Refused::Unreachable(e.to_string())),
        Err(_) => Err(Refused::Unreachable(format!(
            "no answer within {CONNECT_TIMEOUT:?}"
        ))),
    }
}

/// `POST /agent/resume/claim {tid}`: the new token.
async fn claim(config: &PairingConfig) -> Result<String, String> {
    let Some(claim) = &config.claim else {
        return Err("no claim configured".into());
    };
    let mut request = reqwest::Client::new()
        .post(format!("{}/agent/resume/claim", config.http_base()))
        .header("content-type", "application/json")
        .body(json!({"tid": claim.tid}).to_string())
        .timeout(Duration::from_secs(30));
    for (k, v) in &claim.headers {
        request = request.header(k, v);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body: Value = response.json().await.map_err(|e| e.to_string())?;
    match body.get("token").and_then(Value::as_str) {
        Some(token) if status.is_success() => Ok(token.to_string()),
        _ => Err(format!("resume/claim refused ({status}): {body}")),
    }
}

/// What the tasks of one socket share: the queue of its writer.
#[derive(Clone)]
struct Out(mpsc::UnboundedSender<String>);

/// The `send_message` rpcs being answered, by rpc id: the watch of the work each started (the
/// server's `rpc-cancel` names one), and whether the server takes `progress` frames.
#[derive(Clone, Default)]
struct Following {
    rpcs: Arc<parking_lot::Mutex<HashMap<String, Arc<DispatchWatch>>>>,
    server_takes_progress: Arc<std::sync::atomic::AtomicBool>,
}

impl Following {
    fn takes_progress(&self) -> bool {
        self.server_takes_progress
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Out {
    fn frame(&self, frame: Value) {
        let _ = self.0.send(frame.to_string());
    }

    fn log(&self, entries: Vec<LogEntry>) {
        for entry in entries {
            self.frame(json!({"t": "log-append", "entry": entry}));
        }
    }
}

async fn serve<A: App>(
    session: &Session<A>,
    hosted: &Arc<HostedSession<A>>,
    keys: &Arc<IdempotencyStore>,
    describe: &Value,
    ws: Ws,
    status: &watch::Sender<PairingStatus>,
    stop: &mut watch::Receiver<bool>,
) -> Ended {
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let out = Out(tx);
    out.frame(hello(describe, session));
    let mut writer = tokio::spawn(async move {
        while let Some(text) = rx.recv().await {
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    let mut watches: HashMap<String, JoinHandle<()>> = HashMap::new();
    let following = Following::default();
    let ended = loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    let frame: Value = match serde_json::from_str(text.as_str()) {
                        Ok(v) => v,
                        Err(_) => continue,
                    };
                    tasks.retain(|t| !t.is_finished());
                    match frame.get("t").and_then(Value::as_str).unwrap_or("") {
                        "hello-ack" => {
                            let progress = frame
                                .get("extensions")
                                .and_then(Value::as_array)
                                .is_some_and(|e| e.iter().any(|x| x == "progress"));
                            following
                                .server_takes_progress
                                .store(progress, std::sync::atomic::Ordering::Relaxed);
                            // A re-pair within grace may have been told `active` already.
                            status.send_if_modified(|s| {
                                let connecting = *s == PairingStatus::Connecting;
                                if connecting {
                                    *s = PairingStatus::Paired;
                                }
                                connecting
                            });
                        }
                        "active" => { status.send_replace(PairingStatus::Active); }
                        "revoked" => break Ended::Revoked,
                        "rpc" => tasks.push(rpc(session, hosted, keys, &out, &following, frame)),
                        "rpc-cancel" => {
                            let id = frame.get("id").and_then(Value::as_str).unwrap_or("");
                            let follow = following.rpcs.lock().get(id).cloned();
                            if let Some(follow) = follow {
                                follow.cancel();
                            }
                        }
                        "log-push" => {
                            let entry = frame.get("entry").cloned().unwrap_or(Value::Null);
                            if let Ok(e) = serde_json::from_value::<LogEntry>(entry.clone()) {
                                session.append_log(e);
                            }
                            out.frame(json!({"t": "log-append", "entry": entry}));
                        }
                        "confirm-expire" => {
                            if let Some(id) = frame.get("confirmId").and_then(Value::as_str) {
                                let _ = session.reject(id).await;
                            }
                        }
                        "watch" => {
                            if let Some(id) = frame.get("id").and_then(Value::as_str) {
                                let path = frame.get("path").and_then(Value::as_str).map(str::to_string);
                                let task = watch_task(session, &out, id.to_string(), path);
                                if let Some(old) = watches.insert(id.to_string(), task) {
                                    old.abort();
                                }
                            }
                        }
                        "unwatch" => {
                            if let Some(t) = frame.get("id").and_then(Value::as_str).and_then(|id| watches.remove(id)) {
                                t.abort();
                            }
                        }
                        _ => {}
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => break Ended::Dropped,
                Some(Ok(_)) => {}
            },
            _ = stop.changed() => break Ended::Stopped,
            _ = &mut writer => break Ended::Dropped,
        }
    };
    for t in tasks.into_iter().chain(watches.into_values()) {
        t.abort();
    }
    drop(out);
    if matches!(ended, Ended::Dropped) {
        writer.abort();
    } else {
        let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    }
    ended
}

/// Answers one `rpc` on its own task (a `send_message` may wait for its drain, meanwhile
/// sending the latest progress of its work as `progress` frames when the server takes them).
fn rpc<A: App>(
    session: &Session<A>,
    hosted: &Arc<HostedSession<A>>,
    keys: &Arc<IdempotencyStore>,
    out: &Out,
    following: &Following,
    frame: Value,
) -> JoinHandle<()> {
    let session = session.clone();
    let hosted = hosted.clone();
    let keys = keys.clone();
    let out = out.clone();
    let following = following.clone();
    tokio::spawn(async move {
        let Some(id) = frame.get("id").and_then(Value::as_str).map(str::to_string) else {
            return;
        };
        let (Some(tool), Some(args)) = (
            frame.get("tool").and_then(Value::as_str),
            frame.get("args").cloned(),
        ) else {
            out.frame(json!({"t": "rpc-error", "id": id, "code": "schema-error"}));
            return;
        };
        let follow = DispatchWatch::new();
        let followed = tool == crate::ops::Operation::Message.tool();
        if followed {
            following.rpcs.lock().insert(id.clone(), follow.clone());
        }
        let answering = answer(&hosted, &keys, &session, &id, tool, args, follow.clone());
        let (result, entries) = if followed && following.takes_progress() {
            report_progress(&out, &id, &follow, answering).await
        } else {
            answering.await
        };
        following.rpcs.lock().remove(&id);
        match result {
            Ok(result) => {
                let pending = (result.get("status").and_then(Value::as_str)
                    == Some("pending-confirmation"))
                .then(|| result.get("confirmId").and_then(Value::as_str))
                .flatten()
                .map(str::to_string);
                out.frame(json!({"t": "rpc-reply", "id": id, "result": result}));
                out.log(entries);
                if let Some(confirm_id) = pending {
                    follow_confirm(&session, &out, confirm_id).await;
                }
            }
            Err((code, detail)) => {
                out.frame(json!({"t": "rpc-error", "id": id, "code": code, "detail": detail}));
                out.log(entries);
            }
        }
    })
}

/// Runs `answering`, sending each new progress of the work `follow` watches as a `progress`
/// frame for rpc `id` (the latest one: reports in between are coalesced).
async fn report_progress<T>(
    out: &Out,
    id: &str,
    follow: &DispatchWatch,
    answering: impl std::future::Future<Output = T>,
) -> T {
    let mut progress = follow.follow();
    let mut answering = std::pin::pin!(answering);
    loop {
        tokio::select! {
            biased;
            answered = &mut answering => return answered,
            Ok(()) = progress.changed() => {
                let latest = progress.borrow_and_update().clone();
                if let Some(latest) = latest {
                    out.frame(json!({"t": "progress", "id": id, "progress": latest}));
                }
            }
        }
    }
}

/// Reports the human's decision on a proposal as `confirm-resolved`.
async fn follow_confirm<A: App>(session: &Session<A>, out: &Out, id: String) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(CONFIRM_FOLLOW_MS);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let outcome = session
            .wait_confirm(&id, left.as_millis().min(u128::from(u64::MAX)) as u64)
            .await;
        let frame = match outcome {
            Some(ConfirmResultResponse::Confirmed { state_after, .. }) => json!({
                "t": "confirm-resolved", "confirmId": id, "outcome": "confirmed",
                "stateAfter": state_after,
            }),
            Some(ConfirmResultResponse::StillPending) if !left.is_zero() => continue,
            None | Some(_) => {
                json!({"t": "confirm-resolved", "confirmId": id, "outcome": "user-cancelled"})
            }
        };
        out.frame(frame);
        return;
    }
}

/// Sends one `state-update` when the state (below `path`) changes.
fn watch_task<A: App>(
    session: &Session<A>,
    out: &Out,
    id: String,
    path: Option<String>,
) -> JoinHandle<()> {
    let session = session.clone();
    let out = out.clone();
    tokio::spawn(async move {
        let path = path.filter(|p| !p.is_empty());
        if let Ok(changed) = session.wait_for_change(path.as_deref(), WATCH_MAX_MS).await {
            if changed.status.as_str() == "changed" {
                out.frame(json!({
                    "t": "state-update",
                    "id": id,
                    "path": path.unwrap_or_default(),
                    "stateAfter": changed.state_after,
                }));
            }
        }
    })
}
