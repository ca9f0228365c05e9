//! A subscriber's view of a session's events (`docs/lap.md` §6.6): the snapshot or the replay
//! from a known id first, read from the hub's history one event at a time, then the live
//! events, and the running effects' `work` whenever they change.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::value::RawValue;
use tea_agent_schema::protocol::ConfirmEntry;
use tokio::sync::{broadcast, watch};

use super::{commit_of, state_text, Kept, NumberedEvent, SessionEvent, SharedHub, LIVE_CAPACITY};
use crate::algo::diff::PatchOp;
use crate::engine::session::work::WorkBoard;
use crate::engine::session::{Published, SessionHold};

/// Opens a subscription to `hub` after `last_event_id` (the `Last-Event-ID` header or the
/// `lastEventId` query parameter, as given). `pending` are the current pending entries, sent
/// after a snapshot. The replay is read from the history one event at a time as the
/// subscriber reads, never built up front.
pub(crate) fn subscribe(
    hub: &SharedHub,
    last_event_id: Option<&str>,
    pending: Vec<ConfirmEntry>,
    hold: SessionHold,
) -> Subscription {
    let mut h = hub.lock();
    let live = if h.closed {
        // The sender is dropped at once: the subscription ends after its initial events.
        broadcast::channel(1).0.subscribe()
    } else {
        h.live
            .get_or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
            .subscribe()
    };
    let replay_from = last_event_id
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        // Every event after l must still be kept.
        .filter(|&l| h.replays_after(l));
    let mut sub = Subscription {
        hub: hub.clone(),
        replay: None,
        snapshot: None,
        resumed: None,
        pending: VecDeque::new(),
        live,
        last_id: h.newest,
        last_state_sent: None,
        work: None,
        _hold: hold,
    };
    match replay_from {
        Some(l) => {
            let newest_state = h
                .history
                .iter()
                .rev()
                .take_while(|(p, _, _)| p.id > l)
                .find(|(p, _, _)| matches!(p.body, Kept::State(_) | Kept::StateMark))
                .map(|(p, _, _)| p.id);
            sub.replay = Some(Replay {
                cursor: l,
                end: h.newest,
                newest_state,
                state: h.latest_state.clone(),
            });
        }
        None => {
            sub.snapshot = Some((h.newest, h.latest_state.clone()));
            sub.pending = pending.into();
        }
    }
    sub
}

/// The commit a fleet's session must resume a stream from, out of the store's log: when
/// `last_event_id` names an event this process cannot replay (another replica sent it, or
/// its history moved on), the commit it was sent after; `None` otherwise (a replay, or a
/// snapshot).
pub(crate) fn resume_point(hub: &SharedHub, last_event_id: Option<&str>) -> Option<u64> {
    let h = hub.lock();
    if !h.by_commit {
        return None;
    }
    let last = last_event_id
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())?;
    (!h.replays_after(last)).then_some(commit_of(last))
}

/// Opens a subscription that resumes from commit `seq`'s state, seen elsewhere: its first
/// event is the `state` of commit `now` (the newest published here) with `diff`, the patch
/// from the state at `seq` to it; then the pending entries, then live events. `None` when
/// the session published another commit meanwhile (the caller then opens it as usual).
pub(crate) fn subscribe_resumed(
    hub: &SharedHub,
    now: u64,
    diff: Vec<PatchOp>,
    pending: Vec<ConfirmEntry>,
    hold: SessionHold,
) -> Option<Subscription> {
    let mut h = hub.lock();
    if h.closed || h.latest_state.seq != now {
        return None;
    }
    let live = h
        .live
        .get_or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
        .subscribe();
    Some(Subscription {
        hub: hub.clone(),
        replay: None,
        snapshot: Some((h.newest, h.latest_state.clone())),
        resumed: Some(diff),
        pending: pending.into(),
        live,
        last_id: h.newest,
        last_state_sent: None,
        work: None,
        _hold: hold,
    })
}

fn log_event(id: u64, text: &str) -> SessionEvent {
    SessionEvent {
        id,
        name: "log",
        text: text.to_owned(),
    }
}

fn confirm_event(id: u64, e: &ConfirmEntry) -> SessionEvent {
    SessionEvent {
        id,
        name: "confirm",
        text: serde_json::to_string(e).unwrap_or_else(|_| "null".into()),
    }
}

fn confirm_text_event(id: u64, text: &str) -> SessionEvent {
    SessionEvent {
        id,
        name: "confirm",
        text: text.to_owned(),
    }
}

/// The part of the history a subscription still has to replay: ids in `cursor+1 ..= end`.
#[derive(Debug)]
struct Replay {
    cursor: u64,
    end: u64,
    /// The id of the newest `state` event in the range: sent with `state`.
    newest_state: Option<u64>,
    /// The state when the subscription opened.
    state: Published,
}

/// A live view of a session's events. Ends (`None`) when the session closes, when the replay
/// it was promised is no longer kept, or when it falls too far behind the live events.
#[derive(Debug)]
pub struct Subscription {
    hub: SharedHub,
    replay: Option<Replay>,
    /// The snapshot still to send: its id and state.
    snapshot: Option<(u64, Published)>,
    /// With the snapshot, resuming a stream another replica sent: the patch from the state
    /// the client saw (the snapshot is then sent as a `state` with that `stateDiff`).
    resumed: Option<Vec<PatchOp>>,
    /// Pending entries still to send after the snapshot.
    pending: VecDeque<ConfirmEntry>,
    live: broadcast::Receiver<NumberedEvent>,
    last_id: u64,
    /// The commit number of the last state sent.
    last_state_sent: Option<u64>,
    /// The session's running effects, sent as a `work` event whenever they change (coalesced:
    /// the latest list, never a queue).
    work: Option<WorkFeed>,
    /// A subscriber keeps the session from being closed as idle.
    _hold: SessionHold,
}

/// What a subscription follows of the session's running effects.
#[derive(Debug)]
struct WorkFeed {
    board: Arc<WorkBoard>,
    changed: watch::Receiver<u64>,
}

impl Subscription {
    /// Follows `board`: a `work` event at once when effects are running, then at each change.
    pub(crate) fn with_work(mut self, board: Arc<WorkBoard>) -> Self {
        let mut changed = board.follow();
        if !board.list().is_empty() {
            changed.mark_changed();
        }
        self.work = Some(WorkFeed { board, changed });
        self
    }

    /// The next event, or `None` once the stream is over.
    pub async fn next(&mut self) -> Option<SessionEvent> {
        if let Some(e) = self.next_initial() {
            return e;
        }
        loop {
            let received = match &mut self.work {
                Some(feed) => tokio::select! {
                    biased;
                    r = self.live.recv() => r,
                    Ok(()) = feed.changed.changed() => {
                        feed.changed.borrow_and_update();
                        let work = feed.board.list();
                        let text = serde_json::json!({ "work": work }).to_string();
                        return Some(SessionEvent { id: self.last_id, name: "work", text });
                    }
                },
                None => self.live.recv().await,
            };
            match received {
                Ok(p) if p.id <= self.last_id => continue,
                Ok(p) => {
                    self.last_id = p.id;
                    return Some(self.render(p));
                }
                // Too far behind: drop this subscriber rather than buffer for it.
                Err(broadcast::error::RecvError::Lagged(_)) => return None,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next replayed or snapshot event: `None` when there is none left, `Some(None)` when
    /// the stream has to end.
    fn next_initial(&mut self) -> Option<Option<SessionEvent>> {
        if let Some((id, state)) = self.snapshot.take() {
            let text = match self.resumed.take() {
                Some(diff) => {
                    // `resumed`: the events between were not replayed (re-read the log).
                    let mut text = state_text(state.json().get(), Some(&diff), false);
                    text.pop();
                    text.push_str(",\"resumed\":true}");
                    text
                }
                None => state_text(state.json().get(), None, true),
            };
            self.last_state_sent = Some(state.seq);
            return Some(Some(SessionEvent {
                id,
                name: "state",
                text,
            }));
        }
        if let Some(e) = self.pending.pop_front() {
            return Some(Some(confirm_event(self.last_id, &e)));
        }
        let replay = self.replay.as_mut()?;
        loop {
            if replay.cursor >= replay.end {
                self.replay = None;
                return None;
            }
            let Some(p) = self.hub.lock().after(replay.cursor) else {
                // The history moved past this subscriber while it replayed: end it.
                self.replay = None;
                return Some(None);
            };
            replay.cursor = p.id;
            let event = match &p.body {
                Kept::State(_) | Kept::StateMark if Some(p.id) == replay.newest_state => {
                    let state = replay.state.clone();
                    let text = state_text(state.json().get(), None, false);
                    self.last_state_sent = Some(state.seq);
                    SessionEvent {
                        id: p.id,
                        name: "state",
                        text,
                    }
                }
                Kept::State(_) | Kept::StateMark => continue,
                Kept::Log(text) => log_event(p.id, text),
                Kept::Confirm(text) => confirm_text_event(p.id, text),
            };
            return Some(Some(event));
        }
    }

    fn render(&mut self, p: NumberedEvent) -> SessionEvent {
        match p.body {
            Kept::State(state) => {
                // Live state events come one per commit, in order: the diff from the last
                // state sent is the commit's patch. (Without a last state, or after a gap,
                // there is no diff: the console computes its own.)
                let diff = (self.last_state_sent.is_some()
                    && self.last_state_sent == state.seq.checked_sub(1))
                .then_some(&*state.patch);
                let text = state_text(
                    state.json.as_deref().map_or("null", RawValue::get),
                    diff,
                    false,
                );
                self.last_state_sent = Some(state.seq);
                SessionEvent {
                    id: p.id,
                    name: "state",
                    text,
                }
            }
            // Never sent live (the history's own mark).
            Kept::StateMark => SessionEvent {
                id: p.id,
                name: "state",
                text: "null".into(),
            },
            Kept::Log(text) => log_event(p.id, &text),
            Kept::Confirm(text) => confirm_text_event(p.id, &text),
        }
    }
}
