//! Result formatting (`docs/lap.md` §7.2): success and failure results, the failure text of a
//! forwarded call, the schema-change note, and the texts shown when nothing is connected.

use crate::ops::ApiError;
use agent_schema::protocol::ErrorCode;
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

/// The answer of one LAP request as a forwarder saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LapAnswer {
    /// HTTP status; 0 when the request itself failed (code `network`).
    pub status: u16,
    /// The parsed JSON body (`null` when the body was not JSON).
    pub body: Value,
    /// Whether the call counts as failed.
    pub failed: bool,
    /// The body as the operation serialized it, when it came as JSON text: a result that
    /// passes the body on unchanged uses it as its text instead of serializing `body` again.
    pub text: Option<String>,
}

impl LapAnswer {
    /// An HTTP answer: failed unless the status is 2xx.
    pub(crate) fn new(status: u16, body: Value) -> Self {
        LapAnswer {
            status,
            body,
            failed: !(200..300).contains(&status),
            text: None,
        }
    }

    /// A request that never got an answer: status 0, code `network`.
    #[cfg_attr(not(feature = "bridge"), allow(dead_code))] // the bridge's, declared beside the server's
    pub(crate) fn network(detail: impl Into<String>) -> Self {
        LapAnswer {
            status: 0,
            body: ApiError::new(ErrorCode::Network).with_detail(detail).body(),
            failed: true,
            text: None,
        }
    }

    /// The error code: `error.code`, or a bare `code`, else the status number.
    pub(crate) fn code(&self) -> String {
        let error = self.body.get("error").filter(|e| e.is_object());
        let code = error
            .and_then(|e| e.get("code"))
            .or_else(|| self.body.get("code"))
            .filter(|c| !c.is_null());
        match code {
            Some(c) => text_of(c),
            None => self.status.to_string(),
        }
    }

    /// The error detail: `error.detail`, or a bare `detail`, or a bare-string `error`.
    pub(crate) fn detail(&self) -> Option<String> {
        let error = self.body.get("error");
        let detail = match error {
            Some(Value::Object(e)) => e.get("detail"),
            Some(s @ Value::String(_)) => Some(s),
            _ => self.body.get("detail"),
        };
        detail.filter(|d| !d.is_null()).map(text_of)
    }

    /// `status=<status> code=<code>` plus ` — <detail>` when there is one.
    pub(crate) fn summary(&self) -> String {
        let mut s = format!("status={} code={}", self.status, self.code());
        if let Some(d) = self.detail() {
            s.push_str(" — ");
            s.push_str(&d);
        }
        s
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `<tool> (<lapPath>) failed: status=<s> code=<c>[ — <detail>]`.
pub(crate) fn forwarded_failure(tool: &str, lap_path: &str, answer: &LapAnswer) -> String {
    format!("{tool} ({lap_path}) failed: {}", answer.summary())
}

/// `connect_session failed: observe failed: status=<s> code=<c>[ — <detail>]`.
pub(crate) fn connect_failure(answer: &LapAnswer) -> String {
    format!(
        "connect_session failed: observe failed: {}",
        answer.summary()
    )
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
        let a = LapAnswer::new(403, json!({"error":{"code":"revoked"}}));
        assert!(a.failed);
        assert_eq!(
            forwarded_failure("get_state", "/state", &a),
            "get_state (/state) failed: status=403 code=revoked"
        );
        let a = LapAnswer::new(
            400,
            json!({"code":"invalid","detail":"path must be a string"}),
        );
        assert_eq!(
            a.summary(),
            "status=400 code=invalid — path must be a string"
        );
        let a = LapAnswer::new(502, Value::Null);
        assert_eq!(a.summary(), "status=502 code=502");
        let a = LapAnswer::network("request to /message timed out after 7000ms");
        assert_eq!(
            a.summary(),
            "status=0 code=network — request to /message timed out after 7000ms"
        );
        assert_eq!(
            connect_failure(&LapAnswer::new(
                503,
                json!({"error":{"code":"paused","detail":"closed"}})
            )),
            "connect_session failed: observe failed: status=503 code=paused — closed"
        );
        assert!(!LapAnswer::new(204, Value::Null).failed);
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
