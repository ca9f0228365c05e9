//! Numbered session events for the human side (`lap.md` §6.6): `state` after each commit, `log`
//! for each log entry, `confirm` for each proposal and status change, with replay from a
//! known id.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_schema::protocol::{ConfirmEntry, LogEntry};
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::diff::diff;

/// Capacity of the live channel; a subscriber that falls further behind gets a fresh snapshot.
const LIVE_CAPACITY: usize = 1024;

/// What a published event carries.
#[derive(Debug, Clone)]
pub enum EventBody {
    /// The redacted state after a commit.
    State(Arc<Value>),
    /// A new log entry.
    Log(LogEntry),
    /// A proposal or a status change.
    Confirm(ConfirmEntry),
}

#[derive(Debug, Clone)]
struct Published {
    id: u64,
    body: EventBody,
}

/// One event as a subscriber receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEvent {
    /// The session's event id (the snapshot's events share the newest id).
    pub id: u64,
    /// `state`, `log` or `confirm`.
    pub name: &'static str,
    /// The event's JSON data.
    pub data: Value,
}

/// The publishing side: numbers events and keeps the recent history.
#[derive(Debug)]
pub struct EventHub {
    newest: u64,
    history: VecDeque<Published>,
    history_cap: usize,
    latest_state: Arc<Value>,
    /// Created by the first subscriber and dropped when the last one is gone, so an idle
    /// session without a console holds no channel buffer.
    live: Option<broadcast::Sender<Published>>,
    closed: bool,
}

impl EventHub {
    /// A hub keeping `history_cap` events, starting from `initial_state`.
    pub fn new(history_cap: usize, initial_state: Arc<Value>) -> Self {
        EventHub {
            newest: 0,
            history: VecDeque::new(),
            history_cap: history_cap.max(1),
            latest_state: initial_state,
            live: None,
            closed: false,
        }
    }

    /// The newest event id (0 before the first event).
    pub fn newest_id(&self) -> u64 {
        self.newest
    }

    /// Ends every subscription (the session closed).
    pub fn close(&mut self) {
        // Subscribers hold receivers of the sender: dropping it ends their streams.
        self.live = None;
        self.closed = true;
    }

    /// Publishes an event and returns its id.
    pub fn publish(&mut self, body: EventBody) -> u64 {
        self.newest += 1;
        if let EventBody::State(s) = &body {
            self.latest_state = s.clone();
        }
        // History keeps `state` events without their data: a replay sends the current state.
        let kept = match &body {
            EventBody::State(_) => EventBody::State(Arc::new(Value::Null)),
            other => other.clone(),
        };
        if self.history.len() == self.history_cap {
            self.history.pop_front();
        }
        self.history.push_back(Published {
            id: self.newest,
            body: kept,
        });
        if let Some(live) = &self.live {
            if live.receiver_count() == 0 {
                self.live = None;
            } else {
                let _ = live.send(Published {
                    id: self.newest,
                    body,
                });
            }
        }
        self.newest
    }

    /// Opens a subscription after `last_event_id` (the `Last-Event-ID` header or the
    /// `lastEventId` query parameter, as given). `pending` are the current pending entries,
    /// used when a snapshot has to be sent.
    pub fn subscribe(
        &mut self,
        last_event_id: Option<&str>,
        pending: Vec<ConfirmEntry>,
    ) -> Subscription {
        let live = if self.closed {
            // The sender is dropped at once: the subscription ends after its initial events.
            broadcast::channel(1).0.subscribe()
        } else {
            self.live
                .get_or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
                .subscribe()
        };
        let mut initial = VecDeque::new();
        let replay_from = last_event_id
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|&l| l <= self.newest)
            .filter(|&l| {
                // Every event in l+1 ..= newest must still be kept.
                l == self.newest || self.history.front().is_some_and(|f| f.id <= l + 1)
            });
        let mut last_state_sent = None;
        match replay_from {
            Some(l) => {
                let missed: Vec<&Published> = self.history.iter().filter(|p| p.id > l).collect();
                let newest_state = missed
                    .iter()
                    .filter(|p| matches!(p.body, EventBody::State(_)))
                    .map(|p| p.id)
                    .max();
                for p in missed {
                    match &p.body {
                        EventBody::State(_) if Some(p.id) == newest_state => {
                            initial.push_back(SessionEvent {
                                id: p.id,
                                name: "state",
                                data: json!({ "state": *self.latest_state }),
                            });
                            last_state_sent = Some(self.latest_state.clone());
                        }
                        EventBody::State(_) => {}
                        EventBody::Log(e) => initial.push_back(log_event(p.id, e)),
                        EventBody::Confirm(e) => initial.push_back(confirm_event(p.id, e)),
                    }
                }
            }
            None => {
                initial.push_back(SessionEvent {
                    id: self.newest,
                    name: "state",
                    data: json!({ "state": *self.latest_state, "snapshot": true }),
                });
                last_state_sent = Some(self.latest_state.clone());
                for e in &pending {
                    initial.push_back(confirm_event(self.newest, e));
                }
            }
        }
        Subscription {
            initial,
            live,
            last_id: self.newest,
            last_state_sent,
        }
    }
}

fn log_event(id: u64, e: &LogEntry) -> SessionEvent {
    SessionEvent {
        id,
        name: "log",
        data: serde_json::to_value(e).unwrap_or(Value::Null),
    }
}

fn confirm_event(id: u64, e: &ConfirmEntry) -> SessionEvent {
    SessionEvent {
        id,
        name: "confirm",
        data: serde_json::to_value(e).unwrap_or(Value::Null),
    }
}

/// A live view of a session's events. Ends (`None`) when the session closes.
#[derive(Debug)]
pub struct Subscription {
    initial: VecDeque<SessionEvent>,
    live: broadcast::Receiver<Published>,
    last_id: u64,
    last_state_sent: Option<Arc<Value>>,
}

impl Subscription {
    /// The next event, or `None` once the session is closed.
    pub async fn next(&mut self) -> Option<SessionEvent> {
        if let Some(e) = self.initial.pop_front() {
            return Some(e);
        }
        loop {
            match self.live.recv().await {
                Ok(p) if p.id <= self.last_id => continue,
                Ok(p) => {
                    self.last_id = p.id;
                    return Some(self.render(p));
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    fn render(&mut self, p: Published) -> SessionEvent {
        match p.body {
            EventBody::State(state) => {
                let data = match &self.last_state_sent {
                    Some(prev) => json!({ "state": *state, "stateDiff": diff(prev, &state) }),
                    None => json!({ "state": *state }),
                };
                self.last_state_sent = Some(state);
                SessionEvent {
                    id: p.id,
                    name: "state",
                    data,
                }
            }
            EventBody::Log(e) => log_event(p.id, &e),
            EventBody::Confirm(e) => confirm_event(p.id, &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::activity::entry;
    use agent_schema::protocol::LogKind;

    fn state(n: i64) -> EventBody {
        EventBody::State(Arc::new(json!({ "count": n })))
    }

    fn narrate(hub: &mut EventHub, at: u64) -> u64 {
        hub.publish(EventBody::Log(entry(LogKind::Narrate, at)))
    }

    #[tokio::test]
    async fn replay_sends_missed_logs_and_one_current_state() {
        let mut hub = EventHub::new(256, Arc::new(json!({"count":0})));
        hub.publish(state(1));
        let n = narrate(&mut hub, 1);
        narrate(&mut hub, 2);
        narrate(&mut hub, 3);
        narrate(&mut hub, 4);
        hub.publish(state(2));
        hub.publish(state(3));
        let mut sub = hub.subscribe(Some(&n.to_string()), vec![]);
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(sub.next().await.unwrap());
        }
        let names: Vec<_> = got.iter().map(|e| e.name).collect();
        assert_eq!(names, vec!["log", "log", "log", "state"]);
        let ids: Vec<_> = got.iter().map(|e| e.id).collect();
        assert_eq!(ids, vec![n + 1, n + 2, n + 3, n + 5]);
        assert_eq!(got[3].data, json!({"state":{"count":3}}));
    }

    #[tokio::test]
    async fn equal_id_sends_nothing_until_the_next_event() {
        let mut hub = EventHub::new(256, Arc::new(json!({"count":0})));
        let h = hub.publish(state(1));
        let mut sub = hub.subscribe(Some(&h.to_string()), vec![]);
        hub.publish(state(2));
        let e = sub.next().await.unwrap();
        assert_eq!(e.id, h + 1);
        // First state on this connection: no diff.
        assert_eq!(e.data, json!({"state":{"count":2}}));
        hub.publish(state(5));
        let e = sub.next().await.unwrap();
        assert_eq!(
            e.data,
            json!({"state":{"count":5},"stateDiff":[{"op":"replace","path":"/count","value":5}]})
        );
    }

    #[tokio::test]
    async fn too_old_bad_or_future_ids_get_a_snapshot() {
        let mut hub = EventHub::new(4, Arc::new(json!({"count":0})));
        for i in 0..10 {
            narrate(&mut hub, i);
        }
        for last in [Some("1"), Some("abc"), Some("99"), None] {
            let mut sub = hub.subscribe(last, vec![]);
            let e = sub.next().await.unwrap();
            assert_eq!(e.name, "state");
            assert_eq!(e.id, 10);
            assert_eq!(e.data["snapshot"], json!(true));
        }
        // Still within the kept history: replay.
        let mut sub = hub.subscribe(Some("7"), vec![]);
        assert_eq!(sub.next().await.unwrap().id, 8);
    }
}
