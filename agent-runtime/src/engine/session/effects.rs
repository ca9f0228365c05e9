//! Effect tasks: each effect runs on its own tokio task and may send messages back.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agent_schema::protocol::{DrainError, DrainErrorKind};
use futures::FutureExt;

use super::queue::{CommitNote, Origin};
use super::{panic_text, SessionCore};
use crate::app::{App, EffectContext, SessionClosed};

pub(crate) fn spawn_effect<A: App>(core: &Arc<SessionCore<A>>, effect: A::Effect) {
    let weak = Arc::downgrade(core);
    let ctx = EffectContext::new(Arc::new(move |msg| match weak.upgrade() {
        Some(core) => core.enqueue(msg, Origin::Plain).map(drop),
        None => Err(SessionClosed),
    }));
    let notes = core.notes.clone();
    let app = core.app.clone();
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| app.run_effect(effect, ctx)));
    match started {
        Ok(fut) => {
            tokio::spawn(async move {
                match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => report(&notes, format!("effect failed: {e}")),
                    Err(p) => report(&notes, format!("effect panicked: {}", panic_text(&*p))),
                }
            });
        }
        Err(p) => report(&notes, format!("effect panicked: {}", panic_text(&*p))),
    }
}

fn report(notes: &super::notes::Notes, message: String) {
    notes.send(CommitNote::Error(DrainError {
        kind: DrainErrorKind::Unhandledrejection,
        message,
    }));
}
