//! The one error type of the operation core and the HTTP surfaces: an [`ErrorCode`] (which
//! knows its status, `docs/lap.md` §10) plus what the body carries. Every error body is the
//! protocol's [`ErrorResponse`], serialized from here; the OpenAPI document describes the same
//! type.

use agent_schema::protocol::{ErrorCode, ErrorDetail, ErrorResponse};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::config::OverBudget;
use crate::security::{retry_after_secs, WireError};

/// An error answer `{"error":{"code","reconnect"?,"detail"?,"retryAfterMs"?}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    code: ErrorCode,
    /// The code a paired app answered with (`rpc-error`), sent instead of `code`'s.
    relayed_code: Option<String>,
    detail: Option<String>,
    retry_after_ms: Option<u64>,
    reconnect: Option<&'static str>,
    /// `Retry-After` (seconds) without `retryAfterMs` in the body (a paired session's 503).
    retry_after_s: Option<u64>,
}

impl ApiError {
    /// An error without detail; its status is the code's.
    pub fn new(code: ErrorCode) -> Self {
        ApiError {
            code,
            relayed_code: None,
            detail: None,
            retry_after_ms: None,
            reconnect: None,
            retry_after_s: None,
        }
    }

    /// Adds a detail.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds `retryAfterMs` (and the `Retry-After` header).
    pub(crate) fn with_retry_after_ms(mut self, ms: Option<u64>) -> Self {
        self.retry_after_ms = ms;
        self
    }

    /// A 503 `paused` with the `reconnect` hint (`X-LLui-Reconnect`) and, when given, a
    /// `Retry-After` in seconds.
    pub(crate) fn paused_with(reconnect: &'static str, retry_after_s: Option<u64>) -> Self {
        ApiError {
            reconnect: Some(reconnect),
            retry_after_s,
            ..Self::new(ErrorCode::Paused)
        }
    }

    /// A 503 `app-not-reading`: a paired app is connected but does not read its socket (its
    /// outbound queue is full), with `Retry-After` in seconds.
    #[cfg(feature = "pairing")]
    pub(crate) fn not_reading(retry_after_s: u64) -> Self {
        ApiError {
            retry_after_s: Some(retry_after_s),
            ..Self::new(ErrorCode::AppNotReading).with_detail(
                "the paired app is connected but is not reading its socket: its outbound queue is full",
            )
        }
    }

    /// A 500 carrying the code and detail a paired app answered an `rpc` with.
    #[cfg(feature = "pairing")]
    pub(crate) fn relayed(code: String, detail: Option<String>) -> Self {
        ApiError {
            relayed_code: Some(code),
            detail,
            ..Self::new(ErrorCode::Internal)
        }
    }

    /// 409 `conflict`: the confirmation `id` was decided already (`status`).
    pub(crate) fn already_decided(id: &str, status: &str) -> Self {
        ApiError::new(ErrorCode::Conflict)
            .with_detail(format!("confirmation {id} is already {status}"))
    }

    /// 400 `invalid` with a detail.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Invalid).with_detail(detail)
    }

    /// 401 `auth-required`.
    pub fn auth_required() -> Self {
        Self::new(ErrorCode::AuthRequired)
    }

    /// 403 `forbidden` with a detail.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden).with_detail(detail)
    }

    /// 403 `revoked`.
    pub fn revoked() -> Self {
        Self::new(ErrorCode::Revoked)
    }

    /// 405 `method-not-allowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(ErrorCode::MethodNotAllowed)
    }

    /// 413 `payload-too-large`.
    pub fn payload_too_large() -> Self {
        Self::new(ErrorCode::PayloadTooLarge)
    }

    /// 500 `internal`.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal).with_detail(detail)
    }

    /// 503 `paused`: the host closed the session.
    pub fn paused() -> Self {
        Self::paused_with("expired", None).with_detail("the session was closed by the host")
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The detail, if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// `retryAfterMs`, if any.
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.retry_after_ms
    }

    /// The response headers beyond `content-type`: `x-llui-reconnect`, `retry-after`.
    pub(crate) fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(r) = self.reconnect {
            headers.push(("x-llui-reconnect", r.to_string()));
        }
        if let Some(ms) = self.retry_after_ms {
            headers.push(("retry-after", retry_after_secs(ms).to_string()));
        } else if let Some(s) = self.retry_after_s {
            headers.push(("retry-after", s.to_string()));
        }
        headers
    }

    /// The body, as the protocol's type.
    pub fn response(&self) -> ErrorResponse {
        ErrorResponse {
            error: ErrorDetail {
                code: match &self.relayed_code {
                    Some(c) => c.clone(),
                    None => self.code.as_str().to_string(),
                },
                reconnect: self.reconnect.map(str::to_string),
                detail: self.detail.clone(),
                retry_after_ms: self.retry_after_ms,
            },
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::to_value(self.response()).unwrap_or(Value::Null)
    }
}

impl<E: WireError> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError {
            detail: e.detail(),
            retry_after_ms: e.retry_after_ms(),
            ..ApiError::new(e.code())
        }
    }
}

/// A store failure under a call: 500 `internal` with a fixed detail (the database's text is
/// logged for the operator, never answered).
impl From<crate::security::StoreError> for ApiError {
    fn from(e: crate::security::StoreError) -> Self {
        crate::security::LifecycleError::Store(e).into()
    }
}

impl From<OverBudget> for ApiError {
    fn from(e: OverBudget) -> Self {
        if e.full {
            ApiError::new(ErrorCode::RateLimited)
                .with_detail(e.to_string())
                .with_retry_after_ms(e.retry_after_ms)
        } else {
            ApiError::payload_too_large().with_detail(e.to_string())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), self.body().to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in self.headers() {
            if let Ok(v) = HeaderValue::try_from(value) {
                headers.insert(name, v);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_maps_to_413_or_429_with_the_limit() {
        let e: ApiError = OverBudget::check("text", 1_048_576, 16_384)
            .unwrap_err()
            .into();
        assert_eq!(e.status().as_u16(), 413);
        assert_eq!(
            e.detail(),
            Some("text is 1048576 bytes; the limit is 16384")
        );
        let e: ApiError = OverBudget::full("x", 5, 4, Some(7)).into();
        assert_eq!(e.status().as_u16(), 429);
        assert_eq!(e.retry_after_ms(), Some(7));
    }

    #[test]
    fn every_body_is_an_error_response_with_the_codes_status() {
        let e = ApiError::paused();
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            e.body().to_string(),
            r#"{"error":{"code":"paused","reconnect":"expired","detail":"the session was closed by the host"}}"#
        );
        #[cfg(feature = "pairing")]
        {
            let relayed = ApiError::relayed("schema-error".into(), Some("bad".into()));
            assert_eq!(relayed.status(), StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(
                relayed.body().to_string(),
                r#"{"error":{"code":"schema-error","detail":"bad"}}"#
            );
        }
    }
}
