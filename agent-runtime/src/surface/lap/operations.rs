//! The LAP routes (`docs/lap.md` §5): one route per operation of the table, under the base path.
//! One generic handler does the HTTP part of the gate — [`admitted`] (body cap by
//! `Content-Length`, bearer, session, rate limit), then the capped, lenient JSON body — and hands
//! both to the operation gate, inside the operation's `agent.op` span (`ops::traced`).
//! `GET {base}/openapi.json` serves the OpenAPI document generated from the same table.

use axum::extract::{Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{any, get};
use axum::Router;
use serde_json::Value;
use tracing::Instrument as _;

use super::body::{check_content_length, read_json};
use super::openapi::{openapi_document, DocumentedLimits};
use crate::app::App;
use crate::config::MAX_BODY_BYTES;
use crate::ops::budget::{bound, lap_budget};
use crate::ops::error::{json_ok, ApiError};
use crate::ops::traced::{Traced, Via};
use crate::ops::ServerState;
use crate::ops::{self, Caller};
use crate::security::request_client_address;
use tea_agent_schema::protocol::ErrorCode;

/// The LAP routes: one per operation under the base path; anything else falls through.
pub(crate) fn lap_routes<A: App>(server: &ServerState<A>) -> Router {
    let base = server.options().lap_base_path.trim_end_matches('/');
    let mut router = Router::new();
    for &op in ops::Operation::ALL {
        let spec = op.spec();
        router = router.route(
            &format!("{base}{}", spec.lap_path),
            any(
                move |State(server): State<ServerState<A>>, req: Request| async move {
                    let traced = Traced::start(op, Via::LAP, server.request_metrics());
                    let reply = answer(&server, op, req, &traced)
                        .instrument(traced.span().clone())
                        .await;
                    traced.finish(reply.status());
                    reply
                },
            ),
        );
    }
    router
        .route(&format!("{base}/openapi.json"), get(openapi_json::<A>))
        .with_state(server.clone())
}

/// The answer of `op` to `req`: the caller admitted ([`admitted`]), then the capped, lenient
/// JSON body read (413 past the cap; empty, whitespace or malformed JSON reads as `null`,
/// which every operation's request reads leniently) and the operation run through the gate.
async fn answer<A: App>(
    server: &ServerState<A>,
    op: ops::Operation,
    req: Request,
    traced: &Traced,
) -> ops::Reply {
    let (parts, body) = req.into_parts();
    let caller = match admitted(server, &parts).await {
        Ok(caller) => caller,
        Err(e) => return ops::Reply::error(e),
    };
    traced.caller(&caller.record);
    let body = match read_json(body).await {
        Ok(body) => body,
        Err(e) => return ops::Reply::error(e),
    };
    // `budgetChars` (`docs/lap.md` §5.3): absent, the answer is as it was.
    match lap_budget(op, &body) {
        Ok(None) => ops::perform(server, caller, op, body).await,
        Ok(Some((asked, budget))) => ops::perform(server, caller, op, body)
            .await
            .within_budget(budget, |answer| bound(&asked, answer, budget)),
        Err(e) => ops::Reply::error(e),
    }
}

/// `GET {base}/openapi.json`: the OpenAPI 3.1 document of LAP (no credential needed).
async fn openapi_json<A: App>(State(server): State<ServerState<A>>) -> Response {
    let describe = server.host().describe();
    let text = |key: &str| {
        describe
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let limits = DocumentedLimits {
        max_body_bytes: MAX_BODY_BYTES,
        idempotency_window_ms: crate::clock::millis(ops::IDEMPOTENCY_WINDOW),
        #[cfg(feature = "pairing")]
        forward_timeout: Some(crate::clock::millis(
            server.options().pairing.forward_timeout,
        )),
        #[cfg(not(feature = "pairing"))]
        forward_timeout: None,
    };
    let document = openapi_document(
        &server.options().lap_base_path,
        text("name"),
        text("version"),
        &limits,
    );
    json_ok(&document)
}

/// A caller through steps 1–5 of the gate: `Content-Length` over the cap → 413, then the
/// bearer of the `Authorization` header, its session and the rate limit. A client address
/// that failed to authenticate too often is refused (429) before its bearer is looked up, and
/// a bearer that does not verify counts towards that (`docs/security.md` §Rate limits).
async fn admitted<A: App>(server: &ServerState<A>, parts: &Parts) -> Result<Caller, ApiError> {
    check_content_length(&parts.headers)?;
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    // The client address is made only when it is needed: an address is blocked, or the
    // credential failed.
    let address = || request_client_address(parts, server.options().trust_proxy);
    server.auth_blocked_by(address)?;
    match ops::admit(server, authorization).await {
        Ok(caller) => Ok(caller),
        Err(e) => {
            let refused = matches!(e.code(), ErrorCode::AuthFailed | ErrorCode::Revoked);
            if refused && authorization.is_some() {
                server.auth_failed(&address(), parts.uri.path(), None).await;
            }
            Err(e)
        }
    }
}
