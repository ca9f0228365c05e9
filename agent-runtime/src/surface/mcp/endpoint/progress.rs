//! A bound tool call followed while it runs (`docs/mcp.md` §Progress and cancellation): the
//! progress of the effects its message started goes to the client as
//! `notifications/progress` when the request carried a `progressToken`, and the client's
//! `notifications/cancelled` of the request ends the wait and stops those effects.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tea_agent_schema::protocol::Progress;
use tokio::sync::watch;

use super::run::ToolAnswer;
use crate::engine::session::progress::DispatchWatch;

/// A watch of the call of `context`: it shows progress when the request carried a
/// `progressToken`.
pub(super) fn watch_of(context: &RequestContext<RoleServer>) -> Arc<DispatchWatch> {
    let follow = DispatchWatch::new();
    if context.meta.get_progress_token().is_some() {
        follow.show_progress();
    }
    follow
}

/// Runs `answer`, the call `follow` watches, for the request of `context`: each new progress
/// goes out as it comes, the latest once more before the answer when the answer overtook it.
pub(super) async fn followed(
    follow: Arc<DispatchWatch>,
    context: &RequestContext<RoleServer>,
    answer: impl Future<Output = Result<ToolAnswer, ErrorData>>,
) -> Result<ToolAnswer, ErrorData> {
    let mut reporter = Reporter {
        token: context.meta.get_progress_token(),
        rx: follow.follow(),
        last: f64::NEG_INFINITY,
    };
    let mut answer = std::pin::pin!(answer);
    loop {
        tokio::select! {
            biased;
            () = context.ct.cancelled() => {
                // The client gave up on the call: the effects it started are stopped too.
                follow.cancel();
                return Err(ErrorData::internal_error(
                    "the request was cancelled by the client",
                    None,
                ));
            }
            answer = &mut answer => {
                reporter.send(context).await;
                return answer;
            }
            Ok(()) = reporter.rx.changed(), if reporter.token.is_some() => {
                reporter.send(context).await;
            }
        }
    }
}

/// What a call has reported of its progress.
struct Reporter {
    /// The request's `progressToken`; none: nothing is reported.
    token: Option<ProgressToken>,
    rx: watch::Receiver<Option<Progress>>,
    /// The last `progress` sent: MCP's progress of a token increases with each notification.
    last: f64,
}

impl Reporter {
    /// Sends the latest progress as `notifications/progress` when it moved on.
    async fn send(&mut self, context: &RequestContext<RoleServer>) {
        let Some(token) = self.token.clone() else {
            return;
        };
        let Some(progress) = self.rx.borrow_and_update().clone() else {
            return;
        };
        let (value, total) = amount(&progress);
        if value <= self.last {
            return;
        }
        self.last = value;
        let mut param = ProgressNotificationParam::new(token, value);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(text) = progress.text {
            param = param.with_message(text);
        }
        // A client that went away is not waited on: the answer is lost too.
        let _ = context.peer.notify_progress(param).await;
    }
}

/// MCP's `progress` and `total` of a report: its steps, else its fraction out of 1.
fn amount(progress: &Progress) -> (f64, Option<f64>) {
    match (progress.done, progress.total, progress.fraction) {
        (Some(done), total, _) => (done as f64, total.map(|t| t as f64)),
        (None, _, Some(fraction)) => (fraction, Some(1.0)),
        _ => (0.0, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_fractions_become_progress_and_total() {
        assert_eq!(amount(&Progress::steps(30, 100)), (30.0, Some(100.0)));
        assert_eq!(amount(&Progress::fraction(0.25)), (0.25, Some(1.0)));
        assert_eq!(amount(&Progress::default()), (0.0, None));
    }
}
