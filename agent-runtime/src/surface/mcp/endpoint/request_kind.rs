//! What a request to `/agent/mcp` is, as far as admission cares (`docs/mcp.md` §Admission,
//! §Two generations): read from its headers and a peek at its JSON-RPC body, without building
//! the message (rmcp parses it whole after).

use axum::http::{header, HeaderMap};
use serde::Deserialize;

/// The little admission reads of a POST's JSON-RPC body, without building the message (rmcp
/// parses it whole after): its method, whether it is a request, the revision in its `_meta`.
#[derive(Deserialize)]
pub(super) struct Peek<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    params: Option<PeekParams<'a>>,
}

#[derive(Deserialize)]
struct PeekParams<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<PeekMeta<'a>>,
    /// An `initialize`'s requested revision.
    #[serde(rename = "protocolVersion", borrow, default)]
    protocol_version: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Deserialize)]
struct PeekMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<std::borrow::Cow<'a, str>>,
}

impl Peek<'_> {
    pub(super) fn version(&self) -> Option<&str> {
        self.params.as_ref()?.meta.as_ref()?.version.as_deref()
    }

    /// The revision an `initialize` asks for (`params.protocolVersion`).
    pub(super) fn requested_version(&self) -> Option<&str> {
        self.params.as_ref()?.protocol_version.as_deref()
    }

    pub(super) fn kind(&self) -> Kind {
        match (self.id.is_some(), self.method.as_deref()) {
            (true, Some("initialize")) => Kind::Initialize,
            (true, Some("server/discover")) => Kind::Discover,
            (true, Some("tools/call")) => Kind::ToolCall,
            (true, Some("subscriptions/listen")) => Kind::Listen,
            _ => Kind::Other,
        }
    }
}

/// What the JSON-RPC body of a POST is, as far as admission cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Initialize,
    Discover,
    /// A `tools/call` request that does not read as a plain one (`fast_call::PlainCall`,
    /// which the admission layer reads first): it goes to rmcp as any other request.
    ToolCall,
    /// A 2026-07-28 `subscriptions/listen` request: a stream held open, counted per token.
    Listen,
    Other,
}

/// The first revision without sessions: its requests carry their version in `_meta` and the
/// `MCP-Protocol-Version` header, and need no `initialize`.
const FIRST_STATELESS_REVISION: &str = "2026-07-28";

/// Revisions are dates, so they compare as strings.
pub(super) fn is_stateless_revision(version: &str) -> bool {
    version >= FIRST_STATELESS_REVISION
}

pub(super) fn header_names_stateless_revision(headers: &HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_stateless_revision)
}

pub(super) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// The media types a header lists (parameters dropped, trimmed), as sent.
fn media_types(headers: &HeaderMap, name: header::HeaderName) -> impl Iterator<Item = &str> {
    headers
        .get_all(name)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|entry| entry.split(';').next().unwrap_or_default().trim())
}

pub(super) fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for media in media_types(headers, header::ACCEPT) {
        json |= media.eq_ignore_ascii_case("application/json");
        sse |= media.eq_ignore_ascii_case("text/event-stream");
    }
    json && sse
}

pub(super) fn is_json(headers: &HeaderMap) -> bool {
    media_types(headers, header::CONTENT_TYPE)
        .next()
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn media_type_checks() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream;q=0.9"),
        );
        assert!(accepts_json_and_sse(&h));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!accepts_json_and_sse(&h));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Application/JSON; charset=utf-8"),
        );
        assert!(is_json(&h));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert!(!is_json(&h));
    }
}
