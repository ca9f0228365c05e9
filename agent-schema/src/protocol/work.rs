//! Work in flight: the effects a session is running, their progress and their cancellation
//! (`semantics.md` §5.6, `lap.md` §5.9).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How far an effect got: a fraction, steps done out of a total, a short text, or any of them.
/// Reported through the effect's context; the latest report of an effect replaces the one
/// before (they are never queued).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Between 0 and 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// Steps done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<u64>,
    /// Steps in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// A short text (at most 200 characters are kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The characters of a progress text that are kept.
pub const PROGRESS_TEXT_CHARS: usize = 200;

impl Progress {
    /// A fraction of the work done (clamped to 0 … 1; not a number reads as 0).
    pub fn fraction(fraction: f64) -> Self {
        let fraction = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        Progress {
            fraction: Some(fraction),
            ..Progress::default()
        }
    }

    /// `done` steps out of `total` (its fraction is `done / total`, at most 1).
    pub fn steps(done: u64, total: u64) -> Self {
        let fraction = (total > 0).then(|| (done as f64 / total as f64).min(1.0));
        Progress {
            fraction,
            done: Some(done),
            total: Some(total),
            text: None,
        }
    }

    /// With a short text (cut to [`PROGRESS_TEXT_CHARS`] characters).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        let text: String = text.into();
        self.text = Some(text.chars().take(PROGRESS_TEXT_CHARS).collect());
        self
    }
}

/// Who started a running effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StartedBy {
    /// A message of the human (or of the app's own code).
    Human,
    /// An agent's message (`tid` names its token).
    Agent,
    /// The app: its `init`, or a message an effect sent.
    App,
}

/// One effect in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Work {
    /// The work's id in its session (what `/cancel {work}` names).
    pub id: u64,
    /// The seq of the commit that started it (`/cancel {seq}`).
    pub seq: u64,
    /// Who started it.
    pub started_by: StartedBy,
    /// The token whose message started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<String>,
    /// The variant of the message whose commit started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The intent of that variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Its latest progress report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// Asked to stop, not ended yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelling: bool,
}

/// A cancelled effect, as a drain reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelledWork {
    /// The work's id.
    pub id: u64,
    /// Who cancelled it: `human`, `agent`, or `mcp-client` (its call's `notifications/cancelled`).
    pub by: String,
    /// True when the effect ignored the signal and its task was aborted after the grace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
}

/// What `/cancel` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CancelStatus {
    /// The work was asked to stop.
    Cancelled,
    /// Nothing named is running (finished, or never started).
    NotRunning,
}

/// `/cancel`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelResponse {
    /// `cancelled` or `not-running`.
    pub status: CancelStatus,
    /// The ids of the work asked to stop.
    pub cancelled: Vec<u64>,
}
