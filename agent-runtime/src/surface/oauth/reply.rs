//! OAuth's answers: JSON error bodies (RFC 6749 §5.2) and token answers with
//! `Cache-Control: no-store`; form bodies read within a bound; the endpoints' rate limit.

use axum::body::Body;
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Limited};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::app::App;
use crate::ops::ServerState;
use crate::security::{request_client_address, AuditEntry, AuditEvent, Bucket};

/// The largest body an OAuth endpoint reads (a form or a registration), in bytes.
pub(super) const MAX_OAUTH_BODY_BYTES: usize = 16 * 1024;

/// An OAuth error answer: its status, `error` code and `error_description`.
#[derive(Debug, Clone)]
pub(super) struct OAuthError {
    pub(super) status: StatusCode,
    pub(super) error: &'static str,
    pub(super) description: String,
}

impl OAuthError {
    pub(super) fn new(
        status: StatusCode,
        error: &'static str,
        description: impl Into<String>,
    ) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
        }
    }

    /// 400 with `error`.
    pub(super) fn bad(error: &'static str, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, description)
    }

    /// 400 `invalid_request`.
    pub(super) fn invalid_request(description: impl Into<String>) -> Self {
        Self::bad("invalid_request", description)
    }

    /// 401 `invalid_client`.
    pub(super) fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", description)
    }

    /// 400 `invalid_grant`.
    pub(super) fn invalid_grant(description: impl Into<String>) -> Self {
        Self::bad("invalid_grant", description)
    }

    /// Audited as a refusal at `endpoint`, then answered.
    pub(super) async fn audited<A: App>(self, server: &ServerState<A>, endpoint: &str) -> Response {
        let detail = json!({
            "endpoint": endpoint,
            "error": self.error,
            "description": self.description,
        });
        server
            .audit(AuditEntry::new(
                server.now(),
                AuditEvent::OauthRefused,
                detail,
            ))
            .await;
        self.into_response()
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.error, "error_description": self.description});
        let mut response = no_store(self.status, &body);
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"oauth\""),
            );
        }
        response
    }
}

/// A JSON answer that no cache keeps (RFC 6749 §5.1).
pub(super) fn no_store(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// Reads a body of at most [`MAX_OAUTH_BODY_BYTES`] (the listener bounds the time).
pub(super) async fn read_body(body: Body) -> Result<bytes::Bytes, OAuthError> {
    match Limited::new(body, MAX_OAUTH_BODY_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(OAuthError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            format!("the body is over {MAX_OAUTH_BODY_BYTES} bytes"),
        )),
        Err(_) => Err(OAuthError::invalid_request("the body could not be read")),
    }
}

/// A form body (`application/x-www-form-urlencoded`) read as `T`: 400 `invalid_request`
/// saying what is wrong otherwise (a parameter given twice included, RFC 6749 §3.1).
pub(super) async fn read_form<T: DeserializeOwned>(
    parts: &Parts,
    body: Body,
) -> Result<T, OAuthError> {
    let media = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if media.as_deref() != Some("application/x-www-form-urlencoded") {
        return Err(OAuthError::invalid_request(
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    let bytes = read_body(body).await?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
        .map_err(|e| OAuthError::invalid_request(format!("the form does not read: {e}")))?;
    let mut seen = std::collections::HashSet::new();
    for (name, _) in &pairs {
        if !seen.insert(name.as_str()) {
            return Err(OAuthError::invalid_request(format!(
                "the parameter {name:?} is given more than once"
            )));
        }
    }
    serde_urlencoded::from_bytes(&bytes)
        .map_err(|e| OAuthError::invalid_request(format!("the form does not read: {e}")))
}

/// A request the endpoints' rate limit refused.
pub(super) enum Refused {
    /// OAuth is off: there is no endpoint.
    Off,
    /// Past the rate: retry in this many seconds.
    Limited(u64),
}

impl Refused {
    /// The answer of an endpoint a client calls: a JSON error (429 with `retry-after`).
    pub(super) fn json(self) -> Response {
        match self {
            Refused::Off => {
                OAuthError::new(StatusCode::NOT_FOUND, "invalid_request", "OAuth is off")
                    .into_response()
            }
            Refused::Limited(secs) => with_retry_after(
                OAuthError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "temporarily_unavailable",
                    format!("too many requests from this address; retry in {secs} s"),
                )
                .into_response(),
                secs,
            ),
        }
    }
}

/// `response` with `retry-after: secs`.
pub(super) fn with_retry_after(mut response: Response, secs: u64) -> Response {
    if let Ok(v) = HeaderValue::try_from(secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// The endpoints' rate limit per client address (`OAuthOptions::endpoint_rate`), shared by
/// every endpoint and the consent page; a refusal is counted and audited.
pub(super) async fn check_rate<A: App>(
    server: &ServerState<A>,
    parts: &Parts,
    endpoint: &str,
) -> Result<(), Refused> {
    let Some(oauth) = server.oauth() else {
        return Err(Refused::Off);
    };
    let address = request_client_address(parts, server.options().trust_proxy);
    if let Err(limited) = oauth.limiter.check(&address, Bucket::Identity) {
        crate::telemetry::rate_limited("oauth");
        server
            .audit(AuditEntry::rate_limited(server.now(), None, endpoint))
            .await;
        return Err(Refused::Limited(limited.retry_after_secs()));
    }
    Ok(())
}

/// [`check_rate`] for an endpoint a client calls: a refusal is its JSON answer.
pub(super) async fn limit<A: App>(
    server: &ServerState<A>,
    parts: &Parts,
    endpoint: &str,
) -> Result<(), Response> {
    check_rate(server, parts, endpoint)
        .await
        .map_err(Refused::json)
}

/// The resource URL of this server: the issuer and `/agent/mcp`.
pub(super) fn resource_url<A: App>(server: &ServerState<A>, parts: &Parts) -> String {
    format!(
        "{}{}",
        server.oauth_issuer(parts),
        crate::security::oauth::RESOURCE_PATH
    )
}
