//! A finished answer of an operation: status, JSON body and extra headers, kept as bytes so an
//! idempotent repeat can replay it exactly and every surface can use it as it is (LAP sends
//! it, MCP puts it in a tool result).

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::ops::error::ApiError;

/// The header that marks a replayed idempotent answer.
const REPLAYED: &str = "idempotent-replayed";

/// The final answer of a keyed call's first call, as its idempotency record keeps it
/// (`super::keyed`): replayed byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredAnswer {
    /// Its status.
    pub status: StatusCode,
    /// Its body bytes.
    pub body: String,
    /// Extra headers of the answer (for example `x-llui-reconnect`).
    pub headers: Vec<(String, String)>,
}

impl StoredAnswer {
    /// The bytes it holds: body and headers.
    pub(crate) fn bytes(&self) -> usize {
        self.body.len()
            + self
                .headers
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }
}

/// A finished answer.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: StatusCode,
    body: String,
    headers: Vec<(String, String)>,
    /// The body is serde_json's compact text of values made in this process (a hosted
    /// handler's answer): parsed into a `Value` and written again it gives the same bytes.
    /// `false` whenever that is not known (a relayed paired answer, a stored answer).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // read by the MCP fast path
    canonical: bool,
}

impl Reply {
    /// A 200 with `body` (JSON text), `canonical` as [`Reply::is_canonical`] says.
    pub(crate) fn ok(body: String, canonical: bool) -> Reply {
        Reply {
            status: StatusCode::OK,
            body,
            headers: Vec::new(),
            canonical,
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
            canonical: false,
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

    /// Whether the body is serde_json's compact text of values made in this process, so
    /// that parsing it and writing it again changes nothing (a surface may then pass it on as
    /// it is where it would otherwise write the parsed value).
    #[cfg(feature = "mcp")]
    pub(crate) fn is_canonical(&self) -> bool {
        self.canonical
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
            // A store may give the text back reformatted.
            canonical: false,
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
