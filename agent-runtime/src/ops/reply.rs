//! A finished answer of an operation, typed: a [`Success`] (the operation's response and its
//! JSON text, serialized once) or an [`ApiError`] with its `ErrorCode`, plus the headers a
//! replay adds. Each surface renders it without reading it back: LAP as an HTTP response
//! ([`IntoResponse`]), MCP as a tool result from its [`Outcome`] ([`Reply::into_outcome`]),
//! and the bridge converts an HTTP answer into the same [`Outcome`] at its edge
//! (`from_http`, feature `bridge`). An idempotent answer is kept as bytes ([`StoredAnswer`]) so that a repeat
//! replays it exactly; only such a replay starts from bytes.

use std::fmt;
use std::sync::Arc;

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

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

/// What an operation answered, as a surface consumes it: its success or its error.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) type Outcome = Result<Success, ApiError>;

/// A response as its operation made it (a hosted session's typed response, a paired app's
/// answer as it came, a value the bridge read), turned into a `Value` only when a surface needs
/// one (an MCP `structuredContent`).
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
trait Payload: Send + Sync {
    fn to_value(&self) -> serde_json::Result<Value>;
}

impl<T: Serialize + Send + Sync> Payload for T {
    fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::to_value(self)
    }
}

/// Where a success's value comes from.
#[derive(Clone)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
enum Source {
    /// The response itself.
    Response(Arc<dyn Payload>),
    /// Only its text: a stored answer, replayed from its bytes.
    Stored,
}

/// A successful answer: the operation's response and its JSON text (the 200 body LAP sends).
#[derive(Clone)]
pub(crate) struct Success {
    text: String,
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // read by MCP
    source: Source,
    /// The text is serde_json's compact text of values made in this process (a hosted
    /// handler's answer): parsed into a `Value` and written again it gives the same bytes.
    /// `false` whenever that is not known (a relayed paired answer, a stored answer).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // read by the MCP fast path
    canonical: bool,
}

impl fmt::Debug for Success {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Success")
            .field("text", &self.text)
            .field("canonical", &self.canonical)
            .finish_non_exhaustive()
    }
}

impl Success {
    /// The success of `response`, serialized once to its text; `canonical` as
    /// [`Success::is_canonical`] says.
    pub(crate) fn of<R: Serialize + Send + Sync + 'static>(
        response: R,
        canonical: bool,
    ) -> serde_json::Result<Success> {
        Ok(Success {
            text: serde_json::to_string(&response)?,
            source: Source::Response(Arc::new(response)),
            canonical,
        })
    }

    /// A value read at an edge (the bridge's HTTP answer), its text serde_json's.
    #[cfg(feature = "bridge")]
    pub(crate) fn of_value(value: Value) -> Success {
        Success {
            text: value.to_string(),
            source: Source::Response(Arc::new(value)),
            canonical: true,
        }
    }

    /// A stored answer's body.
    fn stored(text: String) -> Success {
        Success {
            text,
            source: Source::Stored,
            // A store may give the text back reformatted.
            canonical: false,
        }
    }

    /// A success known only by its text, its value read from it (as a stored answer's).
    #[cfg(all(test, feature = "mcp"))]
    pub(crate) fn from_text(text: String) -> Success {
        Success::stored(text)
    }

    /// The JSON text.
    #[cfg(feature = "mcp")]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The JSON text, owned.
    #[cfg(any(feature = "mcp", feature = "fleet"))]
    pub(crate) fn into_text(self) -> String {
        self.text
    }

    /// Whether the text is serde_json's compact text of values made in this process, so that
    /// parsing it and writing it again changes nothing (a surface may then pass it on as it is
    /// where it would otherwise write the value).
    #[cfg(feature = "mcp")]
    pub(crate) fn is_canonical(&self) -> bool {
        self.canonical
    }

    /// The response as a `Value` (`null` if it has none) and its text. The value is made from
    /// the response, not from the text; only a stored answer's comes from its bytes.
    pub(crate) fn into_parts(self) -> (Value, String) {
        let value = match &self.source {
            Source::Response(response) => response.to_value().unwrap_or(Value::Null),
            Source::Stored => serde_json::from_str(&self.text).unwrap_or(Value::Null),
        };
        (value, self.text)
    }
}

/// What a reply answers.
#[derive(Debug, Clone)]
enum Answered {
    Success(Success),
    Error(ApiError),
    /// A stored answer that was not a success, replayed as it was.
    StoredError {
        status: StatusCode,
        body: String,
    },
}

/// A finished answer: its outcome and the headers beyond it (a replay's marks; all of a
/// stored answer's).
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    answered: Answered,
    headers: Vec<(String, String)>,
}

impl Reply {
    /// A 200 answer.
    pub(crate) fn ok(success: Success) -> Reply {
        Reply {
            answered: Answered::Success(success),
            headers: Vec::new(),
        }
    }

    /// The answer of an error.
    pub(crate) fn error(e: ApiError) -> Reply {
        Reply {
            answered: Answered::Error(e),
            headers: Vec::new(),
        }
    }

    /// The status.
    pub(crate) fn status(&self) -> StatusCode {
        match &self.answered {
            Answered::Success(_) => StatusCode::OK,
            Answered::Error(e) => e.status(),
            Answered::StoredError { status, .. } => *status,
        }
    }

    /// The status and the body's JSON text, as a transcript keeps them: the success's text as
    /// it was serialized, never parsed again.
    pub(crate) fn recorded_text(&self) -> (u16, Box<str>) {
        match &self.answered {
            Answered::Success(success) => (200, success.text.as_str().into()),
            Answered::Error(e) => (e.status().as_u16(), e.body().to_string().into()),
            // The one body this process did not write as JSON itself: checked (a transcript
            // writes the text in as it is), `null` when it is not JSON.
            Answered::StoredError { status, body } => {
                let json = serde_json::from_str::<serde::de::IgnoredAny>(body).is_ok();
                (
                    status.as_u16(),
                    if json { body.as_str() } else { "null" }.into(),
                )
            }
        }
    }

    /// The status and the body as JSON, as a replay compares them (a body that is not JSON
    /// reads as `null`).
    pub(crate) fn recorded(&self) -> (u16, Value) {
        match &self.answered {
            Answered::Success(success) => (200, read_body(&success.text)),
            Answered::Error(e) => (e.status().as_u16(), e.body()),
            Answered::StoredError { status, body } => (status.as_u16(), read_body(body)),
        }
    }

    /// The outcome, for a surface that builds its own answer from it (MCP). A stored error
    /// is read back from its bytes: the one answer that only exists as bytes.
    #[cfg(feature = "mcp")]
    pub(crate) fn into_outcome(self) -> Outcome {
        match self.answered {
            Answered::Success(success) => Ok(success),
            Answered::Error(e) => Err(e),
            Answered::StoredError { status, body } => {
                let body = serde_json::from_str(&body).unwrap_or(Value::Null);
                Err(ApiError::answered(status.as_u16(), &body))
            }
        }
    }

    /// The same answer, its success replaced by `shorten` of its value when its text is over
    /// `budget` characters (LAP's `budgetChars`, `docs/mcp.md` §Answers within a budget).
    pub(crate) fn within_budget(
        self,
        budget: usize,
        shorten: impl FnOnce(Value) -> Value,
    ) -> Reply {
        let Reply { answered, headers } = self;
        let answered = match answered {
            Answered::Success(success) if success.text.len() > budget => {
                let (body, _) = success.into_parts();
                match Success::of(shorten(body), true) {
                    Ok(success) => Answered::Success(success),
                    Err(e) => Answered::Error(ApiError::internal(e.to_string())),
                }
            }
            answered => answered,
        };
        Reply { answered, headers }
    }

    /// The same answer marked as a replay (`idempotent-replayed: true`).
    pub(crate) fn replayed(mut self) -> Reply {
        self.headers
            .push((REPLAYED.to_string(), "true".to_string()));
        self
    }

    /// What the idempotency record keeps: the answer's bytes.
    pub(crate) fn into_stored(self) -> StoredAnswer {
        match self.answered {
            Answered::Success(success) => StoredAnswer {
                status: StatusCode::OK,
                body: success.text,
                headers: self.headers,
            },
            Answered::Error(e) => {
                let mut headers: Vec<(String, String)> = e
                    .headers()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
                headers.extend(self.headers);
                StoredAnswer {
                    status: e.status(),
                    body: e.body().to_string(),
                    headers,
                }
            }
            Answered::StoredError { status, body } => StoredAnswer {
                status,
                body,
                headers: self.headers,
            },
        }
    }

    /// A stored answer, as it was.
    pub(crate) fn from_stored(s: StoredAnswer) -> Reply {
        let answered = if s.status == StatusCode::OK {
            Answered::Success(Success::stored(s.body))
        } else {
            Answered::StoredError {
                status: s.status,
                body: s.body,
            }
        };
        Reply {
            answered,
            headers: s.headers,
        }
    }
}

/// A body's JSON, `null` when it is not JSON.
fn read_body(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The outcome of an HTTP answer of a LAP server (the bridge's edge): a 2xx is a success with
/// the body's value (`null` when it is not JSON), anything else the error the body names.
#[cfg(feature = "bridge")]
pub(crate) fn from_http(status: u16, body: &[u8]) -> Outcome {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        Ok(Success::of_value(body))
    } else {
        Err(ApiError::answered(status, &body))
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = match self.answered {
            Answered::Success(success) => (StatusCode::OK, success.text).into_response(),
            Answered::Error(e) => e.into_response(),
            Answered::StoredError { status, body } => (status, body).into_response(),
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use tea_agent_schema::protocol::ErrorCode;

    async fn sent(reply: Reply) -> (StatusCode, Vec<(String, String)>, String) {
        let response = reply.into_response();
        let status = response.status();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, headers, String::from_utf8(body.to_vec()).unwrap())
    }

    /// A typed answer and its stored bytes go on the wire the same, replayed or not.
    #[tokio::test]
    async fn a_stored_answer_replays_as_it_was_sent() {
        let paused = ApiError::paused_with("pending", Some(3)).with_detail("later");
        let replies = [
            Reply::ok(Success::of(serde_json::json!({"b":1,"a":[true]}), true).unwrap()),
            Reply::error(paused),
            Reply::error(ApiError::new(ErrorCode::RateLimited).with_retry_after_ms(Some(1500))),
        ];
        for reply in replies {
            let stored = Reply::from_stored(reply.clone().into_stored());
            assert_eq!(sent(reply.clone()).await, sent(stored.clone()).await);
            assert_eq!(sent(reply.replayed()).await, sent(stored.replayed()).await);
        }
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn the_outcome_keeps_the_error_and_the_response() {
        let e = ApiError::new(ErrorCode::Conflict).with_detail("taken");
        assert_eq!(Reply::error(e.clone()).into_outcome().unwrap_err(), e);
        let stored = Reply::from_stored(Reply::error(e.clone()).into_stored());
        let replayed = stored.into_outcome().unwrap_err();
        assert_eq!(
            (replayed.code(), replayed.detail()),
            (ErrorCode::Conflict, Some("taken"))
        );
        let ok = Reply::ok(Success::of(serde_json::json!({"z":1,"a":2}), true).unwrap());
        let (value, text) = ok.into_outcome().unwrap().into_parts();
        assert_eq!(text, r#"{"z":1,"a":2}"#);
        assert_eq!(value, serde_json::json!({"z":1,"a":2}));
    }
}
