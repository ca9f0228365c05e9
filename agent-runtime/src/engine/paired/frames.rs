//! The frames of `/agent/ws` (`docs/pairing.md` §Frames): one JSON object per text message,
//! discriminated by `t`. Envelopes (ids, codes) are typed; payloads (state, schemas, log
//! entries) stay opaque JSON. Unknown extra keys are ignored.

// The pairing client alone (feature `pairing-client` without `pairing`) reads only its half.
#![cfg_attr(not(feature = "pairing"), allow(dead_code))]

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use tea_agent_schema::protocol::Progress;

/// The LAP version this side speaks (`hello-ack.lapVersion`).
pub(crate) const LAP_VERSION: u32 = 2;

/// The lowest client `lapVersion` the server keeps paired (`hello-ack.minClientVersion`).
pub(crate) const MIN_CLIENT_VERSION: u32 = 2;

/// The frames beyond the reference this server takes from an app (`hello-ack.extensions`).
pub(crate) const SERVER_TAKES: &[&str] = &["progress"];

/// The frames beyond the reference the Rust pairing client takes from a server
/// (`hello.extensions`).
#[cfg_attr(not(feature = "pairing-client"), allow(dead_code))]
pub(crate) const CLIENT_TAKES: &[&str] = &["rpc-cancel", IDEMPOTENCY_KEYS];

/// The `hello.extensions` word of a client that answers a `send_message` whose
/// `idempotencyKey` it answered already with that first answer, without applying it again
/// (the Rust pairing client; `docs/pairing.md` §A fleet of replicas).
pub(crate) const IDEMPOTENCY_KEYS: &str = "idempotency-keys";

/// The most `extensions` a `hello` may name (more are ignored).
const MAX_EXTENSIONS: usize = 16;

/// The largest frame either side accepts: 4 MiB.
pub(crate) const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// Relayed JSON, kept as the text the app sent (`docs/pairing.md` §Bounds): the server never
/// looks inside it, so it is not parsed into a tree (which costs many times its text).
pub(crate) type Raw = Box<RawValue>;

/// The `hello` an app runtime sends when its socket opens. Its payloads stay raw text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Hello {
    /// The app's name.
    pub app_name: String,
    /// The app's version.
    pub app_version: String,
    /// The message schema (`{discriminant, variants}`).
    pub msg_schema: Raw,
    /// The state schema.
    pub state_schema: Raw,
    /// A sample of the affordances (actions) available now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affordances_sample: Option<Raw>,
    /// The app's docs, or `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<Raw>,
    /// The 32-hex schema hash.
    pub schema_hash: String,
    /// The annotations of the messages (sent by the Rust client; absent from LLui's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Raw>,
    /// The client's LAP version; absent on legacy clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lap_version: Option<u32>,
    /// The frames beyond the reference the client takes (the Rust client: `rpc-cancel`);
    /// absent from LLui's, which is then sent none of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl Hello {
    /// Whether the client said it takes the frame `t`.
    pub(crate) fn takes(&self, t: &str) -> bool {
        self.extensions.iter().any(|e| e == t)
    }
}

/// How the human decided a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ConfirmDecision {
    /// Approved and committed.
    Confirmed,
    /// Rejected by the human.
    UserCancelled,
}

/// A frame from the app runtime to the server, read by [`ClientFrame::parse`].
#[derive(Debug)]
pub(crate) enum ClientFrame {
    /// Sent on socket open.
    Hello(Box<Hello>),
    /// The answer to an `rpc`: `result` is the LAP body.
    RpcReply { id: String, result: Raw },
    /// The failure of an `rpc`.
    RpcError {
        id: String,
        code: String,
        detail: Option<String>,
    },
    /// The human decided a confirmation; `state_after` is the redacted state after the commit
    /// (absent on cancel).
    ConfirmResolved {
        confirm_id: String,
        outcome: ConfirmDecision,
        state_after: Option<Raw>,
    },
    /// The state changed under the armed watch `id` (`state_after`: the whole redacted state).
    StateUpdate { id: String, state_after: Raw },
    /// A log entry the app runtime wrote (after every rpc, and the echo of a `log-push`).
    LogAppend { entry: Raw },
    /// The latest progress of the effects the `send_message` rpc `id` started (beyond the
    /// reference; sent only to a server whose `hello-ack` lists `progress`).
    Progress { id: String, progress: Progress },
}

/// Every key of every client frame, read in one pass with the payloads left as raw text (an
/// internally tagged enum would buffer the whole frame as a tree first).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    t: String,
    id: Option<String>,
    result: Option<Raw>,
    code: Option<String>,
    detail: Option<String>,
    confirm_id: Option<String>,
    outcome: Option<ConfirmDecision>,
    state_after: Option<Raw>,
    entry: Option<Raw>,
    app_name: Option<String>,
    app_version: Option<String>,
    msg_schema: Option<Raw>,
    state_schema: Option<Raw>,
    affordances_sample: Option<Raw>,
    docs: Option<Raw>,
    schema_hash: Option<String>,
    annotations: Option<Raw>,
    lap_version: Option<u32>,
    extensions: Option<Vec<String>>,
    progress: Option<Progress>,
}

/// Why a client frame did not read: a static description plus, for an unknown `t`, the
/// attacker's text (the caller escapes it before logging, `docs/pairing.md` §Bounds).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadFrame(pub String);

impl ClientFrame {
    /// Reads one text frame.
    pub(crate) fn parse(text: &str) -> Result<ClientFrame, BadFrame> {
        let e: Envelope = serde_json::from_str(text).map_err(|e| BadFrame(e.to_string()))?;
        let missing = |what: &str| BadFrame(format!("`{}` without `{what}`", e.t));
        let frame = match e.t.as_str() {
            "hello" => ClientFrame::Hello(Box::new(Hello {
                app_name: e.app_name.ok_or_else(|| missing("appName"))?,
                app_version: e.app_version.ok_or_else(|| missing("appVersion"))?,
                msg_schema: e.msg_schema.ok_or_else(|| missing("msgSchema"))?,
                state_schema: e.state_schema.ok_or_else(|| missing("stateSchema"))?,
                affordances_sample: e.affordances_sample,
                docs: e.docs,
                schema_hash: e.schema_hash.ok_or_else(|| missing("schemaHash"))?,
                annotations: e.annotations,
                lap_version: e.lap_version,
                extensions: e
                    .extensions
                    .unwrap_or_default()
                    .into_iter()
                    .take(MAX_EXTENSIONS)
                    .collect(),
            })),
            "rpc-reply" => ClientFrame::RpcReply {
                id: e.id.ok_or_else(|| missing("id"))?,
                result: match e.result {
                    Some(r) => r,
                    None => null(),
                },
            },
            "rpc-error" => ClientFrame::RpcError {
                id: e.id.ok_or_else(|| missing("id"))?,
                code: e.code.ok_or_else(|| missing("code"))?,
                detail: e.detail,
            },
            "confirm-resolved" => ClientFrame::ConfirmResolved {
                confirm_id: e.confirm_id.ok_or_else(|| missing("confirmId"))?,
                outcome: e.outcome.ok_or_else(|| missing("outcome"))?,
                state_after: e.state_after,
            },
            "state-update" => ClientFrame::StateUpdate {
                id: e.id.ok_or_else(|| missing("id"))?,
                state_after: e.state_after.ok_or_else(|| missing("stateAfter"))?,
            },
            "log-append" => ClientFrame::LogAppend {
                entry: e.entry.ok_or_else(|| missing("entry"))?,
            },
            "progress" => ClientFrame::Progress {
                id: e.id.ok_or_else(|| missing("id"))?,
                progress: within_bounds(e.progress.ok_or_else(|| missing("progress"))?),
            },
            other => return Err(BadFrame(format!("unknown frame type {other:?}"))),
        };
        Ok(frame)
    }
}

/// An app's progress report as the server keeps it: the fraction within 0 … 1, the text cut
/// as [`Progress::with_text`] cuts it.
fn within_bounds(mut progress: Progress) -> Progress {
    progress.fraction = progress.fraction.map(|f| f.clamp(0.0, 1.0));
    match progress.text.take() {
        Some(text) => progress.with_text(text),
        None => progress,
    }
}

/// JSON `null` as raw text.
pub(crate) fn null() -> Raw {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

/// A frame from the server to the app runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub(crate) enum ServerFrame {
    /// The answer to every `hello`.
    HelloAck {
        /// The server's LAP version.
        lap_version: u32,
        /// The lowest client version kept paired.
        min_client_version: u32,
        /// The frames beyond the reference the server takes (`progress`).
        #[serde(default)]
        extensions: Vec<String>,
    },
    /// A LAP call for the app runtime to answer.
    Rpc {
        /// A UUID.
        id: String,
        /// The tool (`get_state`, `send_message`, …).
        tool: String,
        /// Its arguments.
        args: Value,
    },
    /// An agent now drives the session.
    Active {},
    /// The session was revoked; the app runtime closes its socket.
    Revoked {},
    /// A server-made log entry (narration).
    LogPush {
        /// The entry.
        entry: Value,
    },
    /// The agent was told "rejected": the proposal is void.
    ConfirmExpire {
        /// The proposal's id.
        confirm_id: String,
    },
    /// Arm a state watch for `/wait`.
    Watch {
        /// The watch id.
        id: String,
        /// A JSON Pointer to watch below, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Disarm a state watch.
    Unwatch {
        /// The watch id.
        id: String,
    },
    /// The caller of the `send_message` rpc `id` gave up on it (MCP `notifications/cancelled`):
    /// the app cancels the effects that dispatch started (beyond the reference; sent only to a
    /// client whose `hello` lists `rpc-cancel`).
    RpcCancel {
        /// The rpc's id.
        id: String,
    },
}

impl ServerFrame {
    /// The frame as JSON text.
    pub(crate) fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tea_agent_schema::protocol::PROGRESS_TEXT_CHARS;

    #[test]
    fn wire_spellings() {
        let ack = ServerFrame::HelloAck {
            lap_version: 2,
            min_client_version: 2,
            extensions: SERVER_TAKES.iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(
            ack.to_text(),
            r#"{"t":"hello-ack","lapVersion":2,"minClientVersion":2,"extensions":["progress"]}"#
        );
        assert_eq!(
            ServerFrame::RpcCancel { id: "r".into() }.to_text(),
            r#"{"t":"rpc-cancel","id":"r"}"#
        );
        assert_eq!(ServerFrame::Active {}.to_text(), r#"{"t":"active"}"#);
        assert_eq!(
            ServerFrame::ConfirmExpire {
                confirm_id: "c".into()
            }
            .to_text(),
            r#"{"t":"confirm-expire","confirmId":"c"}"#
        );
        let resolved = ClientFrame::parse(
            r#"{"t": "confirm-resolved", "confirmId": "c1", "outcome": "user-cancelled", "extra": 1}"#,
        )
        .unwrap();
        assert!(matches!(
            resolved,
            ClientFrame::ConfirmResolved { ref confirm_id, outcome: ConfirmDecision::UserCancelled, state_after: None }
                if confirm_id == "c1"
        ));
        let update = ClientFrame::parse(
            r#"{"t": "state-update", "id": "w", "path": "", "stateAfter": {"n": 1}}"#,
        )
        .unwrap();
        match update {
            ClientFrame::StateUpdate { state_after, .. } => {
                assert_eq!(state_after.get(), r#"{"n": 1}"#)
            }
            other => panic!("{other:?}"),
        }
        assert!(ClientFrame::parse(r#"{"t": "rpc-reply"}"#).is_err());
        let long = "é".repeat(PROGRESS_TEXT_CHARS + 5);
        let text = format!(
            r#"{{"t": "progress", "id": "r", "progress": {{"fraction": 7, "done": 3, "text": "{long}"}}}}"#
        );
        match ClientFrame::parse(&text).unwrap() {
            ClientFrame::Progress { id, progress } => {
                assert_eq!(id, "r");
                assert_eq!(progress.fraction, Some(1.0));
                assert_eq!(progress.done, Some(3));
                assert_eq!(progress.text.unwrap().chars().count(), PROGRESS_TEXT_CHARS);
            }
            other => panic!("{other:?}"),
        }
        assert!(ClientFrame::parse(r#"{"t": "progress", "id": "r"}"#).is_err());
        assert!(
            ClientFrame::parse(r#"{"t": "progress", "id": "r", "progress": {"done": -1}}"#)
                .is_err()
        );
        let hello = ClientFrame::parse(
            r#"{"t": "hello", "appName": "a", "appVersion": "1", "msgSchema": {}, "stateSchema": {}, "schemaHash": "h", "extensions": ["rpc-cancel"]}"#,
        )
        .unwrap();
        match hello {
            ClientFrame::Hello(h) => assert!(h.takes("rpc-cancel") && !h.takes("x")),
            other => panic!("{other:?}"),
        }
        let unknown = ClientFrame::parse("{\"t\": \"x\\n\\u001b\"}").unwrap_err();
        assert_eq!(unknown.0, "unknown frame type \"x\\n\\u{1b}\"");
    }
}
