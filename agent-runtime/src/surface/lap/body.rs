//! Request bodies: the 1 MiB cap, and the JSON reading every route shares (lenient: what does
//! not parse reads as `null`).

use axum::body::Body;
use axum::http::{header, HeaderMap};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use crate::ops::error::ApiError;

pub(crate) use crate::config::MAX_BODY_BYTES;

/// 413 when the declared `Content-Length` is above the cap.
pub(super) fn check_content_length(headers: &HeaderMap) -> Result<(), ApiError> {
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
pub(super) async fn read_bytes(body: Body) -> Result<bytes::Bytes, ApiError> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::payload_too_large()),
        Err(_) => Err(ApiError::invalid("could not read the request body")),
    }
}

/// Reads the body with the cap. An empty or whitespace body, or malformed JSON, reads as
/// `null`.
pub(super) async fn read_json(body: Body) -> Result<Value, ApiError> {
    let bytes = read_bytes(body).await?;
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}
