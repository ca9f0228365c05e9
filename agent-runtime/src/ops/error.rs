//! The one error type of the HTTP surface: it knows its status, code and body.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use agent_schema::protocol::ErrorCode;

use crate::security::WireError;

/// An HTTP error answer `{"error":{"code","detail"?,"retryAfterMs"?,"reconnect"?}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// `error.code`.
    pub code: ErrorCode,
    /// `error.detail`.
    pub detail: Option<String>,
    /// `error.retryAfterMs` (429).
    pub retry_after_ms: Option<u64>,
    /// `error.reconnect` (503 paused).
    pub reconnect: Option<&'static str>,
}

impl ApiError {
    /// An error without detail.
    pub fn new(status: StatusCode, code: ErrorCode) -> Self {
        ApiError {
            status,
            code,
            detail: None,
            retry_after_ms: None,
            reconnect: None,
        }
    }

    /// Adds a detail.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// 400 `invalid` with a detail.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::Invalid).with_detail(detail)
    }

    /// 401 `auth-required`.
    pub fn auth_required() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorCode::AuthRequired)
    }

    /// 403 `forbidden` with a detail.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden).with_detail(detail)
    }

    /// 403 `revoked`.
    pub fn revoked() -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Revoked)
    }

    /// 405 `method-not-allowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed)
    }

    /// 413 `payload-too-large`.
    pub fn payload_too_large() -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::PayloadTooLarge)
    }

    /// 500 `internal`.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal).with_detail(detail)
    }

    /// 503 `paused`: the host closed the session.
    pub fn paused() -> Self {
        ApiError {
            reconnect: Some("expired"),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Paused)
                .with_detail("the session was closed by the host")
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), json!(self.code.as_str()));
        if let Some(r) = self.reconnect {
            error.insert("reconnect".into(), json!(r));
        }
        if let Some(d) = &self.detail {
            error.insert("detail".into(), json!(d));
        }
        if let Some(ms) = self.retry_after_ms {
            error.insert("retryAfterMs".into(), json!(ms));
        }
        json!({ "error": error })
    }
}

impl<E: WireError> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError {
            status: e.status(),
            code: e.code(),
            detail: e.detail(),
            retry_after_ms: e.retry_after_ms(),
            reconnect: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body().to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(r) = self.reconnect {
            headers.insert("x-llui-reconnect", HeaderValue::from_static(r));
        }
        if let Some(ms) = self.retry_after_ms {
            crate::security::insert_retry_after(headers, ms);
        }
        response
    }
}

/// A 200 JSON answer.
pub(crate) fn json_ok(body: &Value) -> Response {
    json_text_ok(body.to_string())
}

/// A 200 JSON answer from its text.
pub(crate) fn json_text_ok(body: String) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
