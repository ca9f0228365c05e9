//! `GET /agent/ws`: the upgrade checks (`Origin` → 403, no token → 401, a token that does not
//! pair → 401/403), then one task per socket that feeds inbound frames to the hub, writes what
//! the hub queues, and keeps the token's life cycle: `awaiting-claude` on accept (or `active`
//! again within the grace window), `pending-resume` on close, `revoked` pushed on revocation.
//!
//! Nothing a peer does holds a socket open against the server (`docs/pairing.md` §Bounds):
//! every write has a timeout, a close never waits behind a blocked write, `hello` has a
//! deadline, silent sockets are pinged, and errors close with their code. The writer is in
//! `writer`; text the peer chose is escaped before it is logged.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Query, Request};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures::future::OptionFuture;
use futures::StreamExt as _;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::engine::paired::frames::{
    ClientFrame, ServerFrame, LAP_VERSION, MAX_FRAME_BYTES, MIN_CLIENT_VERSION, SERVER_TAKES,
};
use crate::engine::paired::outbound::close_code;
use crate::engine::paired::records::within_grace;
use crate::ops::ServerState;
use crate::security::{
    lifecycle, request_client_address, verify_bearer, AuditEntry, AuditEvent, AuthError,
    LifecycleError, TokenRecord, TokenStatus,
};
use serde_json::json;

use super::writer::{escaped, write, WarnLimit, CLOSE_LINGER};

/// The path of the pairing socket.
pub(crate) const WS_PATH: &str = crate::engine::paired::SOCKET_PATH;

/// The `/agent/ws` route.
pub(crate) fn ws_routes<A: App>(server: &ServerState<A>) -> Router {
    let s = server.clone();
    Router::new().route(WS_PATH, any(move |req: Request| upgrade(s.clone(), req)))
}

/// The bearer of an upgrade request: `?token=`, else `Authorization: Bearer`.
fn token_of(parts: &axum::http::request::Parts) -> Option<String> {
    let query: Option<Query<HashMap<String, String>>> = Query::try_from_uri(&parts.uri).ok();
    if let Some(t) = query.and_then(|Query(mut q)| q.remove("token")) {
        return Some(t);
    }
    parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string)
}

async fn upgrade<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (mut parts, _) = req.into_parts();
    if server.origin().check(&parts).is_err() {
        return StatusCode::FORBIDDEN.into_response();
    }
    // An app's socket comes from a page (which always sends `Origin`) unless the server pairs
    // native apps: a plain client holding the token (an agent) cannot take the app's place.
    if !parts.headers.contains_key(header::ORIGIN) && !server.pairing().options.native_apps {
        return (
            StatusCode::FORBIDDEN,
            "an app socket needs an Origin header (this server pairs no native apps)",
        )
            .into_response();
    }
    let Some(token) = token_of(&parts) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let now = server.now();
    // An address that failed too often is refused before its token is looked up.
    let address = request_client_address(&parts, server.options().trust_proxy);
    if let Err(limited) = server.auth_blocked_by(|| address.clone()) {
        return limited.into_response();
    }
    let bearer = format!("Bearer {token}");
    // Subscribed before the token is verified: a revoke from then on reaches the socket task,
    // however early it lands.
    let revocations = server.revocations().subscribe();
    let verified = verify_bearer(
        Some(&bearer),
        &**server.tokens(),
        now,
        server.options().sliding_ttl_ms(),
    )
    .await;
    // A store that failed is not the caller's failure.
    if matches!(verified, Err(ref e) if e.refused_credential()) {
        server.auth_failed(&address, WS_PATH, None).await;
    }
    let record = match verified {
        Ok(r) => r,
        Err(AuthError::Revoked) => return StatusCode::FORBIDDEN.into_response(),
        Err(AuthError::AuthFailed | AuthError::Lapsed(_)) => {
            return StatusCode::UNAUTHORIZED.into_response()
        }
        Err(AuthError::StoreFailed) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    if !crate::engine::paired::drives_paired_session(&record) {
        // The token drives a session hosted in this process.
        return StatusCode::FORBIDDEN.into_response();
    }
    if record.status == TokenStatus::PendingResume && !within_grace(&record, now) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let ws = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    ws.max_message_size(MAX_FRAME_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .on_upgrade(move |socket| run(server, record, socket, revocations))
}

/// Closes a socket the life cycle refused before it was registered: `revoked` then 1000 for a
/// revoked (or vanished) token, 1011 when the store failed.
async fn refuse(mut socket: WebSocket, tid: &str, refused: &LifecycleError) {
    use axum::extract::ws::CloseFrame;
    let code = match refused {
        LifecycleError::Store(e) => {
            tracing::error!(tid = %tid, "pairing: the token store failed on accept: {e}");
            close_code::INTERNAL
        }
        _ => {
            if let Ok(text) = serde_json::to_string(&ServerFrame::Revoked {}) {
                let _ = socket.send(Message::Text(text.into())).await;
            }
            close_code::NORMAL
        }
    };
    let close = CloseFrame {
        code,
        reason: "".into(),
    };
    let _ = tokio::time::timeout(CLOSE_LINGER, socket.send(Message::Close(Some(close)))).await;
}

async fn run<A: App>(
    server: ServerState<A>,
    record: TokenRecord,
    socket: WebSocket,
    mut revocations: tokio::sync::broadcast::Receiver<String>,
) {
    let pairing = &server.pairing();
    let hub = &pairing.hub;
    let options = &pairing.options;
    let tid = record.tid.clone();
    let lifecycle = hub.lifecycle.lock().await;
    // In a fleet, the socket's fleet-wide lock and its lease come first (`fleet_socket`).
    #[cfg(feature = "fleet")]
    let opening = match &pairing.fleet {
        Some(fleet) => match super::fleet_socket::Opening::begin(fleet, &tid).await {
            Ok(opening) => Some(opening),
            Err(e) => {
                drop(lifecycle);
                return refuse(socket, &tid, &LifecycleError::Store(e)).await;
            }
        },
        None => None,
    };
    let now = server.now();
    hub.sweep(now);
    // The record as it is now (a close handled meanwhile may have changed it); a socket is
    // registered only once the life cycle accepted it, so a revoked token never pairs.
    let current = match server.tokens().find_by_tid(&tid).await {
        Ok(Some(current)) => current,
        Ok(None) => record.clone(),
        Err(e) => {
            #[cfg(feature = "fleet")]
            if let Some(opening) = opening {
                opening.abandon().await;
            }
            drop(lifecycle);
            return refuse(socket, &tid, &LifecycleError::Store(e)).await;
        }
    };
    let resumed = within_grace(&current, now);
    let record = match lifecycle::socket_opened(&**server.tokens(), &tid, resumed).await {
        Ok(record) => record,
        Err(refused) => {
            #[cfg(feature = "fleet")]
            if let Some(opening) = opening {
                opening.abandon().await;
            }
            drop(lifecycle);
            tracing::info!(tid = %tid, "pairing: socket refused: {refused}");
            return refuse(socket, &tid, &refused).await;
        }
    };
    #[allow(unused_mut)]
    let mut registered = hub.register(&tid);
    #[cfg(feature = "fleet")]
    if let Some(opening) = opening {
        registered.superseded |= opening.supersedes();
        opening.done().await;
    }
    // Counted in `agent_paired_sockets` until this task ends.
    let _socket = crate::telemetry::Live::paired_socket();
    let conn = registered.id;
    if registered.superseded {
        tracing::info!(tid = %tid, "pairing: a newer socket supersedes the older one");
    }
    if resumed {
        let _ = hub.push(&tid, ServerFrame::Active {});
    }
    drop(lifecycle);
    // `resume` when the app came back within its grace window, else `socket-accept`.
    let event = if resumed {
        AuditEvent::Resume
    } else {
        AuditEvent::SocketAccept
    };
    let detail = json!({"sessionId": record.session_id, "superseded": registered.superseded});
    server
        .audit(
            AuditEntry::new(now, event, detail)
                .with_tid(tid.clone())
                .with_uid(record.uid.clone()),
        )
        .await;
    let (sink, mut stream) = socket.split();
    let mut writer = tokio::spawn(write(
        sink,
        registered.outgoing,
        options.write_timeout,
        options.close_grace,
    ));
    let hello_deadline = tokio::time::sleep(options.hello_timeout);
    tokio::pin!(hello_deadline);
    let mut awaiting_hello = true;
    // The ping period, also the period of the check that the token is still live.
    let ping_every = match options.ping_interval {
        Duration::ZERO => Duration::from_secs(30),
        every => every,
    };
    let mut ticker = tokio::time::interval(ping_every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    // When the last ping was sent (answered once anything is heard after it).
    let mut pinged: Option<Instant> = None;
    let mut warnings = WarnLimit::default();
    let mut writer_done = false;
    let mut token_check: Option<JoinHandle<bool>> = None;
    // A server shutting down closes the socket with 1001 (going away): the app resumes on the
    // next instance (`docs/operations.md` §Shutdown).
    let stopped = server.stopped();
    tokio::pin!(stopped);
    let mut stop_sent = false;
    loop {
        tokio::select! {
            () = &mut stopped, if !stop_sent => {
                stop_sent = true;
                tracing::info!(tid = %tid, "pairing: the server is shutting down; closing");
                hub.close_conn(&tid, conn, close_code::AWAY);
            }
            message = stream.next() => {
                last_heard = Instant::now();
                match message {
                    Some(Ok(Message::Text(text))) => {
                        match inbound(&server, &tid, conn, text.as_str(), &mut warnings) {
                            Read::Frame => {}
                            Read::Hello => {
                                awaiting_hello = false;
                                // In a fleet, whether the app deduplicates keyed messages
                                // goes in its lease (`docs/pairing.md` §A fleet of replicas).
                                #[cfg(feature = "fleet")]
                                if let Some(fleet) = &pairing.fleet {
                                    let dedupes = hub.hello(&tid).is_some_and(|h| {
                                        h.takes(crate::engine::paired::frames::IDEMPOTENCY_KEYS)
                                    });
                                    if let Err(e) = fleet.app_dedupes(&tid, dedupes).await {
                                        tracing::error!(tid = %tid, "fleet: the app's keys not recorded in its lease: {e}");
                                        crate::telemetry::fleet_hop_failed("store");
                                    }
                                }
                            }
                            // Recorded before the next frame is read: an app's flood of
                            // decisions waits on the store, it does not pile up.
                            #[cfg(feature = "fleet")]
                            Read::Decided(d) => {
                                if let Some(fleet) = &pairing.fleet {
                                    if let Err(e) = fleet.decided(&tid, &d.id, &d.resolution, d.budget).await {
                                        tracing::error!(tid = %tid, confirm_id = %d.id, "fleet: a decision not recorded: {e}");
                                        crate::telemetry::fleet_hop_failed("store");
                                    }
                                }
                            }
                            Read::Close(code) => {
                                hub.close_conn(&tid, conn, code);
                                break;
                            }
                        }
                    }
                    Some(Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Err(e)) => {
                        // Close with the code of the error; the writer sends it within its
                        // close grace while the pairing ends now.
                        let error = e.to_string();
                        let code = close_code_of(&error);
                        tracing::warn!(
                            tid = %tid, code, error = %escaped(&error, 200),
                            "pairing: socket read failed; closing"
                        );
                        hub.close_conn(&tid, conn, code);
                        break;
                    }
                }
            }
            _ = &mut hello_deadline, if awaiting_hello => {
                awaiting_hello = false;
                tracing::warn!(tid = %tid, "pairing: no hello in time; closing");
                hub.close_conn(&tid, conn, close_code::POLICY);
            }
            _ = ticker.tick() => {
                // A token that expired or was revoked (by another replica) closes its socket.
                // The check runs beside the loop: a store slow to answer (down, restarting)
                // must not keep the socket from reading the app's frames and pongs.
                if token_check.is_none() {
                    token_check = Some(tokio::spawn(token_gone(server.clone(), tid.clone())));
                }
                let silent = last_heard.elapsed();
                if options.ping_interval.is_zero() {
                    // No liveness check.
                } else if let Some(at) = pinged.filter(|at| *at > last_heard) {
                    if at.elapsed() >= ping_every {
                        tracing::info!(tid = %tid, "pairing: no answer to a ping; closing");
                        hub.close_conn(&tid, conn, close_code::AWAY);
                    }
                } else if silent >= ping_every {
                    pinged = Some(Instant::now());
                    hub.ping_conn(&tid, conn);
                }
            }
            checked = OptionFuture::from(token_check.as_mut()), if token_check.is_some() => {
                token_check = None;
                if matches!(checked, Some(Ok(true))) {
                    tracing::info!(tid = %tid, "pairing: the token expired or was revoked; closing");
                    hub.revoke(&tid);
                }
            }
            revoked = revocations.recv() => {
                if matches!(revoked, Ok(ref t) if *t == tid) {
                    hub.revoke(&tid);
                }
            }
            _ = &mut writer => {
                writer_done = true;
                break;
            }
        }
    }
    if let Some(check) = token_check {
        check.abort();
    }
    // The writer has been told to close (or is told by `unregister` below): it ends within
    // its close grace, which lets the peer read the close frame; past that it is aborted.
    if !writer_done {
        let linger = options.close_grace.saturating_mul(2) + CLOSE_LINGER;
        tokio::spawn(async move {
            if tokio::time::timeout(linger, &mut writer).await.is_err() {
                writer.abort();
            }
        });
    }
    let lifecycle = hub.lifecycle.lock().await;
    let now = server.now();
    let current = hub.unregister(&tid, conn, now);
    if current {
        let until = now.saturating_add(crate::clock::millis(pairing.options.grace));
        let closed = || async {
            match lifecycle::socket_closed(&**server.tokens(), &tid, until).await {
                Ok(()) | Err(LifecycleError::Revoked | LifecycleError::Unknown) => {}
                Err(e) => tracing::error!(tid = %tid, "pairing: pending-resume not stored: {e}"),
            }
        };
        // In a fleet, only while this replica's lease is the session's (`fleet_socket`).
        #[cfg(feature = "fleet")]
        match &pairing.fleet {
            Some(fleet) => super::fleet_socket::close(fleet, &tid, closed).await,
            None => closed().await,
        }
        #[cfg(not(feature = "fleet"))]
        closed().await;
    }
    drop(lifecycle);
    // `current`: this socket was the session's (not one a newer socket superseded).
    let detail = json!({"sessionId": record.session_id, "current": current});
    server
        .audit(
            AuditEntry::new(now, AuditEvent::SocketClose, detail)
                .with_tid(tid)
                .with_uid(record.uid.clone()),
        )
        .await;
}

/// Whether `tid`'s token is gone (revoked, expired or swept): the periodic check of a paired
/// socket. A store that cannot answer keeps the socket until it can (the revocation channel
/// still ends it at once on this replica). The app holding its socket uses the token: the
/// sliding TTL runs from when the socket closed, or from the agent's last call, not while the
/// app is open.
async fn token_gone<A: App>(server: ServerState<A>, tid: String) -> bool {
    let now = server.now();
    let gone = match server.tokens().find_by_tid(&tid).await {
        Ok(found) => found.is_none_or(|r| r.status == TokenStatus::Revoked || r.expires_at <= now),
        Err(_) => false,
    };
    if !gone && server.options().sliding_ttl_ms().is_some_and(|ttl| ttl > 0) {
        if let Err(e) = lifecycle::touch(&**server.tokens(), &tid, now).await {
            tracing::warn!(tid = %tid, "pairing: the token's use not stored: {e}");
        }
    }
    gone
}

/// The close code for a read error's text: 1009 for a message over the cap, 1007 for text
/// that is not UTF-8, else 1002.
fn close_code_of(error: &str) -> u16 {
    if error.contains("Space limit exceeded") || error.contains("too long") {
        close_code::TOO_BIG
    } else if error.contains("UTF-8") || error.contains("utf-8") {
        close_code::PAYLOAD
    } else {
        close_code::PROTOCOL
    }
}

/// What one inbound text frame led to.
enum Read {
    /// Handled (or dropped).
    Frame,
    /// A `hello` was accepted.
    Hello,
    /// The socket must close with this code.
    Close(u16),
    /// A decision on a proposal, for the fleet's record (feature `fleet`).
    #[cfg(feature = "fleet")]
    Decided(Decided),
}

/// A decision the app sent, to record for the fleet.
#[cfg(feature = "fleet")]
struct Decided {
    id: String,
    resolution: crate::engine::paired::link::Resolution,
    budget: usize,
}

/// One inbound text frame: invalid ones are dropped with a warning (escaped, rate-limited per
/// socket); `hello` is answered with `hello-ack` (and a client below the minimum version is
/// closed right after); a `hello` over `hello_bytes` closes the socket with 1009.
fn inbound<A: App>(
    server: &ServerState<A>,
    tid: &str,
    conn: u64,
    text: &str,
    warnings: &mut WarnLimit,
) -> Read {
    let pairing = &server.pairing();
    let hub = &pairing.hub;
    let frame = match ClientFrame::parse(text) {
        Ok(f) => f,
        Err(e) => {
            if let Some(suppressed) = warnings.allow(Instant::now()) {
                tracing::warn!(
                    tid,
                    error = %escaped(&e.0, 200),
                    suppressed,
                    "pairing: invalid frame dropped"
                );
            }
            return Read::Frame;
        }
    };
    let version = match &frame {
        ClientFrame::Hello(h) => {
            if text.len() > pairing.options.hello_bytes {
                tracing::warn!(
                    tid,
                    bytes = text.len(),
                    limit = pairing.options.hello_bytes,
                    "pairing: hello over its budget; closing"
                );
                return Read::Close(close_code::TOO_BIG);
            }
            Some(h.lap_version)
        }
        _ => None,
    };
    // In a fleet, a decision is recorded for the replicas (`docs/pairing.md` §A fleet of
    // replicas), whether this relay knows the proposal or another replica relayed it.
    #[cfg(feature = "fleet")]
    let decided = match (&frame, &pairing.fleet) {
        (
            ClientFrame::ConfirmResolved {
                confirm_id,
                outcome,
                state_after,
            },
            Some(_),
        ) => {
            let options = &pairing.options;
            let budget = crate::engine::paired::fleet::recorded_state_budget(
                options.outcome_bytes,
                options.outcomes_bytes,
            );
            Some(Decided {
                id: confirm_id.clone(),
                resolution: crate::engine::paired::link::Resolution {
                    decision: *outcome,
                    state_after: state_after.clone().filter(|s| s.get().len() <= budget),
                    at: server.now(),
                    withdrawn: false,
                },
                budget,
            })
        }
        _ => None,
    };
    let current = hub.inbound(tid, conn, frame, server.now());
    #[cfg(feature = "fleet")]
    if let (true, Some(decided)) = (current, decided) {
        return Read::Decided(decided);
    }
    match (current, version) {
        (true, Some(version)) => {
            let _ = hub.push(
                tid,
                ServerFrame::HelloAck {
                    lap_version: LAP_VERSION,
                    min_client_version: MIN_CLIENT_VERSION,
                    extensions: SERVER_TAKES.iter().map(|e| e.to_string()).collect(),
                },
            );
            if version.is_some_and(|v| v < MIN_CLIENT_VERSION) {
                return Read::Close(close_code::NORMAL);
            }
            Read::Hello
        }
        _ => Read::Frame,
    }
}
