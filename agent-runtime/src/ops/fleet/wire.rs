//! What replicas of a fleet say to each other (`docs/pairing.md` §A fleet of replicas): the
//! routes of a hop, the call carried (the operation already admitted where it arrived), and
//! the answer, a stream of JSON lines: `alive` while the holder waits, the latest `progress`
//! of a `/message`'s work, then one `answer` or `error` that ends it.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use tea_agent_schema::protocol::Progress;

use crate::ops::error::ErrorParts;
use crate::security::AuditEvent;

/// A paired call carried to the replica holding the socket.
pub(crate) const CALL_PATH: &str = "/agent/fleet/v1/call";
/// The caller of a carried `/message` gave up on its work (MCP's `notifications/cancelled`).
pub(crate) const CANCEL_PATH: &str = "/agent/fleet/v1/cancel";
/// A carried call's success activated the token: the app is told (`active`).
pub(crate) const ACTIVATED_PATH: &str = "/agent/fleet/v1/activated";
/// A newer socket on another replica supersedes the one held here.
pub(crate) const SUPERSEDE_PATH: &str = "/agent/fleet/v1/supersede";

/// The largest hop request body a replica reads: a LAP body (the carried arguments) and the
/// envelope.
pub(crate) const MAX_REQUEST_BYTES: usize =
    crate::engine::paired::frames::MAX_FRAME_BYTES + 64 * 1024;
/// The largest line of a hop's answer a replica reads: an app's answer (within its frame
/// cap) in the envelope.
pub(crate) const MAX_LINE_BYTES: usize = crate::engine::paired::frames::MAX_FRAME_BYTES + 64 * 1024;

/// A carried call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct HopCall {
    /// The hop's id (a UUID), for its `cancel`.
    pub(crate) hop: String,
    /// The caller's token id (its record is read from the store by the holder).
    pub(crate) tid: String,
    /// The operation's MCP tool name (empty for a watcher's hop).
    #[serde(default)]
    pub(crate) tool: String,
    /// A watcher's hop (MCP's change notifications), instead of an operation of a call.
    #[serde(default)]
    pub(crate) watch: Option<Watching>,
    /// The request body as it came (an object).
    pub(crate) args: Value,
    /// The caller follows the work of this `/message` (progress, cancellation).
    #[serde(default)]
    pub(crate) follow: bool,
}

/// What a watcher asks of the holder (`SessionBackend::next_change`, `available_actions`,
/// `description`): answered as `/wait`, `/actions` and `/describe` are.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum Watching {
    /// The session's next change, waited on up to `timeoutMs`.
    Change {
        /// How long to wait.
        #[serde(rename = "timeoutMs")]
        timeout_ms: u64,
    },
    /// The actions available now.
    Actions,
    /// The app's description.
    Description,
}

/// A hop about one token id and no more (`activated`, `supersede`, `cancel`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct HopNote {
    /// The token id (`activated`, `supersede`) or the hop id (`cancel`).
    pub(crate) id: String,
    /// The lease epoch of the superseding socket (`supersede`).
    #[serde(default)]
    pub(crate) epoch: i64,
}

/// One line of a hop's answer (written tagged by `k`; read through [`WireLine`], since a raw
/// body cannot be read inside a tagged enum).
#[derive(Debug, Serialize)]
#[serde(tag = "k", rename_all = "kebab-case")]
pub(crate) enum HopLine {
    /// The holder still works on the call (sent every third of the ping interval). First, with
    /// `dedupes`, before a keyed `/message` is relayed to an app that answers a repeated key
    /// with its first answer (`idempotency-keys` in its `hello`): the caller may then give the
    /// key back if the hop breaks (`docs/pairing.md` §A fleet of replicas).
    Alive {
        /// The app deduplicates keyed messages.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        dedupes: bool,
    },
    /// The latest progress of the `/message`'s work.
    Progress {
        /// The report.
        progress: Progress,
    },
    /// The call's success.
    Answer {
        /// The 200 body, as the app sent it.
        body: Box<RawValue>,
        /// The intent of the `read` log entry, if any.
        read: Option<String>,
        /// The audit entry's event.
        event: AuditEvent,
        /// The audit entry's detail.
        detail: Value,
    },
    /// The call's error.
    Error {
        /// The error, every field.
        error: ErrorParts,
        /// The replica does not hold the session's socket (any more).
        #[serde(rename = "notHolder")]
        not_holder: bool,
    },
}

/// What a line's `k` says it is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum LineKind {
    Alive,
    Progress,
    Answer,
    Error,
}

/// A line as read: every key of every kind, optional.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireLine {
    k: LineKind,
    #[serde(default)]
    progress: Option<Progress>,
    #[serde(default)]
    body: Option<Box<RawValue>>,
    #[serde(default)]
    read: Option<String>,
    #[serde(default)]
    event: Option<AuditEvent>,
    #[serde(default)]
    detail: Option<Value>,
    #[serde(default)]
    error: Option<ErrorParts>,
    #[serde(default)]
    not_holder: bool,
    #[serde(default)]
    dedupes: bool,
}

impl HopLine {
    /// Reads one line (without its newline); the error says what is missing or wrong.
    pub(crate) fn parse(line: &[u8]) -> Result<HopLine, String> {
        let wire: WireLine = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        let missing = |what: &str| format!("a line of kind {:?} without its {what}", wire.k);
        Ok(match wire.k {
            LineKind::Alive => HopLine::Alive {
                dedupes: wire.dedupes,
            },
            LineKind::Progress => HopLine::Progress {
                progress: wire.progress.clone().ok_or_else(|| missing("progress"))?,
            },
            LineKind::Answer => HopLine::Answer {
                body: wire.body.clone().ok_or_else(|| missing("body"))?,
                read: wire.read.clone(),
                event: wire.event.ok_or_else(|| missing("event"))?,
                detail: wire.detail.clone().unwrap_or(Value::Null),
            },
            LineKind::Error => HopLine::Error {
                error: wire.error.clone().ok_or_else(|| missing("error"))?,
                not_holder: wire.not_holder,
            },
        })
    }

    /// The line's text, newline-terminated.
    pub(crate) fn to_line(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_else(|e| {
            let detail = format!("the answer: {e}");
            serde_json::json!({"k": "error", "error": {"code": "internal", "detail": detail}})
                .to_string()
        });
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::error::ApiError;

    #[test]
    fn every_line_reads_back_as_it_was_written() {
        let body = RawValue::from_string(r#"{"state": {"n" :1}}"#.into()).unwrap();
        let lines = [
            HopLine::Alive { dedupes: false },
            HopLine::Alive { dedupes: true },
            HopLine::Progress {
                progress: Progress {
                    fraction: Some(0.5),
                    ..Default::default()
                },
            },
            HopLine::Answer {
                body,
                read: Some("read".into()),
                event: AuditEvent::LapCall,
                detail: serde_json::json!({"tool": "get_state", "paired": true}),
            },
            HopLine::Error {
                error: ApiError::paused_with("pending", Some(5)).to_parts(),
                not_holder: true,
            },
        ];
        for line in lines {
            let text = line.to_line();
            assert!(text.ends_with('\n'));
            let read = HopLine::parse(text.trim_end().as_bytes()).unwrap();
            assert_eq!(read.to_line(), text);
        }
        // The app's text is carried byte for byte.
        let answer = HopLine::parse(
            br#"{"k":"answer","body":{"state": {"n" :1}},"event":"lap-call","detail":null}"#,
        )
        .unwrap();
        match answer {
            HopLine::Answer { body, .. } => assert_eq!(body.get(), r#"{"state": {"n" :1}}"#),
            other => panic!("{other:?}"),
        }
        assert!(HopLine::parse(br#"{"k":"answer"}"#)
            .unwrap_err()
            .contains("body"));
        assert!(HopLine::parse(br#"{"k":"nope"}"#).is_err());
        assert!(HopLine::parse(b"not json").is_err());
    }

    #[test]
    fn an_error_crosses_with_every_field_and_unknown_words_dropped() {
        let e = ApiError::paused_with("pending", Some(3)).with_detail("later");
        assert_eq!(ApiError::from_parts(e.to_parts()), e);
        let mut parts = serde_json::to_value(e.to_parts()).unwrap();
        parts["reconnect"] = serde_json::json!("<script>");
        let read = ApiError::from_parts(serde_json::from_value(parts).unwrap());
        assert!(read.headers().iter().all(|(k, _)| *k != "x-llui-reconnect"));
    }
}
