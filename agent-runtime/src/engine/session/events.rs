//! Numbered session events for the human side (`docs/lap.md` §6.6): `state` after each commit, `log`
//! for each log entry, `confirm` for each proposal and status change, with replay from a
//! known id.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;
use tea_agent_schema::protocol::ConfirmEntry;
use tokio::sync::broadcast;

use super::retained::{self, RetainedRing, RingCharge};
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

mod subscription;

pub use subscription::Subscription;
pub(crate) use subscription::{resume_point, subscribe, subscribe_resumed};

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
