//! The wait options of a dispatch (`send_message` and the human dispatch): how long the
//! answer waits and whether it carries the state after.

use std::time::Duration;

use tea_agent_schema::protocol::WaitFor;

/// Wait options of a dispatch (`send_message` and the human dispatch). Start from
/// `DispatchOptions::default()` and set what differs (`#[non_exhaustive]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatchOptions {
    /// How long to wait before answering (default `drained`).
    pub wait_for: WaitFor,
    /// Quiet window of a drain (default 100 ms).
    pub drain_quiet: Duration,
    /// Cap of the whole wait (default 5 s).
    pub timeout: Duration,
    /// Add `stateAfter` to a `dispatched` answer.
    pub include_state: bool,
}

impl Default for DispatchOptions {
    fn default() -> Self {
        DispatchOptions {
            wait_for: WaitFor::Drained,
            drain_quiet: Duration::from_millis(100),
            timeout: Duration::from_secs(5),
            include_state: false,
        }
    }
}

impl DispatchOptions {
    /// The defaults, waiting for `wait_for` before answering.
    pub fn waiting_for(wait_for: WaitFor) -> Self {
        DispatchOptions {
            wait_for,
            ..DispatchOptions::default()
        }
    }
}
