//! The paused answer's reconnect hints and the description a paired app's hello gives.

use super::*;

fn record(status: TokenStatus, until: Option<u64>) -> TokenRecord {
    let mut r = TokenRecord::minted("h".into(), None, "s".into(), "http://x".into(), 0);
    r.status = status;
    r.pending_resume_until = until;
    r
}

fn header(reply: &ApiError, name: &str) -> Option<String> {
    let response = axum::response::IntoResponse::into_response(reply.clone());
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

#[test]
fn paused_reconnect_hints() {
    let cases = [
        (None, "unknown", None),
        (Some(record(TokenStatus::Revoked, None)), "revoked", None),
        (
            Some(record(TokenStatus::PendingResume, Some(10_500))),
            "pending",
            Some("1"),
        ),
        (
            Some(record(TokenStatus::PendingResume, Some(32_001))),
            "pending",
            Some("23"),
        ),
        (
            Some(record(TokenStatus::PendingResume, Some(9_000))),
            "expired",
            None,
        ),
        (
            Some(record(TokenStatus::Active, None)),
            "pending",
            Some("5"),
        ),
        (
            Some(record(TokenStatus::AwaitingWs, None)),
            "pending",
            Some("5"),
        ),
    ];
    for (r, reconnect, retry) in cases {
        let reply = paused(r.as_ref(), 10_000, 5);
        assert_eq!(reply.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            header(&reply, "x-llui-reconnect").as_deref(),
            Some(reconnect)
        );
        assert_eq!(header(&reply, "retry-after").as_deref(), retry);
    }
}

#[test]
fn description_of_a_hello() {
    let raw = |s: &str| RawValue::from_string(s.to_string()).unwrap();
    let hello = Hello {
        app_name: "a".into(),
        app_version: "1".into(),
        msg_schema: raw(r#"{"discriminant": "type", "variants": {}}"#),
        state_schema: raw("{}"),
        affordances_sample: None,
        docs: None,
        schema_hash: "h".into(),
        annotations: None,
        lap_version: Some(2),
        extensions: Vec::new(),
    };
    let d: Value = serde_json::from_str(raw_text(&description(&hello)).unwrap().get()).unwrap();
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "name",
            "version",
            "stateSchema",
            "messages",
            "docs",
            "conventions",
            "schemaHash"
        ]
    );
    assert_eq!(d["conventions"]["dispatchModel"], "TEA");
}
