//! The LAP routes (`docs/lap.md` §5): one route per operation of the table, under the base path.
//! Two extractors do the HTTP part of the gate — [`Admitted`] (body cap by `Content-Length`,
//! bearer, session, rate limit) and [`LapBody`] (the capped, lenient JSON body) — and one
//! generic handler hands both to the operation gate. `GET {base}/openapi.json` serves the
//! OpenAPI document generated from the same table.

use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{any, get};
use axum::Router;
use serde_json::Value;

use super::body::{check_content_length, read_json};
use super::openapi::{openapi_document, DocumentedLimits};
use crate::app::App;
use crate::config::MAX_BODY_BYTES;
use crate::ops::budget::{bound, lap_budget};
use crate::ops::error::{json_ok, ApiError};
use crate::ops::ServerState;
use crate::ops::{self, Caller};
use crate::security::request_client_address;
use agent_schema::protocol::ErrorCode;

/// The LAP routes: one per operation under the base path; anything else falls through.
pub(crate) fn lap_routes<A: App>(server: &ServerState<A>) -> Router {
    let base = server.options().lap_base_path.trim_end_matches('/');
    let mut router = Router::new();
    for &op in ops::Operation::ALL {
        let spec = op.spec();
        router = router.route(
            &format!("{base}{}", spec.lap_path),
            any(
                move |State(server): State<ServerState<A>>,
                      Admitted(caller): Admitted,
                      LapBody(body): LapBody| async move {
                    // `budgetChars` (`docs/lap.md` §5.3): absent, the answer is as it was.
                    match lap_budget(op, &body) {
                        Ok(None) => ops::perform(&server, caller, op, body).await,
                        Ok(Some((asked, budget))) => ops::perform(&server, caller, op, body)
                            .await
                            .within_budget(budget, |answer| bound(&asked, answer, budget)),
                        Err(e) => ops::Reply::error(e),
                    }
                },
            ),
        );
    }
    router
        .route(&format!("{base}/openapi.json"), get(openapi_json::<A>))
        .with_state(server.clone())
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
pub(crate) struct Admitted(pub(crate) Caller);

impl<A: App> FromRequestParts<ServerState<A>> for Admitted {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        server: &ServerState<A>,
    ) -> Result<Self, ApiError> {
        check_content_length(&parts.headers)?;
        let authorization = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let address = request_client_address(parts, server.options().trust_proxy);
        server.auth_blocked(&address)?;
        match ops::admit(server, authorization).await {
            Ok(caller) => Ok(Admitted(caller)),
            Err(e) => {
                let refused = matches!(e.code(), ErrorCode::AuthFailed | ErrorCode::Revoked);
                if refused && authorization.is_some() {
                    server.auth_failed(&address, parts.uri.path(), None).await;
                }
                Err(e)
            }
        }
    }
}

/// A request body read with the cap (413 past it); empty, whitespace or malformed JSON reads
/// as `null`, which every operation's request reads leniently.
pub(crate) struct LapBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for LapBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        read_json(req.into_body()).await.map(LapBody)
    }
}
