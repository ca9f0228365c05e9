//! The one error type of the operation core and the HTTP surfaces: an [`ErrorCode`] (which
//! knows its status, `docs/lap.md` §10) plus what the body carries. Every error body is the
//! protocol's [`ErrorResponse`], serialized from here; the OpenAPI document describes the same
//! type.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tea_agent_schema::protocol::{ErrorCode, ErrorDetail, ErrorResponse};

use crate::config::OverBudget;
use crate::security::{
    retry_after_secs, AuthError, CrossOriginRefused, LifecycleError, RateLimited, StoreError,
};

/// An error answer `{"error":{"code","reconnect"?,"reason"?,"detail"?,"retryAfterMs"?}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    code: ErrorCode,
    /// The code as it was answered elsewhere, sent instead of `code`'s: a paired app's
    /// (`rpc-error`), or a LAP server's the bridge read (its status when it named none).
    relayed_code: Option<String>,
    detail: Option<String>,
    retry_after_ms: Option<u64>,
    reconnect: Option<&'static str>,
    /// Why a token lapsed (`expired`, `idle`) on a 401; which refusal of an undo.
    reason: Option<&'static str>,
    /// `Retry-After` (seconds) without `retryAfterMs` in the body (a paired session's 503).
    retry_after: Option<u64>,
    /// The status an HTTP answer came with, when it was read back (the bridge's edge, a
    /// stored answer replayed), instead of the code's.
    answered_status: Option<u16>,
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
            reason: None,
            retry_after: None,
            answered_status: None,
        }
    }

    /// The error an HTTP answer with `status` and the JSON `body` carries (the bridge's
    /// edge, a stored answer replayed): its code is `error.code`, a bare `code`, else the
    /// status number; its detail `error.detail`, a bare-string `error` or a bare `detail`.
    #[cfg(feature = "mcp")]
    pub(crate) fn answered(status: u16, body: &Value) -> Self {
        fn text_of(v: &Value) -> String {
            match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }
        }
        let error = body.get("error").filter(|e| e.is_object());
        let code = error
            .and_then(|e| e.get("code"))
            .or_else(|| body.get("code"))
            .filter(|c| !c.is_null())
            .map_or_else(|| status.to_string(), text_of);
        let detail = match body.get("error") {
            Some(Value::Object(e)) => e.get("detail"),
            Some(s @ Value::String(_)) => Some(s),
            _ => body.get("detail"),
        };
        let known = serde_json::from_value::<ErrorCode>(Value::String(code.clone())).ok();
        ApiError {
            relayed_code: known.is_none().then_some(code),
            detail: detail.filter(|d| !d.is_null()).map(text_of),
            retry_after_ms: error
                .and_then(|e| e.get("retryAfterMs"))
                .and_then(Value::as_u64),
            answered_status: Some(status),
            ..Self::new(known.unwrap_or(ErrorCode::Internal))
        }
    }

    /// Adds a detail.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds a `reason` (which refusal of several under one code).
    pub(crate) fn with_reason(mut self, reason: &'static str) -> Self {
        self.reason = Some(reason);
        self
    }

    /// Adds `retryAfterMs` (and the `Retry-After` header).
    pub(crate) fn with_retry_after_ms(mut self, ms: Option<u64>) -> Self {
        self.retry_after_ms = ms;
        self
    }

    /// A 503 `paused` with the `reconnect` hint (`X-LLui-Reconnect`) and, when given, a
    /// `Retry-After` in seconds.
    pub(crate) fn paused_with(reconnect: &'static str, retry_after: Option<u64>) -> Self {
        ApiError {
            reconnect: Some(reconnect),
            retry_after,
            ..Self::new(ErrorCode::Paused)
        }
    }

    /// A 503 `app-not-reading`: a paired app is connected but does not read its socket (its
    /// outbound queue is full), with `Retry-After` in seconds.
    #[cfg(feature = "pairing")]
    pub(crate) fn not_reading(retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(ErrorCode::AppNotReading).with_detail(
                "the paired app is connected but is not reading its socket: its outbound queue is full",
            )
        }
    }

    /// A 503 `shutting-down` with `Retry-After: 1` (`docs/operations.md` §Shutdown): a long
    /// poll ended, or a mint or an MCP session refused, because the server is stopping.
    pub(crate) fn shutting_down() -> Self {
        ApiError {
            retry_after: Some(1),
            ..Self::new(ErrorCode::ShuttingDown).with_detail(
                "the server is shutting down: call again in a second (another instance, or this one restarted, answers)",
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

    /// Whether this is an app's `rpc-error` with `code`.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) fn is_relayed(&self, code: &str) -> bool {
        self.relayed_code.as_deref() == Some(code)
    }

    /// The detail, taken.
    #[cfg_attr(not(feature = "pairing"), allow(dead_code))]
    pub(crate) fn into_detail(self) -> Option<String> {
        self.detail
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

    /// 403 `forbidden` for a credential without the scope `spec` needs (an OAuth grant of
    /// `app:read` asked to dispatch): the detail starts with OAuth's `insufficient_scope` and
    /// names the scope to ask for (`docs/authorization.md` §Scopes).
    pub(crate) fn insufficient_scope(spec: &super::spec::OperationSpec) -> Self {
        Self::forbidden(format!(
            "insufficient_scope: {} needs the scope {}, which this token was not granted",
            spec.tool,
            spec.scope.as_str()
        ))
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

    /// The code as the body names it (a relayed code, or the code's wire string).
    #[cfg(feature = "mcp")]
    pub(crate) fn code_text(&self) -> &str {
        self.relayed_code.as_deref().unwrap_or(self.code.as_str())
    }

    /// The status number as answered: an HTTP answer's own when it was read back, else the
    /// code's (`0` for `network`, a request that got no answer).
    #[cfg(feature = "mcp")]
    pub(crate) fn answered_status(&self) -> u16 {
        self.answered_status.unwrap_or(self.code.status())
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
        } else if let Some(s) = self.retry_after {
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
                reason: self.reason.map(str::to_string),
                detail: self.detail.clone(),
                commits: Vec::new(),
                retry_after_ms: self.retry_after_ms,
            },
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::to_value(self.response()).unwrap_or(Value::Null)
    }
}

/// An [`ApiError`] as one replica of a fleet answers it to another (feature `fleet`,
/// `docs/pairing.md` §A fleet of replicas): every field, so the replica where the call arrived
/// answers exactly what the holder of the socket answered.
#[cfg(feature = "fleet")]
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ErrorParts {
    code: ErrorCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relayed_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reconnect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answered_status: Option<u16>,
}

/// The words a `reconnect` hint or a `reason` can be (fixed words, never caller data): a word
/// another replica sends outside them is dropped.
#[cfg(feature = "fleet")]
const KNOWN_WORDS: &[&str] = &[
    "pending",
    "expired",
    "revoked",
    "unknown",
    "idle",
    "answer-not-kept",
    "unknown-commit",
    "paired",
];

#[cfg(feature = "fleet")]
fn known_word(word: Option<String>) -> Option<&'static str> {
    let word = word?;
    KNOWN_WORDS.iter().copied().find(|w| *w == word)
}

#[cfg(feature = "fleet")]
impl ApiError {
    /// The error's parts, for another replica.
    pub(crate) fn to_parts(&self) -> ErrorParts {
        ErrorParts {
            code: self.code,
            relayed_code: self.relayed_code.clone(),
            detail: self.detail.clone(),
            retry_after_ms: self.retry_after_ms,
            reconnect: self.reconnect.map(str::to_owned),
            reason: self.reason.map(str::to_owned),
            retry_after: self.retry_after,
            answered_status: self.answered_status,
        }
    }

    /// The error another replica answered.
    pub(crate) fn from_parts(parts: ErrorParts) -> Self {
        ApiError {
            code: parts.code,
            relayed_code: parts.relayed_code,
            detail: parts.detail,
            retry_after_ms: parts.retry_after_ms,
            reconnect: known_word(parts.reconnect),
            reason: known_word(parts.reason),
            retry_after: parts.retry_after,
            answered_status: parts.answered_status,
        }
    }
}

/// A refused bearer: 401 `auth-failed` (with `reason` and a detail when the token lapsed),
/// 403 `revoked`, 500 `internal` when the store failed.
impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Lapsed(lapse) => ApiError {
                reason: Some(lapse.as_str()),
                ..ApiError::new(e.code()).with_detail(lapse.detail())
            },
            _ => ApiError::new(e.code()),
        }
    }
}

/// A life-cycle step that did not happen: 403 `revoked`, 401 `auth-failed`, 409 `conflict`, or
/// 500 `internal` with a fixed detail when the store failed.
impl From<LifecycleError> for ApiError {
    fn from(e: LifecycleError) -> Self {
        ApiError {
            detail: e.detail(),
            ..ApiError::new(e.code())
        }
    }
}

/// A denied call: 429 `rate-limited` with `retryAfterMs` (and `Retry-After`).
impl From<RateLimited> for ApiError {
    fn from(e: RateLimited) -> Self {
        ApiError::new(ErrorCode::RateLimited).with_retry_after_ms(Some(e.retry_after_ms))
    }
}

/// A refused call: 429 `rate-limited` when the bucket is empty; 500 `internal`, saying so,
/// when a fleet's shared bucket could not be read (fail closed; the store's reason is logged).
impl From<crate::security::Refusal> for ApiError {
    fn from(refusal: crate::security::Refusal) -> Self {
        match refusal {
            crate::security::Refusal::Limited(limited) => limited.into(),
            crate::security::Refusal::Unavailable(e) => {
                tracing::error!(target: "tea_agent_runtime::store", "the fleet's rate limit could not be read: {e}");
                ApiError::internal(
                    "the rate limit could not be checked: the store shared by the replicas did \
                     not answer; the call was refused",
                )
            }
        }
    }
}

/// A refused cross-origin POST: 403 `forbidden`.
impl From<CrossOriginRefused> for ApiError {
    fn from(e: CrossOriginRefused) -> Self {
        ApiError::new(e.code()).with_detail(e.detail())
    }
}

/// A store failure under a call: 500 `internal` with a fixed detail (the database's text is
/// logged for the operator, never answered).
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        LifecycleError::Store(e).into()
    }
}

// The refusals of the security layer answered as they are, through `ApiError`.
impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

impl IntoResponse for RateLimited {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

impl IntoResponse for CrossOriginRefused {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
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
    use crate::security::Lapse;

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

    /// The refusals of the security layer, answered through `ApiError` (moved from
    /// `security/{error,tokens,rate_limit,origin}.rs` with `WireError`).
    #[test]
    fn security_refusals_answer_their_codes() {
        let e = ApiError::new(ErrorCode::RateLimited)
            .with_detail("d")
            .with_retry_after_ms(Some(7));
        assert_eq!(
            e.body().to_string(),
            r#"{"error":{"code":"rate-limited","detail":"d","retryAfterMs":7}}"#
        );
        let response = e.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE).unwrap(),
            "application/json"
        );
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");

        let auth_failed = ApiError::from(AuthError::AuthFailed);
        assert_eq!(auth_failed.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            auth_failed.body().to_string(),
            r#"{"error":{"code":"auth-failed"}}"#
        );
        // A lapsed token says why: `expired` or `idle`.
        for (lapse, reason) in [(Lapse::Expired, "expired"), (Lapse::Idle, "idle")] {
            let lapsed = ApiError::from(AuthError::Lapsed(lapse));
            assert_eq!(lapsed.status(), StatusCode::UNAUTHORIZED);
            let body = lapsed.body();
            assert_eq!(body["error"]["code"], "auth-failed");
            assert_eq!(body["error"]["reason"], reason);
            assert_eq!(body["error"]["detail"], lapse.detail());
        }
        let revoked = ApiError::from(AuthError::Revoked);
        assert_eq!(revoked.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            revoked.body().to_string(),
            r#"{"error":{"code":"revoked"}}"#
        );
        assert_eq!(
            ApiError::from(AuthError::StoreFailed).status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );

        let denied = ApiError::from(RateLimited {
            retry_after_ms: 1234,
        });
        assert_eq!(denied.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            denied.body().to_string(),
            r#"{"error":{"code":"rate-limited","retryAfterMs":1234}}"#
        );

        let refused = ApiError::from(CrossOriginRefused);
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            refused.body().to_string(),
            r#"{"error":{"code":"forbidden","detail":"cross-origin request refused"}}"#
        );
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
