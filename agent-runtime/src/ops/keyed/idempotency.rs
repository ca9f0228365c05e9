//! `idempotencyKey` on `/message` (`docs/lap.md` §5.7): a retried call within 10 minutes gets the
//! first call's answer, byte for byte, without dispatching again.
//!
//! Records are bounded per record (key and message) and per token (bytes, answers included);
//! expired records are dropped by a periodic sweep owned by the store, not only on the next
//! keyed call.

use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::clock::SharedClock;
use crate::config::{json_len, HostConfig, OverBudget};
use crate::ops::reply::StoredAnswer;

/// How long a key stays bound to its first answer.
pub const IDEMPOTENCY_WINDOW: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// [`IDEMPOTENCY_WINDOW`] in the clock's milliseconds.
pub(crate) const WINDOW_MS: u64 = IDEMPOTENCY_WINDOW.as_millis() as u64;
/// Records kept per token; one more drops the oldest.
const MAX_RECORDS_PER_TOKEN: usize = 1024;

/// One key's record.
#[derive(Debug)]
pub(crate) struct Record {
    created_at: u64,
    msg: Value,
    /// Bytes of the key and the message.
    request_bytes: usize,
    answer: watch::Receiver<Option<StoredAnswer>>,
}

impl Record {
    /// Whether `msg` is JSON-equal to the first call's message.
    pub(crate) fn same_message(&self, msg: &Value) -> bool {
        &self.msg == msg
    }

    /// Waits for the first call's answer (`None` if the first call died without one).
    pub(crate) async fn answer(&self) -> Option<StoredAnswer> {
        let mut rx = self.answer.clone();
        let result = rx.wait_for(Option::is_some).await;
        result.ok().and_then(|a| a.clone())
    }

    /// Bytes the record holds: key, message and (once there) the answer.
    fn bytes(&self) -> usize {
        self.request_bytes + self.answer.borrow().as_ref().map_or(0, StoredAnswer::bytes)
    }
}

/// What a call with a key is.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The first call: it must store its answer through the sender.
    First(watch::Sender<Option<StoredAnswer>>),
    /// A repeat of a live record.
    Repeat(Arc<Record>),
}

/// One token's live records, oldest first, each under its idempotency key.
type TokenRecords = VecDeque<(String, Arc<Record>)>;
type Records = Mutex<HashMap<String, TokenRecords>>;

/// Aborts the sweep task when the store goes.
#[derive(Debug)]
struct Sweeper(tokio::task::JoinHandle<()>);

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Records per token.
pub(crate) struct IdempotencyStore {
    by_token: Arc<Records>,
    clock: SharedClock,
    record_bytes: usize,
    token_bytes: usize,
    sweep_every: Duration,
    /// Started by the first claim (inside the runtime); stopped when the store is dropped.
    sweeper: OnceLock<Sweeper>,
}

impl std::fmt::Debug for IdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyStore")
            .field("record_bytes", &self.record_bytes)
            .field("token_bytes", &self.token_bytes)
            .finish_non_exhaustive()
    }
}

/// Drops every expired record, and the tokens left without any.
fn sweep(records: &Records, now: u64) {
    let mut map = records.lock();
    for list in map.values_mut() {
        list.retain(|(_, r)| r.created_at + WINDOW_MS > now);
    }
    map.retain(|_, list| !list.is_empty());
}

impl IdempotencyStore {
    /// A store with the budgets and clock of `config`.
    pub(crate) fn new(config: &HostConfig) -> Self {
        IdempotencyStore {
            by_token: Arc::default(),
            clock: config.clock.clone(),
            record_bytes: config.budgets.idempotency_record_bytes,
            token_bytes: config.budgets.idempotency_token_bytes,
            sweep_every: config
                .budgets
                .idempotency_sweep
                .max(Duration::from_millis(1)),
            sweeper: OnceLock::new(),
        }
    }

    fn start_sweeper(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.sweeper.get_or_init(|| {
            let records: Weak<Records> = Arc::downgrade(&self.by_token);
            let clock = self.clock.clone();
            let every = self.sweep_every;
            Sweeper(tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Some(records) = records.upgrade() else {
                        return;
                    };
                    sweep(&records, clock.now_ms());
                }
            }))
        });
    }

    /// Claims `key` for `tid` at `now`: 413 when the key and message are over the record
    /// budget, 429 when the token's records are at their bytes budget.
    pub(crate) fn claim(
        &self,
        tid: &str,
        key: &str,
        msg: &Value,
        now: u64,
    ) -> Result<Claim, OverBudget> {
        self.start_sweeper();
        let mut map = self.by_token.lock();
        let records = map.entry(tid.to_string()).or_default();
        records.retain(|(_, r)| r.created_at + WINDOW_MS > now);
        if let Some((_, r)) = records.iter().find(|(k, _)| k == key) {
            return Ok(Claim::Repeat(r.clone()));
        }
        let request_bytes = key.len() + json_len(msg);
        if request_bytes > self.record_bytes {
            if records.is_empty() {
                map.remove(tid);
            }
            return Err(OverBudget::too_large(
                "the idempotency record (key and msg)",
                request_bytes,
                self.record_bytes,
            ));
        }
        let held: usize = records.iter().map(|(_, r)| r.bytes()).sum();
        if held + request_bytes > self.token_bytes {
            let retry = records
                .front()
                .map(|(_, r)| (r.created_at + WINDOW_MS).saturating_sub(now));
            return Err(OverBudget::full(
                "this token's idempotency records",
                held + request_bytes,
                self.token_bytes,
                retry,
            ));
        }
        let (tx, rx) = watch::channel(None);
        records.push_back((
            key.to_string(),
            Arc::new(Record {
                created_at: now,
                msg: msg.clone(),
                request_bytes,
                answer: rx,
            }),
        ));
        if records.len() > MAX_RECORDS_PER_TOKEN {
            records.pop_front();
        }
        Ok(Claim::First(tx))
    }

    /// Forgets every record of `tid` (revoked, or its session closed).
    pub(crate) fn forget_token(&self, tid: &str) {
        self.by_token.lock().remove(tid);
    }

    /// Records kept in all.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_token.lock().values().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use serde_json::json;

    fn store() -> IdempotencyStore {
        IdempotencyStore::new(&HostConfig::default())
    }

    #[tokio::test]
    async fn repeats_get_the_first_answer_within_the_window() {
        let store = store();
        let msg = json!({"type":"inc"});
        let Claim::First(tx) = store.claim("t", "k1", &msg, 0).unwrap() else {
            panic!("first call expected")
        };
        let Claim::Repeat(rec) = store.claim("t", "k1", &msg, 10).unwrap() else {
            panic!("repeat expected")
        };
        assert!(rec.same_message(&msg));
        assert!(!rec.same_message(&json!({"type":"dec"})));
        let answer = StoredAnswer {
            status: StatusCode::OK,
            body: "{}".into(),
            headers: vec![],
        };
        tx.send_replace(Some(answer.clone()));
        assert_eq!(rec.answer().await, Some(answer));
        // Another token is a different scope.
        assert!(matches!(
            store.claim("u", "k1", &msg, 10),
            Ok(Claim::First(_))
        ));
        // After the window the key is free again.
        assert!(matches!(
            store.claim("t", "k1", &msg, WINDOW_MS),
            Ok(Claim::First(_))
        ));
    }

    #[tokio::test]
    async fn a_dead_first_call_answers_none() {
        let store = store();
        let msg = json!({"type":"inc"});
        let Claim::First(tx) = store.claim("t", "k", &msg, 0).unwrap() else {
            panic!()
        };
        let Claim::Repeat(rec) = store.claim("t", "k", &msg, 1).unwrap() else {
            panic!()
        };
        drop(tx);
        assert_eq!(rec.answer().await, None);
    }

    #[test]
    fn at_most_1024_records_per_token() {
        let store = store();
        let msg = json!({"type":"inc"});
        for i in 0..=MAX_RECORDS_PER_TOKEN {
            let _ = store.claim("t", &format!("k{i}"), &msg, 0);
        }
        // k0 was dropped: claiming it again is a first call.
        assert!(matches!(
            store.claim("t", "k0", &msg, 0),
            Ok(Claim::First(_))
        ));
    }

    #[test]
    fn records_are_bounded_in_bytes() {
        let mut config = HostConfig::default();
        config.budgets.idempotency_record_bytes = 1000;
        config.budgets.idempotency_token_bytes = 3000;
        let store = IdempotencyStore::new(&config);
        let big = json!({"type":"x","s":"y".repeat(2000)});
        let err = store.claim("t", "k", &big, 0).unwrap_err();
        assert_eq!(err.limit, 1000);
        assert!(!err.full);
        assert_eq!(store.len(), 0);
        let msg = json!({"type":"x","s":"y".repeat(900)});
        for i in 0..3 {
            let Ok(Claim::First(tx)) = store.claim("t", &format!("k{i}"), &msg, i) else {
                panic!("first call expected")
            };
            tx.send_replace(Some(StoredAnswer {
                status: StatusCode::OK,
                body: "{}".into(),
                headers: vec![],
            }));
        }
        let err = store.claim("t", "k9", &msg, 10).unwrap_err();
        assert!(err.full);
        assert_eq!(err.limit, 3000);
        assert_eq!(err.retry_after_ms, Some(WINDOW_MS - 10));
        // Another token has its own budget.
        assert!(store.claim("u", "k9", &msg, 10).is_ok());
    }

    #[tokio::test]
    async fn expired_records_are_swept_on_a_timer() {
        let clock = Arc::new(crate::clock::ManualClock::new(0));
        let mut config = HostConfig {
            clock: clock.clone(),
            ..HostConfig::default()
        };
        config.budgets.idempotency_sweep = Duration::from_millis(20);
        let store = IdempotencyStore::new(&config);
        let _ = store.claim("t", "k", &json!({"type":"inc"}), 0).unwrap();
        assert_eq!(store.len(), 1);
        clock.set(WINDOW_MS);
        // A 20 ms sweep on a loaded machine: wait for it (at most 10 s), never for a fixed time.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while store.len() != 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(store.len(), 0);
        // The sweep task ends with the store.
        let weak = Arc::downgrade(&store.by_token);
        drop(store);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while weak.upgrade().is_some() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(weak.upgrade().is_none());
    }
}
