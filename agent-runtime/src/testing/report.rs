//! What a replay found ([`ReplayReport`]) and why a transcript was not replayed
//! ([`ReplayError`]).

use serde::Serialize;
use serde_json::Value;

use crate::engine::session::Decided;

/// Why a transcript was not replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The text is not a transcript (not JSON, or not of the transcript format).
    #[error("not an agent transcript: {0}")]
    NotATranscript(String),
    /// A transcript of a version of the format this runtime does not read.
    #[error("transcript format version {found} is not supported (this runtime reads version {supported})")]
    UnsupportedVersion {
        /// The file's version.
        found: u32,
        /// The version this runtime reads.
        supported: u32,
    },
    /// A transcript recorded on another app.
    #[error("the transcript was recorded on the app \"{recorded}\", not on \"{app}\"")]
    OtherApp {
        /// The app named in the transcript.
        recorded: String,
        /// The app it was replayed against.
        app: String,
    },
    /// The in-process server or its session could not be made.
    #[error("the replay could not start: {0}")]
    Setup(String),
}

/// The result of a replay: each step of the transcript made again, its answer normalised
/// (ids and times replaced by placeholders, `tea_agent_runtime::testing` module docs), and
/// compared with the recorded one. It serializes for a snapshot test (`insta`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReplayReport {
    /// The app replayed against.
    pub app: String,
    /// Its `schemaHash` differs from the one the transcript was recorded with.
    pub schema_changed: bool,
    /// Entries the recording dropped before the transcript's first one (its ring's bounds).
    pub dropped: u64,
    /// The steps, in the transcript's order.
    pub steps: Vec<ReplayStep>,
}

impl ReplayReport {
    /// Whether every call was answered as it was when recorded and every decision applied.
    pub fn matches(&self) -> bool {
        self.steps.iter().all(|s| match s {
            ReplayStep::Call(c) => c.matches,
            ReplayStep::Decision(d) => d.applied,
        })
    }

    /// The calls answered differently than when recorded (or not made again).
    pub fn differences(&self) -> Vec<&ReplayedCall> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                ReplayStep::Call(c) if !c.matches => Some(&**c),
                _ => None,
            })
            .collect()
    }
}

/// One step of a replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ReplayStep {
    /// A call made again.
    Call(Box<ReplayedCall>),
    /// A decision made again on the replayed proposal.
    Decision(ReplayedDecision),
}

/// A call made again, with its answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReplayedCall {
    /// The calling agent (`agent-1`, …, in order of appearance).
    pub agent: String,
    /// The operation's wire name.
    pub op: String,
    /// The request, normalised.
    pub request: Value,
    /// The answer's status.
    pub status: u16,
    /// The answer, normalised.
    pub answer: Value,
    /// The answer is the recorded one (both normalised), with the same status.
    pub matches: bool,
    /// The recorded answer, normalised, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Value>,
    /// Why the call was not made again (its request was left out of the transcript, or it
    /// names an operation this runtime does not have).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// A decision made again.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReplayedDecision {
    /// The agent that proposed.
    pub agent: String,
    /// The replayed proposal's id, normalised.
    pub confirm_id: String,
    /// What was decided.
    pub decision: Decided,
    /// The human approved an edited message.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
    /// The decision was made on the replay's proposal.
    pub applied: bool,
    /// Why it was not, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
