//! Effect tasks: each effect runs on its own tokio task, on the session's work board
//! (`work.rs`), and may send messages back, report progress and be cancelled.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tea_agent_schema::protocol::{DrainError, DrainErrorKind};

use super::cancel;
use super::queue::{CommitNote, Origin};
use super::work::{End, Starter, WorkSlot};
use super::{panic_text, SessionCore};
use crate::app::{App, EffectContext, SessionClosed};

/// Starts `effect`, returned by the commit `seq` of `starter`'s message; `None` when it
/// panicked before it could start (reported like a failure).
pub(crate) fn spawn_effect<A: App>(
    core: &Arc<SessionCore<A>>,
    effect: A::Effect,
    seq: u64,
    starter: &Arc<Starter>,
) -> Option<Arc<WorkSlot>> {
    let slot = core.work.start(seq, starter.clone());
    let weak = Arc::downgrade(core);
    let enqueue = Arc::new(move |msg| match weak.upgrade() {
        Some(core) => core.enqueue(msg, Origin::App).map(drop),
        None => Err(SessionClosed),
    });
    let ctx = EffectContext::new(enqueue, slot.clone());
    let notes = core.notes.clone();
    let app = core.app.clone();
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| app.run_effect(effect, ctx)));
    match started {
        Ok(fut) => {
            let ended = slot.clone();
            let weak = Arc::downgrade(core);
            let task = tokio::spawn(async move {
                let result = AssertUnwindSafe(fut).catch_unwind().await;
                // An effect that returns once asked to stop was cancelled, whatever it returns.
                if let Some(by) = ended.cancelled_by() {
                    cancel::ended_cancelled(&weak, &ended, &by, false);
                    return;
                }
                ended.finish(End::Done);
                match result {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => report(&notes, format!("effect failed: {e}")),
                    Err(p) => report(&notes, format!("effect panicked: {}", panic_text(&*p))),
                }
            });
            slot.set_abort(task.abort_handle());
            Some(slot)
        }
        Err(p) => {
            slot.finish(End::Done);
            report(&notes, format!("effect panicked: {}", panic_text(&*p)));
            None
        }
    }
}

fn report(notes: &super::notes::Notes, message: String) {
    notes.send(CommitNote::Error(DrainError {
        kind: DrainErrorKind::Unhandledrejection,
        message,
    }));
}
