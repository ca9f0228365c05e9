//! The bridge's HTTP forwarder (`docs/lap.md` §8): `POST <url><lapPath>` with the bearer token and
//! the arguments as JSON, under a time budget per request.

use std::time::Duration;

use reqwest::header;
use serde_json::Value;

use tea_agent_schema::protocol::Fields;

use tea_agent_schema::protocol::ErrorCode;

use crate::ops::{from_http, ApiError, Operation, Outcome};
use crate::surface::mcp::forward::Forwarder;

/// Time budgets of the forwarder, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budgets {
    /// Every request that does not long-poll (default 20 000).
    pub read_ms: u64,
    /// Added to the wait of a long poll (default 2 000).
    pub slack_ms: u64,
    /// The wait of `/message` without a positive `timeoutMs` (default 5 000).
    pub message_wait_ms: u64,
    /// The wait of `/wait` without a positive `timeoutMs` (default 10 000).
    pub wait_wait_ms: u64,
    /// The wait of `/confirm-result` without a positive `timeoutMs` (default 5 000).
    pub confirm_wait_ms: u64,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            read_ms: 20_000,
            slack_ms: 2_000,
            message_wait_ms: 5_000,
            wait_wait_ms: 10_000,
            confirm_wait_ms: 5_000,
        }
    }
}

impl Budgets {
    /// The budget of one request: reads get `read_ms`; a long poll gets its wait plus
    /// `slack_ms`, the wait being the caller's `timeoutMs` (read as LAP reads it) when it is
    /// positive, else the operation's default.
    pub(crate) fn budget_ms(&self, op: Operation, args: &Value) -> u64 {
        let default_wait = match op {
            Operation::Message => self.message_wait_ms,
            Operation::Wait => self.wait_wait_ms,
            Operation::ConfirmResult => self.confirm_wait_ms,
            _ => return self.read_ms,
        };
        let wait = Fields::millis_of(args.get("timeoutMs"))
            .filter(|ms| *ms > 0)
            .unwrap_or(default_wait);
        wait.saturating_add(self.slack_ms)
    }
}

/// `url` with one trailing `/` removed, plus the LAP path.
pub(crate) fn lap_url(base: &str, op: Operation) -> String {
    let base = base.strip_suffix('/').unwrap_or(base);
    format!("{base}{}", op.lap_path())
}

/// Forwards to a LAP server over HTTP.
#[derive(Debug, Clone)]
pub(crate) struct HttpForwarder {
    client: reqwest::Client,
    base: String,
    token: String,
    budgets: Budgets,
}

impl HttpForwarder {
    /// A forwarder to the LAP base URL `base` (like `http://127.0.0.1:8787/agent/lap/v1`).
    pub(crate) fn new(client: reqwest::Client, base: &str, token: &str, budgets: Budgets) -> Self {
        HttpForwarder {
            client,
            base: base.to_string(),
            token: token.to_string(),
            budgets,
        }
    }

    async fn send(&self, url: &str, body: &Value) -> Result<(u16, bytes::Bytes), reqwest::Error> {
        let response = self
            .client
            .post(url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .body(body.to_string())
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.bytes().await?))
    }
}

impl Forwarder for HttpForwarder {
    /// The HTTP answer converted to the operation's outcome here, at the edge: once.
    async fn post(&self, op: Operation, body: Value) -> Outcome {
        let budget = self.budgets.budget_ms(op, &body);
        let url = lap_url(&self.base, op);
        let sent = tokio::time::timeout(Duration::from_millis(budget), self.send(&url, &body));
        match sent.await {
            Ok(Ok((status, bytes))) => from_http(status, &bytes),
            Ok(Err(e)) => Err(network(error_text(&e))),
            Err(_) => Err(network(format!(
                "request to {} timed out after {budget}ms",
                op.lap_path()
            ))),
        }
    }
}

/// A request that never got an answer: status 0, code `network`.
fn network(detail: String) -> ApiError {
    ApiError::new(ErrorCode::Network).with_detail(detail)
}

/// The error with its causes, `a: b: c`.
fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn budgets_follow_the_spec() {
        let b = Budgets::default();
        assert_eq!(b.budget_ms(Operation::State, &json!({})), 20_000);
        assert_eq!(
            b.budget_ms(Operation::Observe, &json!({"timeoutMs": 1})),
            20_000
        );
        assert_eq!(b.budget_ms(Operation::Message, &json!({})), 7_000);
        assert_eq!(b.budget_ms(Operation::Wait, &json!({})), 12_000);
        assert_eq!(b.budget_ms(Operation::ConfirmResult, &json!({})), 7_000);
        assert_eq!(
            b.budget_ms(Operation::Message, &json!({"timeoutMs": 30_000})),
            32_000
        );
        assert_eq!(
            b.budget_ms(Operation::Wait, &json!({"timeoutMs": 60_000})),
            62_000
        );
        for bad in [json!(0), json!(-5), json!("100"), json!(null)] {
            assert_eq!(
                b.budget_ms(Operation::Message, &json!({"timeoutMs": bad})),
                7_000
            );
            assert_eq!(
                b.budget_ms(Operation::Wait, &json!({"timeoutMs": bad})),
                12_000
            );
        }
    }

    #[test]
    fn urls_join_once() {
        assert_eq!(
            lap_url("https://app/lap/v1", Operation::State),
            "https://app/lap/v1/state"
        );
        assert_eq!(
            lap_url("https://app/lap/v1/", Operation::State),
            "https://app/lap/v1/state"
        );
        assert_eq!(
            lap_url("https://app/lap/v1//", Operation::Observe),
            "https://app/lap/v1//observe"
        );
    }
}
