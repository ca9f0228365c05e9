//! The frames of `/agent/ws` (`docs/pairing.md` §Frames): one JSON object per text message,
//! discriminated by `t`. Envelopes (ids, codes) are typed; payloads (state, schemas, log
//! entries) stay opaque JSON. Unknown extra keys are ignored.

// The pairing client alone (feature `pairing-client` without `pairing`) reads only its half.
#![cfg_attr(not(feature = "pairing"), allow(dead_code))]

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The LAP version this side speaks (`hello-ack.lapVersion`).
pub(crate) const LAP_VERSION: u32 = 2;

/// The lowest client `lapVersion` the server keeps paired (`hello-ack.minClientVersion`).
pub(crate) const MIN_CLIENT_VERSION: u32 = 2;

/// The largest frame either side accepts: 4 MiB.
pub(crate) const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// The `hello` an app runtime sends when its socket opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Hello {
    /// The app's name.
    pub app_name: String,
    /// The app's version.
    pub app_version: String,
    /// The message schema (`{discriminant, variants}`).
    pub msg_schema: Value,
    /// The state schema.
    pub state_schema: Value,
    /// A sample of the affordances (actions) available now.
    #[serde(default)]
    pub affordances_sample: Vec<Value>,
    /// The app's docs, or `null`.
    #[serde(default)]
    pub docs: Value,
    /// The 32-hex schema hash.
    pub schema_hash: String,
    /// The annotations of the messages (sent by the Rust client; absent from LLui's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// The client's LAP version; absent on legacy clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lap_version: Option<u32>,
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

/// A frame from the app runtime to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub(crate) enum ClientFrame {
    /// Sent on socket open.
    Hello(Box<Hello>),
    /// The answer to an `rpc`.
    RpcReply {
        /// The `rpc` id.
        id: String,
        /// The answer (the LAP body).
        #[serde(default)]
        result: Value,
    },
    /// The failure of an `rpc`.
    RpcError {
        /// The `rpc` id.
        id: String,
        /// The error code.
        code: String,
        /// Details.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The human decided a confirmation.
    ConfirmResolved {
        /// The proposal's id (made by the app runtime).
        confirm_id: String,
        /// The decision.
        outcome: ConfirmDecision,
        /// The redacted state after the commit (absent on cancel).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state_after: Option<Value>,
    },
    /// The state changed under an armed `watch`.
    StateUpdate {
        /// The watch id.
        id: String,
        /// The watch path (`""` for the whole state).
        #[serde(default)]
        path: String,
        /// The whole redacted state.
        state_after: Value,
    },
    /// A log entry the app runtime wrote (after every rpc, and the echo of a `log-push`).
    LogAppend {
        /// The entry.
        entry: Value,
    },
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
    use serde_json::json;

    #[test]
    fn wire_spellings() {
        let ack = ServerFrame::HelloAck {
            lap_version: 2,
            min_client_version: 2,
        };
        assert_eq!(
            ack.to_text(),
            r#"{"t":"hello-ack","lapVersion":2,"minClientVersion":2}"#
        );
        assert_eq!(ServerFrame::Active {}.to_text(), r#"{"t":"active"}"#);
        assert_eq!(
            ServerFrame::ConfirmExpire {
                confirm_id: "c".into()
            }
            .to_text(),
            r#"{"t":"confirm-expire","confirmId":"c"}"#
        );
        let resolved: ClientFrame = serde_json::from_value(json!({
            "t": "confirm-resolved", "confirmId": "c1", "outcome": "user-cancelled", "extra": 1
        }))
        .unwrap();
        assert_eq!(
            resolved,
            ClientFrame::ConfirmResolved {
                confirm_id: "c1".into(),
                outcome: ConfirmDecision::UserCancelled,
                state_after: None
            }
        );
        let update: ClientFrame = serde_json::from_value(
            json!({"t": "state-update", "id": "w", "path": "", "stateAfter": {"n": 1}}),
        )
        .unwrap();
        assert!(matches!(update, ClientFrame::StateUpdate { .. }));
        assert!(serde_json::from_value::<ClientFrame>(json!({"t": "rpc-reply"})).is_err());
    }
}
