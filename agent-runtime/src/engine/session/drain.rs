//! Enqueue a message and wait per `waitFor` (`docs/semantics.md` §5.2).

use std::sync::Arc;
use std::time::Duration;

use tea_agent_schema::protocol::{DrainError, DrainReport, WaitFor};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;

use super::progress::{DispatchWatch, OwnWork};
use super::queue::{Applied, CommitMark, CommitNote, Origin};
use super::{Published, Session, SessionError};
use crate::app::App;

/// What a drain observed.
pub(crate) struct Drained {
    /// The snapshot when the message was enqueued.
    pub prev: Published,
    /// The snapshot at return.
    pub after: Published,
    pub report: DrainReport,
    /// Why the task refused the message at its turn (an agent's action no longer offered);
    /// nothing was applied.
    pub refused: Option<String>,
    /// The message's own commit, when the caller waited for it.
    pub commit: CommitMark,
}

/// The timing options of a dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    pub wait_for: WaitFor,
    pub quiet_ms: u64,
    pub cap_ms: u64,
}

enum Step {
    Commit,
    Error(DrainError),
    /// This many notes were dropped because the waiter fell behind.
    Lagged(u64),
    /// One of the dispatch's own effects reported progress or ended (`ended`).
    Work {
        ended: bool,
    },
    Closed,
}

impl<A: App> Session<A> {
    /// Enqueues `msg` and waits as `timing` says; a drain also waits for the effects the
    /// message's commit started, passing their progress on to `follow`
    /// (`docs/semantics.md` §5.6).
    pub(crate) async fn enqueue_and_drain(
        &self,
        msg: A::Msg,
        origin: Origin,
        timing: Timing,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Result<Drained, SessionError> {
        let core = &self.core;
        if self.is_closed() {
            return Err(SessionError::Closed);
        }
        let prev = core.published.borrow().clone();
        let mut report = DrainReport {
            effects_observed: 0,
            duration_ms: 0,
            timed_out: false,
            errors: Vec::new(),
            warnings: Vec::new(),
            cancelled: Vec::new(),
        };
        let mut own = OwnWork::default();
        let mut commit = CommitMark::default();
        if timing.wait_for == WaitFor::None {
            core.enqueue(msg, origin)
                .map_err(|_| SessionError::Closed)?;
            return Ok(Drained {
                after: prev.clone(),
                prev,
                report,
                refused: None,
                commit: CommitMark::default(),
            });
        }
        // Subscribed before the enqueue, so nothing from the enqueue on is missed.
        let mut notes = core.notes.subscribe();
        let mut closed = core.closed.subscribe();
        let (ticket, committed) = core
            .enqueue_watched(msg, origin)
            .map_err(|_| SessionError::Closed)?;
        let t0 = Instant::now();
        let cap = Duration::from_millis(timing.cap_ms);
        let quiet = Duration::from_millis(timing.quiet_ms);
        let deadline = t0 + cap;

        // Wait for the message's own commit. The task signals it to this caller alone, so a
        // busy session does not wake every waiter at every commit; the notes that queued up
        // meanwhile are read afterwards, in order.
        let signalled = tokio::select! {
            biased;
            _ = closed.wait_for(|c| *c) => return Err(SessionError::Closed),
            // An error means the task dropped the message unapplied: the session is ending.
            signal = committed => match signal {
                Ok(Applied::Committed(started, mark)) => {
                    own = OwnWork::of(&started, follow);
                    commit = mark;
                    true
                }
                Ok(Applied::Refused(detail)) => {
                    report.duration_ms = t0.elapsed().as_millis() as u64;
                    return Ok(Drained {
                        after: prev.clone(),
                        prev,
                        report,
                        refused: Some(detail),
                        commit: CommitMark::default(),
                    });
                }
                Err(_) => false,
            },
            _ = tokio::time::sleep_until(deadline) => false,
        };
        // When the cap and the commit come together, the commit wins.
        let own_done = signalled || core.is_committed(ticket);
        if !own_done {
            if self.is_closed() {
                return Err(SessionError::Closed);
            }
            report.timed_out = true;
        }
        loop {
            match notes.try_recv() {
                Ok(CommitNote::Commit { ticket: t }) => {
                    report.effects_observed += 1;
                    if t == ticket {
                        break;
                    }
                }
                Ok(CommitNote::Error(e)) => report.errors.push(e),
                // Notes were dropped (the session is very busy); our commit may be among them.
                Err(TryRecvError::Lagged(missed)) => report.effects_observed += missed,
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }

        if own_done && timing.wait_for == WaitFor::Drained {
            'drain: loop {
                let elapsed = t0.elapsed();
                if elapsed >= cap {
                    report.timed_out = true;
                    break;
                }
                let budget = quiet.min(cap - elapsed);
                let full = budget >= quiet;
                let window_end = Instant::now() + budget;
                loop {
                    match next_step(&mut notes, &mut closed, &mut own, window_end).await {
                        // Quiet, but an effect of this message still runs: wait on.
                        None if own.running() => continue 'drain,
                        None => {
                            report.timed_out = !full;
                            break 'drain;
                        }
                        Some(Step::Work { ended: true }) => continue 'drain,
                        Some(Step::Work { ended: false }) => {}
                        Some(Step::Commit) => {
                            report.effects_observed += 1;
                            continue 'drain;
                        }
                        Some(Step::Error(e)) => report.errors.push(e),
                        Some(Step::Lagged(missed)) => {
                            report.effects_observed += missed;
                            continue 'drain;
                        }
                        Some(Step::Closed) => return Err(SessionError::Closed),
                    }
                }
            }
        }
        // Errors reported together with the last commit we saw are already queued; take them.
        while let Ok(note) = notes.try_recv() {
            if let CommitNote::Error(e) = note {
                report.errors.push(e);
            }
        }
        report.cancelled = own.take_cancelled();
        report.duration_ms = t0.elapsed().as_millis() as u64;
        let after = core.published.borrow().clone();
        Ok(Drained {
            prev,
            after,
            report,
            refused: None,
            commit,
        })
    }
}

async fn next_step(
    notes: &mut tokio::sync::broadcast::Receiver<CommitNote>,
    closed: &mut tokio::sync::watch::Receiver<bool>,
    own: &mut OwnWork,
    until: Instant,
) -> Option<Step> {
    tokio::select! {
        biased;
        _ = closed.wait_for(|c| *c) => Some(Step::Closed),
        change = own.changed() => Some(Step::Work { ended: change.ended }),
        r = notes.recv() => Some(match r {
            Ok(CommitNote::Commit { .. }) => Step::Commit,
            Ok(CommitNote::Error(e)) => Step::Error(e),
            Err(RecvError::Lagged(n)) => Step::Lagged(n),
            Err(RecvError::Closed) => Step::Closed,
        }),
        _ = tokio::time::sleep_until(until) => None,
    }
}
