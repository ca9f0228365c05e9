//! Numbered session events for the human side (`docs/lap.md` §6.6): `state` after each commit, `log`
//! for each log entry, `confirm` for each proposal and status change, with replay from a
//! known id.

use super::SessionHold;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

use agent_schema::protocol::ConfirmEntry;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use super::retained::{self, RetainedRing, RingCharge};
use super::work::WorkBoard;
use super::Published;
use crate::algo::diff::PatchOp;

/// With a fleet's store, a `state` event's id is its commit's `seq` shifted by this many bits
/// (the other events count on from it), so any replica tells from a `Last-Event-ID` which
/// commit the client saw (`docs/lap.md` §6.6).
pub(crate) const COMMIT_ID_SHIFT: u32 = 20;

/// The commit an event id of a fleet's session names: the newest commit the client had seen.
pub(crate) fn commit_of(id: u64) -> u64 {
    id >> COMMIT_ID_SHIFT
}

/// Capacity of the live channel: a subscriber that falls further behind (it does not read) is
/// dropped, its stream ends, and a reconnect with `Last-Event-ID` replays or snapshots.
const LIVE_CAPACITY: usize = 256;

/// What a published event carries.
#[derive(Debug, Clone)]
pub(crate) enum EventBody {
    /// The snapshot a commit published.
    State(Published),
    /// A new log entry, as its JSON text (the activity log keeps the same allocation).
    Log(Arc<str>),
    /// A proposal or a status change (boxed: the other variants are a few words).
    Confirm(Box<ConfirmEntry>),
}

/// An event as kept and sent live: the history and the live channel share one allocation, a
/// log or confirm entry's JSON text (what a subscriber is sent; a tree of it would take
/// several times its text on the heap).
#[derive(Debug, Clone)]
enum Kept {
    State(Arc<StateEvent>),
    /// A `state` event in the history: no data (a replay sends the state captured when it
    /// starts), no allocation.
    StateMark,
    Log(Arc<str>),
    Confirm(Arc<str>),
}

/// An event with its id, as the history keeps it and the live channel carries it.
#[derive(Debug, Clone)]
struct NumberedEvent {
    id: u64,
    body: Kept,
}

/// A `state` event as sent live: the snapshot's serialized text and its patch, not its tree
/// (subscribers do not hold the session's trees alive).
#[derive(Debug)]
struct StateEvent {
    seq: u64,
    json: Option<Arc<RawValue>>,
    patch: Arc<[PatchOp]>,
}

/// One event as a subscriber receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEvent {
    /// The session's event id (the snapshot's events share the newest id).
    pub id: u64,
    /// `state`, `log`, `confirm` or `work` (the running effects, `{"work": [...]}`).
    pub name: &'static str,
    /// The event's data as JSON text (a state is embedded as its snapshot's text, never
    /// serialized again).
    pub text: String,
}

impl SessionEvent {
    /// The event's data, parsed.
    pub fn data(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

/// The data of a `state` event: `{"state":…}` plus `"stateDiff"` or `"snapshot":true`.
fn state_text(state: &str, diff: Option<&[PatchOp]>, snapshot: bool) -> String {
    let mut text = String::with_capacity(state.len() + 64);
    text.push_str("{\"state\":");
    text.push_str(state);
    if let Some(ops) = diff {
        text.push_str(",\"stateDiff\":");
        text.push_str(&serde_json::to_string(ops).unwrap_or_else(|_| "[]".into()));
    }
    if snapshot {
        text.push_str(",\"snapshot\":true");
    }
    text.push('}');
    text
}

/// An entry's JSON text, shared by the history and the live channel.
fn entry_text<T: serde::Serialize>(entry: &T) -> Arc<str> {
    Arc::from(serde_json::to_string(entry).unwrap_or_else(|_| "null".into()))
}

/// What a kept event costs the host on the heap: its slot in the history, and its text.
fn history_cost(body: &Kept) -> usize {
    let slot = std::mem::size_of::<(NumberedEvent, usize, u64)>();
    match body {
        Kept::Log(text) | Kept::Confirm(text) => retained::text_cost(text.len(), slot),
        Kept::State(_) | Kept::StateMark => retained::with_slack(slot),
    }
}

/// The publishing side: numbers events and keeps the recent history, within a count and a
/// byte budget. Kept ids increase, end at the newest id, and miss none published after
/// `dropped` (consecutive, unless numbered by commit).
#[derive(Debug)]
pub(crate) struct EventHub {
    newest: u64,
    /// The newest id no longer kept (dropped, not kept for its size, or published before this
    /// process): a replay must start at or after it.
    dropped: u64,
    /// A fleet's session: `state` events are numbered by commit ([`COMMIT_ID_SHIFT`]).
    by_commit: bool,
    /// Events oldest first, each with its encoded size and its stamp in the host's order of
    /// what sessions retain (`retained.rs`).
    history: VecDeque<(NumberedEvent, usize, u64)>,
    history_bytes: usize,
    history_cap: usize,
    event_bytes: usize,
    history_total_bytes: usize,
    latest_state: Published,
    /// Created by the first subscriber and dropped when the last one is gone, so an idle
    /// session without a console holds no channel buffer.
    live: Option<broadcast::Sender<NumberedEvent>>,
    closed: bool,
    charge: RingCharge,
}

impl RetainedRing for EventHub {
    fn oldest_stamp(&self) -> Option<u64> {
        self.history.front().map(|e| e.2)
    }

    fn drop_oldest(&mut self) {
        if let Some((event, size, _)) = self.history.pop_front() {
            self.dropped = self.dropped.max(event.id);
            self.history_bytes -= size;
            self.charge.sub(history_cost(&event.body));
        }
    }

    fn charge(&mut self) -> &mut RingCharge {
        &mut self.charge
    }
}

/// An event hub shared by its session and its subscriptions.
pub(crate) type SharedHub = Arc<Mutex<EventHub>>;

impl EventHub {
    /// A hub keeping `history_cap` events, starting from `initial_state`, with the default
    /// byte budgets.
    #[cfg(test)]
    pub(crate) fn new(history_cap: usize, initial_state: Published) -> Self {
        let b = crate::config::Budgets::default();
        Self::with_budgets(
            history_cap,
            b.event_bytes,
            b.event_history_bytes,
            initial_state,
            super::retained::Retained::unbounded().charge(),
        )
    }

    /// A hub keeping at most `history_cap` events and `history_total_bytes` (counted in
    /// `charge`), an event over `event_bytes` being sent live but not kept.
    pub(crate) fn with_budgets(
        history_cap: usize,
        event_bytes: usize,
        history_total_bytes: usize,
        initial_state: Published,
        charge: RingCharge,
    ) -> Self {
        EventHub {
            newest: 0,
            dropped: 0,
            by_commit: false,
            history: VecDeque::new(),
            history_bytes: 0,
            history_cap: history_cap.max(1),
            event_bytes,
            history_total_bytes,
            latest_state: initial_state,
            live: None,
            closed: false,
            charge,
        }
    }

    /// Numbers the next events after `id` (a session brought back from a store: ids of the
    /// process before must not name this process's events).
    pub(crate) fn continue_after(&mut self, id: u64) {
        if self.history.is_empty() {
            self.newest = self.newest.max(id);
            self.dropped = self.newest;
        }
    }

    /// Numbers `state` events by their commit from now on (a fleet's session,
    /// [`COMMIT_ID_SHIFT`]), after the ids of commit `seq`.
    pub(crate) fn number_by_commit(&mut self, seq: u64) {
        self.by_commit = true;
        self.continue_after(seq << COMMIT_ID_SHIFT);
    }

    /// Whether `state` events are numbered by commit.
    pub(crate) fn by_commit(&self) -> bool {
        self.by_commit
    }

    /// Whether a replay after id `last` can be read from the history.
    fn replays_after(&self, last: u64) -> bool {
        last <= self.newest && last >= self.dropped
    }

    /// The newest event id (0 before the first event).
    pub(crate) fn newest_id(&self) -> u64 {
        self.newest
    }

    /// Ends every subscription (the session closed).
    pub(crate) fn close(&mut self) {
        // Subscribers hold receivers of the sender: dropping it ends their streams.
        self.live = None;
        self.closed = true;
    }

    /// Publishes an event and returns its id.
    pub(crate) fn publish(&mut self, body: EventBody) -> u64 {
        self.newest = match &body {
            EventBody::State(s) if self.by_commit => {
                (s.seq << COMMIT_ID_SHIFT).max(self.newest + 1)
            }
            _ => self.newest + 1,
        };
        let (body, size) = match body {
            EventBody::State(s) => {
                // Serialized only when a subscriber will read it.
                let json = self.live.is_some().then(|| s.json());
                let event = StateEvent {
                    seq: s.seq,
                    json,
                    patch: s.patch.clone(),
                };
                self.latest_state = s;
                (Kept::State(Arc::new(event)), 0)
            }
            EventBody::Log(text) => {
                let size = text.len();
                (Kept::Log(text), size)
            }
            EventBody::Confirm(e) => {
                let text = entry_text(&e);
                let size = text.len();
                (Kept::Confirm(text), size)
            }
        };
        let published = NumberedEvent {
            id: self.newest,
            body,
        };
        if size > self.event_bytes {
            // Not kept: a replay across it would miss it, so none reaches back before it.
            // Each entry refunds what it was charged (its heap cost, not its JSON size).
            while !self.history.is_empty() {
                self.drop_oldest();
            }
            self.dropped = self.newest;
        } else {
            // History keeps `state` events without their data: a replay sends the state
            // captured when it starts.
            let kept = match &published.body {
                Kept::State(_) => Kept::StateMark,
                other => other.clone(),
            };
            // Room first: the history never holds more than its count, nor its slots.
            while self.history.len() >= self.history_cap {
                self.drop_oldest();
            }
            let stamp = self.charge.add(history_cost(&kept));
            self.history.push_back((
                NumberedEvent {
                    id: self.newest,
                    body: kept,
                },
                size,
                stamp,
            ));
            self.history_bytes += size;
            while !self.history.is_empty()
                && (self.history.len() > self.history_cap
                    || self.history_bytes > self.history_total_bytes)
            {
                self.drop_oldest();
            }
            retained::settle(self);
        }
        if let Some(live) = &self.live {
            if live.receiver_count() == 0 {
                self.live = None;
            } else {
                let _ = live.send(published);
            }
        }
        self.newest
    }

    /// The kept event right after `id`, when the history still holds every event after it.
    fn after(&self, id: u64) -> Option<NumberedEvent> {
        if id < self.dropped {
            return None;
        }
        let index = self.history.partition_point(|(p, _, _)| p.id <= id);
        self.history.get(index).map(|(p, _, _)| p.clone())
    }

    /// Bytes the history holds.
    #[cfg(test)]
    fn history_bytes(&self) -> usize {
        self.history_bytes
    }
}

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

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
