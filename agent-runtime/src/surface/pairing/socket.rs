//! `GET /agent/ws`: the upgrade checks (`Origin` → 403, no token → 401, a token that does not
//! pair → 401/403), then one task per socket that feeds inbound frames to the hub, writes what
//! the hub queues, and keeps the token's life cycle: `awaiting-claude` on accept (or `active`
//! again within the grace window), `pending-resume` on close, `revoked` pushed on revocation.

use std::collections::HashMap;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Query, Request};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures::{SinkExt as _, StreamExt as _};

use crate::app::App;
use crate::engine::paired::frames::{
    ClientFrame, ServerFrame, LAP_VERSION, MAX_FRAME_BYTES, MIN_CLIENT_VERSION,
};
use crate::engine::paired::hub::Outgoing;
use crate::engine::paired::records::{set_status, within_grace};
use crate::ops::ServerState;
use crate::security::{verify_bearer, AuthError, TokenRecord, TokenStatus};

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
    if server.inner.origin.check(&parts).is_err() {
        return StatusCode::FORBIDDEN.into_response();
    }
    let Some(token) = token_of(&parts) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let now = server.now();
    let bearer = format!("Bearer {token}");
    let record = match verify_bearer(
        Some(&bearer),
        &**server.tokens(),
        now,
        server.options().sliding_ttl_ms,
    )
    .await
    {
        Ok(r) => r,
        Err(AuthError::Revoked) => return StatusCode::FORBIDDEN.into_response(),
        Err(AuthError::AuthFailed) => return StatusCode::UNAUTHORIZED.into_response(),
    };
    if !crate::engine::paired::is_paired(&record) {
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
        .on_upgrade(move |socket| run(server, record, socket))
}

async fn run<A: App>(server: ServerState<A>, record: TokenRecord, socket: WebSocket) {
    let pairing = &server.inner.pairing;
    let hub = &pairing.hub;
    let tid = record.tid.clone();
    let mut revocations = server.inner.revocations.subscribe();
    let lifecycle = hub.lifecycle.lock().await;
    // The record as it is now (a close handled meanwhile may have changed it).
    let record = server.tokens().find_by_tid(&tid).await.unwrap_or(record);
    let now = server.now();
    hub.sweep(now);
    let registered = hub.register(&tid);
    let conn = registered.id;
    if registered.superseded {
        tracing::info!(tid = %tid, "pairing: a newer socket supersedes the older one");
    }
    if within_grace(&record, now) {
        set_status(&**server.tokens(), &tid, TokenStatus::Active, None).await;
        hub.push(&tid, ServerFrame::Active {});
    } else {
        set_status(&**server.tokens(), &tid, TokenStatus::AwaitingClaude, None).await;
    }
    drop(lifecycle);
    let (mut sink, mut stream) = socket.split();
    let mut outgoing = registered.outgoing;
    let mut writer = tokio::spawn(async move {
        while let Some(out) = outgoing.recv().await {
            match out {
                Outgoing::Frame(frame) => {
                    if sink
                        .send(Message::Text(frame.to_text().into()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Outgoing::Close => {
                    let _ = sink.send(Message::Close(None)).await;
                    return;
                }
            }
        }
    });
    loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => inbound(&server, &tid, conn, text.as_str()),
                Some(Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
            revoked = revocations.recv() => {
                if matches!(revoked, Ok(ref t) if *t == tid) {
                    hub.close(&tid, Some(ServerFrame::Revoked {}));
                }
            }
            _ = &mut writer => break,
        }
    }
    writer.abort();
    let _lifecycle = hub.lifecycle.lock().await;
    let now = server.now();
    if hub.unregister(&tid, conn, now) {
        let until = now.saturating_add(pairing.options.grace_ms);
        set_status(
            &**server.tokens(),
            &tid,
            TokenStatus::PendingResume,
            Some(until),
        )
        .await;
    }
}

/// One inbound text frame: invalid ones are dropped with a warning; `hello` is answered with
/// `hello-ack` (and a client below the minimum version is closed right after).
fn inbound<A: App>(server: &ServerState<A>, tid: &str, conn: u64, text: &str) {
    let hub = &server.inner.pairing.hub;
    let frame: ClientFrame = match serde_json::from_str(text) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(tid, error = %e, "pairing: invalid frame dropped");
            return;
        }
    };
    let version = match &frame {
        ClientFrame::Hello(h) => Some(h.lap_version),
        _ => None,
    };
    let current = hub.inbound(tid, conn, frame, server.now());
    if let (true, Some(version)) = (current, version) {
        hub.push(
            tid,
            ServerFrame::HelloAck {
                lap_version: LAP_VERSION,
                min_client_version: MIN_CLIENT_VERSION,
            },
        );
        if version.is_some_and(|v| v < MIN_CLIENT_VERSION) {
            hub.close(tid, None);
        }
    }
}
