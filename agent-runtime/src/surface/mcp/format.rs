//! Result formatting (`docs/lap.md` §7.2): success and failure results, the failure text of a
//! forwarded call, the schema-change note, and the texts shown when nothing is connected.

use crate::ops::ApiError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// A forwarded tool called without a binding, on the app server.
pub(crate) const NOT_CONNECTED_SERVER: &str = "Not connected — ask the user to copy the token from the app connect panel and call connect_session with it.";

/// A forwarded tool called without a binding, in the bridge.
#[cfg_attr(not(feature = "bridge"), allow(dead_code))] // the bridge's, declared beside the server's
pub(crate) const NOT_CONNECTED_BRIDGE: &str = "Not connected — ask the user for the app's LAP URL and an agent token, then call connect_session with both (or use the connect prompt).";

/// `connect_session {token}` on the server with an unknown, expired or idle token.
pub(crate) const TOKEN_INVALID: &str =
    "Token is invalid or expired. Ask the user to copy a fresh token from the app.";

/// `status=<status> code=<code>` plus ` — <detail>` when there is one: the status as
/// answered (`0` for `network`, a request that got no answer), the code as the body names it.
pub(crate) fn summary(error: &ApiError) -> String {
    let mut s = format!(
        "status={} code={}",
        error.answered_status(),
        error.code_text()
    );
    if let Some(d) = error.detail() {
        s.push_str(" — ");
        s.push_str(d);
    }
    s
}

/// `<tool> (<lapPath>) failed: status=<s> code=<c>[ — <detail>]`.
pub(crate) fn forwarded_failure(tool: &str, lap_path: &str, error: &ApiError) -> String {
    format!("{tool} ({lap_path}) failed: {}", summary(error))
}

/// `connect_session failed: observe failed: status=<s> code=<c>[ — <detail>]`.
pub(crate) fn connect_failure(error: &ApiError) -> String {
    format!("connect_session failed: observe failed: {}", summary(error))
}

/// The note added to an `observe` result when the schema hash changed.
pub(crate) fn schema_changed_note(old: &str, new: &str) -> String {
    format!(
        "App schema changed (was {old}, now {new}). Descriptions, actions and examples read before this are stale; use the ones in this result."
    )
}

/// A success result: the body as `structuredContent` and its JSON as text.
pub(crate) fn success(body: Value) -> CallToolResult {
    let text = body.to_string();
    success_with_text(body, text)
}

/// A success result whose text (the JSON of `body`) is already at hand.
pub(crate) fn success_with_text(body: Value, text: String) -> CallToolResult {
    let mut result = CallToolResult::default();
    result.content = vec![ContentBlock::text(text)];
    result.structured_content = Some(body);
    result
}

/// A failure result: the message as text, `isError: true`.
pub(crate) fn failure(message: impl Into<String>) -> CallToolResult {
    let mut result = CallToolResult::default();
    result.content = vec![ContentBlock::text(message.into())];
    result.is_error = Some(true);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failure_text_reads_code_and_detail() {
        let a = ApiError::answered(403, &json!({"error":{"code":"revoked"}}));
        #[cfg(feature = "bridge")]
        assert!(crate::ops::from_http(403, br#"{"error":{"code":"revoked"}}"#).is_err());
        assert_eq!(
            forwarded_failure("get_state", "/state", &a),
            "get_state (/state) failed: status=403 code=revoked"
        );
        let a = ApiError::answered(
            400,
            &json!({"code":"invalid","detail":"path must be a string"}),
        );
        assert_eq!(
            summary(&a),
            "status=400 code=invalid — path must be a string"
        );
        let a = ApiError::answered(502, &Value::Null);
        assert_eq!(summary(&a), "status=502 code=502");
        let a = ApiError::new(tea_agent_schema::protocol::ErrorCode::Network)
            .with_detail("request to /message timed out after 7000ms");
        assert_eq!(
            summary(&a),
            "status=0 code=network — request to /message timed out after 7000ms"
        );
        assert_eq!(
            connect_failure(&ApiError::answered(
                503,
                &json!({"error":{"code":"paused","detail":"closed"}})
            )),
            "connect_session failed: observe failed: status=503 code=paused — closed"
        );
        #[cfg(feature = "bridge")]
        assert!(crate::ops::from_http(204, b"").is_ok());
        // An error made in this process: its code's status, a relayed code as it came.
        assert_eq!(summary(&ApiError::revoked()), "status=403 code=revoked");
    }

    #[test]
    fn results_have_the_spec_shape() {
        let ok = serde_json::to_value(success(json!({"a":1}))).unwrap();
        assert_eq!(ok["structuredContent"], json!({"a":1}));
        assert_eq!(ok["content"], json!([{"type":"text","text":"{\"a\":1}"}]));
        assert!(ok.get("isError").is_none());
        let err = serde_json::to_value(failure("boom")).unwrap();
        assert_eq!(err["isError"], true);
        assert_eq!(err["content"][0]["text"], "boom");
        assert!(err.get("structuredContent").is_none());
    }

    #[test]
    fn schema_note_names_both_hashes() {
        let n = schema_changed_note("aaa", "bbb");
        assert!(n.contains("was aaa, now bbb") && n.contains("stale"));
    }
}
