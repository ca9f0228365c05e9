//! Error plumbing shared by the security building blocks.
//!
//! Request-time failures (a bad bearer, a throttled caller, a cross-origin POST) implement
//! [`WireError`], which knows the HTTP status, the error `code`, the optional `detail` and the
//! optional `retryAfterMs`, and renders the contract's error body
//! `{"error":{"code":C,"detail"?:D,"retryAfterMs"?:N}}`. Each of them also implements axum's
//! `IntoResponse` through [`wire_error_response`]. Start-up failures (a short identity key, a bad
//! rate-limit spec) are [`ConfigError`]s and never reach the wire.

use agent_schema::protocol::{ErrorCode, ErrorDetail, ErrorResponse};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// An error that maps onto an HTTP answer of the LAP server.
pub trait WireError {
    /// The HTTP status of the answer.
    fn status(&self) -> StatusCode;

    /// The `error.code` of the body (`auth-failed`, `revoked`, `rate-limited`, …).
    fn code(&self) -> ErrorCode;

    /// The `error.detail` of the body, when there is one.
    fn detail(&self) -> Option<String> {
        None
    }

    /// The `error.retryAfterMs` of the body, when there is one.
    fn retry_after_ms(&self) -> Option<u64> {
        None
    }

    /// The JSON body: the protocol's `ErrorResponse` `{"error":{"code","detail"?,"retryAfterMs"?}}`.
    fn body(&self) -> Value {
        let body = ErrorResponse {
            error: ErrorDetail {
                code: self.code().as_str().to_owned(),
                reconnect: None,
                detail: self.detail(),
                retry_after_ms: self.retry_after_ms(),
            },
        };
        serde_json::to_value(body).unwrap_or(Value::Null)
    }
}

/// The HTTP answer for a [`WireError`]: its status, `content-type: application/json` and its
/// body, plus `retry-after` when the error has a `retryAfterMs` (every 429).
pub(super) fn wire_error_response<E: WireError + ?Sized>(error: &E) -> Response {
    let body = error.body().to_string();
    let mut response = (error.status(), body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(ms) = error.retry_after_ms() {
        insert_retry_after(headers, ms);
    }
    response
}

/// The `retry-after` header's seconds for a wait of `ms`: `max(1, ceil(ms / 1000))`.
pub(crate) fn retry_after_secs(ms: u64) -> u64 {
    ms.div_ceil(1000).max(1)
}

/// Sets `retry-after` to [`retry_after_secs`] of `retry_after_ms`: every answer carrying
/// `retryAfterMs` (429 `rate-limited`) has it, on LAP, mint, the human routes and MCP.
pub(super) fn insert_retry_after(headers: &mut axum::http::HeaderMap, retry_after_ms: u64) {
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from(retry_after_secs(retry_after_ms)),
    );
}

/// A configuration value the server refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The identity cookie signing key is shorter than 32 bytes (or empty).
    #[error("the identity cookie key must be at least 32 bytes, got {0}")]
    IdentityKeyTooShort(usize),
    /// The identity cookie name is empty or not a valid cookie name.
    #[error("invalid identity cookie name {0:?}")]
    InvalidCookieName(String),
    /// A rate-limit spec that is not `<count>/(second|minute|hour)` with a count of at least 1.
    #[error("invalid rate limit {0:?}: expected <count>/second, <count>/minute or <count>/hour with a count of at least 1")]
    InvalidRateLimit(String),
    /// A CORS origin that is not `scheme://host[:port]` (no path, no trailing slash).
    #[error(
        "invalid CORS origin {0:?}: expected scheme://host[:port], e.g. http://localhost:5173"
    )]
    InvalidCorsOrigin(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sample;

    impl WireError for Sample {
        fn status(&self) -> StatusCode {
            StatusCode::TOO_MANY_REQUESTS
        }
        fn code(&self) -> ErrorCode {
            ErrorCode::RateLimited
        }
        fn detail(&self) -> Option<String> {
            Some("d".to_owned())
        }
        fn retry_after_ms(&self) -> Option<u64> {
            Some(7)
        }
    }

    #[test]
    fn body_keys_in_contract_order() {
        assert_eq!(
            Sample.body().to_string(),
            r#"{"error":{"code":"rate-limited","detail":"d","retryAfterMs":7}}"#
        );
    }

    #[test]
    fn response_has_status_and_json_content_type() {
        let response = wire_error_response(&Sample);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE).unwrap(),
            "application/json"
        );
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
    }
}
