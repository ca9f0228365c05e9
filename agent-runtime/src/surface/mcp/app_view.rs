//! The session view, an MCP App (`docs/mcp.md` §The session view in the chat): the
//! `ui://agent/session` resource (`text/html;profile=mcp-app`, SEP-1865) a host renders in a
//! sandboxed iframe, and its tie to the tools (`_meta.ui.resourceUri`) for a client that
//! declared the extension `io.modelcontextprotocol/ui`.
//!
//! The document is built at compile time from `app_view.html`, the rendering helpers it shares
//! with the console (`surface/render.js`) and its own script (`app_view.js`): nothing is
//! loaded from elsewhere (its `_meta.ui.csp` declares no domain). At read time one JSON block
//! is added: the console URL of the reader's session, where the human decides
//! (`docs/security.md` §The session view decides nothing).
//!
//! The view only reads (`observe`, `describe_recent_actions`, `list_pending`, `query_state`,
//! `wait_for_change`, through the host); no app-only tool is declared.

use rmcp::model::{
    ClientCapabilities, MetaObject, ReadResourceResult, Resource, ResourceContents, Tool,
};
use serde_json::{json, Value};

use crate::security::{RateLimitSpec, TokenRecord};

/// The view's URI.
pub(crate) const VIEW_URI: &str = "ui://agent/session";
/// The MIME type of an MCP App's HTML.
pub(crate) const VIEW_MIME: &str = "text/html;profile=mcp-app";
/// The extension a client declares (`capabilities.extensions`) to render MCP Apps.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// Where the session block goes.
const CONFIG_MARKER: &str = "<!--agent-config-->";

/// The document: markup and style, the shared rendering helpers, the view's script.
const VIEW_HTML: &str = concat!(
    include_str!("app_view.html"),
    include_str!("../render.js"),
    include_str!("app_view.js"),
    "</script>\n</body>\n</html>\n"
);

/// The tools whose results a host may show in the view: the ones that read or change the
/// session the view shows (`observe`, `send_message`, `wait_for_change`, the action tools).
pub(crate) fn shows(tool: &str) -> bool {
    matches!(tool, "observe" | "send_message" | "wait_for_change") || tool.starts_with("do_")
}

/// Whether a client with `capabilities` renders MCP Apps: it declared the extension and, when
/// it names the MIME types it renders, ours among them.
pub(crate) fn declared(capabilities: Option<&ClientCapabilities>) -> bool {
    let Some(settings) = capabilities
        .and_then(|c| c.extensions.as_ref())
        .and_then(|e| e.get(EXTENSION))
    else {
        return false;
    };
    match settings.get("mimeTypes") {
        None => true,
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some(VIEW_MIME)),
        Some(_) => false,
    }
}

/// Ties the tools the view shows to it (`_meta.ui.resourceUri`), leaving any other `_meta`.
pub(crate) fn tie(tools: &mut [Tool]) {
    for tool in tools.iter_mut().filter(|t| shows(&t.name)) {
        let meta = tool.meta.get_or_insert_with(MetaObject::new);
        meta.0
            .insert("ui".into(), json!({ "resourceUri": VIEW_URI }));
    }
}

/// `_meta.ui` of the view: no external origin (`csp` empty), a border from the host.
fn ui_meta() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0
        .insert("ui".into(), json!({ "csp": {}, "prefersBorder": true }));
    meta
}

/// The view as `resources/list` declares it.
pub(crate) fn resource() -> Resource {
    let mut resource = Resource::new(VIEW_URI, "session-view")
        .with_title("The session the agent drives")
        .with_description(
            "An MCP App (SEP-1865): the app's state as the agent sees it, its last commits, \
             pending confirmations and running work, updated live.",
        );
    resource.mime_type = Some(VIEW_MIME.into());
    resource.meta = Some(ui_meta());
    resource
}

/// The console URL of `record`'s session: the origin the token was minted from, the session
/// in the fragment (the console opens it; the human's identity cookie decides there).
fn console_url(origin: &str, session: &str) -> Option<String> {
    let origin = origin.trim_end_matches('/');
    let web = origin.starts_with("http://") || origin.starts_with("https://");
    (web && !origin.contains(['#', '?', ' ', '"', '<', '>', '\\']))
        .then(|| format!("{origin}/agent/console#{session}"))
}

/// How many calls a minute the view may make: a third of the token's rate limit (its calls
/// take the agent's bucket), at least one.
pub(crate) fn calls_per_minute(rate: &RateLimitSpec) -> u64 {
    let window_ms = rate.window().as_millis().max(1);
    let per_minute = u128::from(rate.count()) * 60_000 / window_ms;
    u64::try_from(per_minute / 3).unwrap_or(u64::MAX).max(1)
}

/// The document for a reader whose token verified as `record` (`None`: not bound, or no
/// longer valid: the view then says so from its first call), its calls held to `rate`'s share.
pub(crate) fn document(record: Option<&TokenRecord>, rate: &RateLimitSpec) -> String {
    let console = record.and_then(|r| console_url(&r.origin, &r.session_id));
    with_config(console, calls_per_minute(rate))
}

/// The document with `console` and `calls_per_minute` in its session block.
fn with_config(console: Option<String>, calls_per_minute: u64) -> String {
    let config = json!({ "console": console, "callsPerMinute": calls_per_minute });
    // `<` escaped: the block cannot end its script element.
    let block = format!(
        "<script type=\"application/json\" id=\"agent-config\">{}</script>",
        config.to_string().replace('<', "\\u003c")
    );
    VIEW_HTML.replacen(CONFIG_MARKER, &block, 1)
}

/// The `resources/read` answer of the view: private (it names the reader's session), fresh
/// for a minute.
pub(crate) fn contents(text: String) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: VIEW_URI.to_string(),
        mime_type: Some(VIEW_MIME.into()),
        text,
        meta: Some(ui_meta()),
    }])
    .with_ttl_ms(60_000)
    .with_cache_scope(rmcp::model::CacheScope::Private)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(value: Value) -> ClientCapabilities {
        serde_json::from_value(value).expect("capabilities")
    }

    /// The most bytes the document may take (before its session block).
    const VIEW_BUDGET_BYTES: usize = 32 * 1024;

    #[test]
    fn the_document_is_whole_and_within_its_budget() {
        assert!(
            VIEW_HTML.len() <= VIEW_BUDGET_BYTES,
            "{} bytes",
            VIEW_HTML.len()
        );
        assert!(VIEW_HTML.starts_with("<!DOCTYPE html>"));
        assert_eq!(VIEW_HTML.matches(CONFIG_MARKER).count(), 1);
        // Nothing loaded from elsewhere.
        for external in ["src=\"http", "href=\"http", "@import", "url(http"] {
            assert!(!VIEW_HTML.contains(external), "{external}");
        }
    }

    #[test]
    fn the_extension_is_read_from_the_capabilities() {
        assert!(!declared(None));
        assert!(!declared(Some(&caps(json!({})))));
        assert!(declared(Some(&caps(
            json!({"extensions": {EXTENSION: {"mimeTypes": [VIEW_MIME]}}})
        ))));
        assert!(declared(Some(&caps(
            json!({"extensions": {EXTENSION: {}}})
        ))));
        assert!(!declared(Some(&caps(
            json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}})
        ))));
        assert!(!declared(Some(&caps(
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        ))));
    }

    #[test]
    fn the_session_block_cannot_close_the_script() {
        let url = console_url(
            "http://a.example:8787",
            "s</script><img src=x onerror=alert(1)>",
        );
        let doc = with_config(url, 10);
        assert!(doc.contains("http://a.example:8787/agent/console#s\\u003c/script>"));
        assert!(!doc.contains("#s</script>"));
        assert_eq!(console_url("javascript:alert(1)", "s"), None);
        assert_eq!(console_url("https://a.example\"><x", "s"), None);
        assert!(with_config(None, 10).contains(r#"{"console":null,"callsPerMinute":10}"#));
    }

    #[test]
    fn the_view_takes_a_third_of_the_rate_limit() {
        let rate = |s: &str| s.parse::<RateLimitSpec>().expect("a spec");
        assert_eq!(calls_per_minute(&rate("30/minute")), 10);
        assert_eq!(calls_per_minute(&rate("5/second")), 100);
        assert_eq!(calls_per_minute(&rate("2/minute")), 1);
        assert_eq!(calls_per_minute(&rate("60/hour")), 1);
    }
}
