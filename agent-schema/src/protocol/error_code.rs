//! The error codes of every surface (`lap.md` §10), with their wire strings in one place.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `error.code` of a refused or failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// 400: a bad body, an unknown `confirmId`, a bad `idempotencyKey`.
    Invalid,
    /// 401: bearer missing, malformed, unknown, expired or idle.
    AuthFailed,
    /// 401: a management or human route without identity.
    AuthRequired,
    /// 403: a revoked token.
    Revoked,
    /// 403: a foreign session, a cross-origin POST, a bearer on a human route.
    Forbidden,
    /// 404: an unknown confirmation or MCP session.
    NotFound,
    /// 405.
    MethodNotAllowed,
    /// 409: a decided confirmation, an `idempotencyKey` reused for another message.
    Conflict,
    /// 413: a body over the cap.
    PayloadTooLarge,
    /// 415: a human POST without JSON.
    UnsupportedMediaType,
    /// 429, with `retryAfterMs`.
    RateLimited,
    /// 500: a handler or hook failure.
    Internal,
    /// 503: the session is closed (with `reconnect`).
    Paused,
    /// 503: the host or MCP endpoint is full.
    SessionCapacity,
    /// 503: a paired app is not reading its socket (its outbound queue is full).
    AppNotReading,
    /// 503: the server is shutting down; call again (with `Retry-After`): another instance, or
    /// this one restarted, answers.
    ShuttingDown,
    /// 504: the session did not answer.
    Timeout,
    /// Client side only: the request got no answer (status 0).
    Network,
}

impl ErrorCode {
    /// The HTTP status of an answer with this code (`lap.md` §10); `0` for
    /// [`ErrorCode::Network`], which no server sends.
    pub const fn status(self) -> u16 {
        match self {
            ErrorCode::Invalid => 400,
            ErrorCode::AuthFailed | ErrorCode::AuthRequired => 401,
            ErrorCode::Revoked | ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::RateLimited => 429,
            ErrorCode::Internal => 500,
            ErrorCode::Paused
            | ErrorCode::SessionCapacity
            | ErrorCode::AppNotReading
            | ErrorCode::ShuttingDown => 503,
            ErrorCode::Timeout => 504,
            ErrorCode::Network => 0,
        }
    }

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Invalid => "invalid",
            ErrorCode::AuthFailed => "auth-failed",
            ErrorCode::AuthRequired => "auth-required",
            ErrorCode::Revoked => "revoked",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not-found",
            ErrorCode::MethodNotAllowed => "method-not-allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload-too-large",
            ErrorCode::UnsupportedMediaType => "unsupported-media-type",
            ErrorCode::RateLimited => "rate-limited",
            ErrorCode::Internal => "internal",
            ErrorCode::Paused => "paused",
            ErrorCode::SessionCapacity => "session-capacity",
            ErrorCode::AppNotReading => "app-not-reading",
            ErrorCode::ShuttingDown => "shutting-down",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Network => "network",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_strings_match_serde() {
        for code in [
            ErrorCode::AuthFailed,
            ErrorCode::PayloadTooLarge,
            ErrorCode::SessionCapacity,
            ErrorCode::AppNotReading,
            ErrorCode::ShuttingDown,
        ] {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }
}
