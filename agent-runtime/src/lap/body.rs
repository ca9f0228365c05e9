//! Request bodies: the 1 MiB cap, and the lenient JSON reading every route shares.

use axum::body::Body;
use axum::http::{header, HeaderMap};
use http_body_util::{BodyExt, Limited};
use serde_json::{Map, Value};

use super::error::ApiError;

/// The body cap on every route that reads a body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// 413 when the declared `Content-Length` is above the cap.
pub fn check_content_length(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > MAX_BODY_BYTES as u64 => Err(ApiError::payload_too_large()),
        _ => Ok(()),
    }
}

/// Reads the raw body with the cap: 413 as soon as it exceeds it.
pub async fn read_bytes(body: Body) -> Result<bytes::Bytes, ApiError> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::payload_too_large()),
        Err(_) => Err(ApiError::invalid("could not read the request body")),
    }
}

/// Reads the body with the cap. An empty or whitespace body, or malformed JSON, reads as
/// `null`.
pub async fn read_json(body: Body) -> Result<Value, ApiError> {
    let bytes = read_bytes(body).await?;
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A JSON body as an object: a `null` value of a key counts as absent, and a body that is not
/// an object reads as an object with no keys.
#[derive(Debug, Clone, Default)]
pub struct Fields(Map<String, Value>);

impl Fields {
    /// Normalizes a parsed body.
    pub fn from_body(body: Value) -> Self {
        match body {
            Value::Object(m) => Fields(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
            _ => Fields(Map::new()),
        }
    }

    /// The value of `key` (never `null`).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// `key` as a string: `Ok(None)` when absent, `Err(())` when present and not a string.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, ()> {
        match self.0.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(()),
        }
    }

    /// `key` as a string, only when it is one.
    pub fn str_or_none(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// A `timeoutMs`-like number: floored and clamped to `[0, max]`; anything else → `default`.
    pub fn millis(&self, key: &str, default: u64, max: u64) -> u64 {
        match self.0.get(key).and_then(Value::as_f64) {
            Some(n) if n.is_finite() => n.floor().clamp(0.0, max as f64) as u64,
            _ => default,
        }
    }

    /// Whether `key` is JSON `true`.
    pub fn is_true(&self, key: &str) -> bool {
        self.0.get(key) == Some(&Value::Bool(true))
    }
}
