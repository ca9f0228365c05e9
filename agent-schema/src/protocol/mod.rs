//! Serde types of the LAP protocol shared by the runtime, the MCP surface and clients.
//!
//! Keys are camelCase and appear in the order the spec writes them; optional keys are absent,
//! never `null`, when they have no value.

mod actions;
mod confirm;
mod dispatch;
mod error_code;
mod lenient;
mod log;
pub mod requests;
pub mod responses;
mod validation;
mod work;

pub use actions::{Action, ActionList, ActionSource};
pub use confirm::{ConfirmEntry, ConfirmStatus};
pub use dispatch::{
    DrainError, DrainErrorKind, DrainReport, PatchOp, RejectReason, SendResult, WaitFor,
    WouldDispatchResult,
};
pub use error_code::ErrorCode;
pub use lenient::Fields;
pub use log::{LogEntry, LogKind};
pub use requests::*;
pub use responses::*;
pub use validation::{IssueCode, ValidationIssue, ValidationOutcome};
pub use work::{
    CancelResponse, CancelStatus, CancelledWork, Progress, StartedBy, Work, PROGRESS_TEXT_CHARS,
};
