//! The session as MCP resources (`docs/mcp.md` §Resources): `agent://state` (the redacted
//! state, as `get_state` answers it) and `agent://describe` (the app description, as
//! `describe_app` answers it), with the caching hints of MCP 2026-07-28; beside them the
//! session view `ui://agent/session` ([`super::app_view`]).

use rmcp::model::{
    CacheScope, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents,
};
use rmcp::ErrorData;
use serde_json::json;

use crate::ops::Operation;

/// The session's state.
pub(crate) const STATE_URI: &str = "agent://state";
/// The app description.
pub(crate) const DESCRIBE_URI: &str = "agent://describe";

/// How long a list that is the same for every client stays fresh (1 hour).
pub(crate) const STATIC_TTL_MS: u64 = 60 * 60 * 1000;

/// The operation that reads `uri`.
pub(crate) fn operation(uri: &str) -> Result<Operation, ErrorData> {
    match uri {
        STATE_URI => Ok(Operation::State),
        DESCRIBE_URI => Ok(Operation::Describe),
        // SEP-2164: an unknown resource is invalid params, with the URI in `data`.
        _ => Err(ErrorData::invalid_params(
            format!("Resource not found: {uri}"),
            Some(json!({ "uri": uri })),
        )),
    }
}

/// `resources/list`: the same three resources for everyone (the view too: a host that did not
/// declare the extension may read it anyway, it is a resource).
pub(crate) fn list() -> ListResourcesResult {
    let resource = |uri: &str, name: &str, description: &str| -> Resource {
        let mut resource = Resource::new(uri, name).with_description(description);
        resource.mime_type = Some("application/json".into());
        resource
    };
    ListResourcesResult::with_all_items(vec![
        resource(
            DESCRIBE_URI,
            "describe",
            "The app description: name, version, message schemas, annotations, docs, schemaHash.",
        ),
        resource(
            STATE_URI,
            "state",
            "The app's state as the agent sees it (redacted); updated after every commit.",
        ),
        super::app_view::resource(),
    ])
    .with_ttl_ms(STATIC_TTL_MS)
    .with_cache_scope(CacheScope::Public)
}

/// `resources/templates/list`: none.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(Vec::new())
        .with_ttl_ms(STATIC_TTL_MS)
        .with_cache_scope(CacheScope::Public)
}

/// `agent://describe` read without a token: the hosted app's description, the same for every
/// caller (a bound token reads its own session's, which differs for a paired app).
pub(crate) fn shared_description(text: String) -> ReadResourceResult {
    json_contents(DESCRIBE_URI, text)
        .with_ttl_ms(STATIC_TTL_MS)
        .with_cache_scope(CacheScope::Public)
}

/// The `resources/read` answer of `uri` with the operation's JSON `text`: never shared
/// between tokens; the state is fresh only until the next commit.
pub(crate) fn contents(uri: &str, text: String) -> ReadResourceResult {
    let ttl = if uri == DESCRIBE_URI { 60_000 } else { 0 };
    json_contents(uri, text)
        .with_ttl_ms(ttl)
        .with_cache_scope(CacheScope::Private)
}

/// One JSON text content of `uri`.
fn json_contents(uri: &str, text: String) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some("application/json".into()),
        text,
        meta: None,
    }])
}
