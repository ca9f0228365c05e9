//! What replicas of a fleet say to each other (`docs/pairing.md` §A fleet of replicas): the
//! routes of a hop, the call carried (the operation already admitted where it arrived), and
//! the answer, a stream of JSON lines: `alive` while the holder waits, the latest `progress`
//! of a `/message`'s work, then one `answer` or `error` that ends it.

use agent_schema::protocol::Progress;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

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
    /// The operation's MCP tool name.
    pub(crate) tool: String,
    /// The request body as it came (an object).
    pub(crate) args: Value,
    /// The caller follows the work of this `/message` (progress, cancellation).
    #[serde(default)]
    pub(crate) follow: bool,
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

/// One line of a hop's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "kebab-case")]
pub(crate) enum HopLine {
    /// The holder still works on the call (sent every third of the ping interval).
    Alive,
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
        #[serde(default)]
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
        #[serde(default)]
        not_holder: bool,
    },
}

impl HopLine {
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
