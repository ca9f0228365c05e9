//! The routes replicas of a fleet call on each other (feature `fleet`, `docs/pairing.md` §A
//! fleet of replicas), mounted only when the fleet is on and outside the `Host` rule (a
//! replica is called at its fleet address): `POST /agent/fleet/v1/call` (a paired call carried
//! to the holder of its socket, answered as lines), `…/cancel`, `…/activated` and
//! `…/supersede`. Every request must be signed with the fleet's key (HMAC-SHA256 over its time,
//! path and body, within 30 s of this replica's clock): anything else is refused 403 before its
//! body is read as JSON, logged and counted.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde::de::DeserializeOwned;

use crate::app::App;
use crate::engine::paired::fleet::{wall_ms, Fleet, SIGNATURE_HEADER, TIME_HEADER};
use crate::ops::fleet::wire::{
    HopCall, HopNote, ACTIVATED_PATH, CALL_PATH, CANCEL_PATH, MAX_REQUEST_BYTES, SUPERSEDE_PATH,
};
use crate::ops::fleet_holder as holder;
use crate::ops::{ApiError, ServerState};

/// The fleet's routes, when the fleet is on.
pub(crate) fn fleet_routes<A: App>(server: &ServerState<A>) -> Option<Router> {
    let fleet = server.pairing().fleet.clone()?;
    let route = |path: &'static str| {
        let (server, fleet) = (server.clone(), fleet.clone());
        post(move |headers: HeaderMap, body: Bytes| {
            let (server, fleet) = (server.clone(), fleet.clone());
            async move { serve(&server, &fleet, path, &headers, &body) }
        })
    };
    Some(
        Router::new()
            .route(CALL_PATH, route(CALL_PATH))
            .route(CANCEL_PATH, route(CANCEL_PATH))
            .route(ACTIVATED_PATH, route(ACTIVATED_PATH))
            .route(SUPERSEDE_PATH, route(SUPERSEDE_PATH))
            .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES)),
    )
}

/// Whether the request to `path` is signed with the fleet's key.
fn signed(fleet: &Fleet, path: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(time), Some(signature)) = (text(TIME_HEADER), text(SIGNATURE_HEADER)) else {
        return false;
    };
    let Ok(time) = time.parse::<u64>() else {
        return false;
    };
    fleet.verify(time, signature, path, body, wall_ms())
}

/// `body` read as `T`, or the 400 that says why.
fn read<T: DeserializeOwned>(path: &str, body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        crate::telemetry::fleet_hop_failed("malformed");
        tracing::warn!(path, "fleet: a hop that does not read: {e}");
        ApiError::invalid(format!("a hop that does not read: {e}"))
    })
}

fn serve<A: App>(
    server: &ServerState<A>,
    fleet: &Arc<Fleet>,
    path: &'static str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    if !signed(fleet, path, headers, body) {
        crate::telemetry::fleet_hop_failed("bad-signature");
        tracing::warn!(path, "fleet: a hop without a good signature refused");
        return ApiError::forbidden("a hop must be signed with the fleet's key").into_response();
    }
    match path {
        CALL_PATH => match read::<HopCall>(path, body) {
            Ok(call) => {
                let lines = holder::answer(server.clone(), fleet.clone(), call);
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/x-ndjson")],
                    Body::from_stream(lines),
                )
                    .into_response()
            }
            Err(refused) => refused.into_response(),
        },
        _ => match read::<HopNote>(path, body) {
            Ok(note) => {
                match path {
                    CANCEL_PATH => {
                        fleet.cancel(&note.id);
                    }
                    ACTIVATED_PATH => holder::activated(server, &note.id),
                    _ => holder::superseded(server, fleet, &note.id, note.epoch),
                }
                StatusCode::NO_CONTENT.into_response()
            }
            Err(refused) => refused.into_response(),
        },
    }
}
