//! A finished answer of an operation: status, JSON body and extra headers, kept as bytes so an
//! idempotent repeat can replay it exactly and every surface can use it as it is (LAP sends
//! it, MCP puts it in a tool result).

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::idempotency::StoredAnswer;
use crate::ops::error::ApiError;

/// The header that marks a replayed idempotent answer.
const REPLAYED: &str = "idempotent-replayed";

/// A finished answer.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: StatusCode,
    body: String,
    headers: Vec<(String, String)>,
}

impl Reply {
    /// A 200 with `body` (JSON text).
    pub(crate) fn ok(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            body,
            headers: Vec::new(),
        }
    }

    /// The answer of an error.
    pub(crate) fn from_error(e: &ApiError) -> Reply {
        let headers = e
            .headers()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Reply {
            status: e.status(),
            body: e.body().to_string(),
            headers,
        }
    }

    /// The status.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body.
    #[cfg(feature = "mcp")]
    pub(crate) fn body(&self) -> &str {
        &self.body
    }

    /// The JSON body, owned.
    #[cfg(feature = "mcp")]
    pub(crate) fn into_body(self) -> String {
        self.body
    }

    /// The same answer marked as a replay (`idempotent-replayed: true`).
    pub(crate) fn replayed(mut self) -> Reply {
        self.headers
            .push((REPLAYED.to_string(), "true".to_string()));
        self
    }

    /// What the idempotency record keeps.
    pub(crate) fn into_stored(self) -> StoredAnswer {
        StoredAnswer {
            status: self.status,
            body: self.body,
            headers: self.headers,
        }
    }

    /// A stored answer, as it was.
    pub(crate) fn from_stored(s: StoredAnswer) -> Reply {
        Reply {
            status: s.status,
            body: s.body,
            headers: s.headers,
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (k, v) in self.headers {
            if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
                headers.insert(k, v);
            }
        }
        response
    }
}
