//! `idempotencyKey` on `/message` (`docs/lap.md` §5.7): a retried call within 10 minutes gets the
//! first call's answer, byte for byte, without dispatching again.
//!
//! Records are bounded per record (key and message) and per token (bytes, answers included);
//! expired records are dropped by a periodic sweep owned by the store, not only on the next
//! keyed call.
//!
//! Each token's records are a ring of the host's budget of what sessions retain
//! (`engine/session/retained.rs`, `docs/stores.md` §Memory). A record is charged what it takes
//! on the heap. While its first call runs it cannot be shed (held bytes). Once answered it is
//! sheddable, oldest answer first, like any ring's entry: shedding keeps the key, its creation
//! time and a digest of its message, and drops the message and the answer. A repeat of a shed
//! record is answered 409 `conflict`, reason `answer-not-kept` (409 "different message" when
//! its message differs), never run again: the message was applied once and the key stays
//! bound until the window ends.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::clock::SharedClock;
use crate::config::{json_len, HostConfig, OverBudget};
use crate::engine::session::retained::{
    self, block, value_cost, with_slack, HeldCharge, Retained, RetainedRing, RingCharge,
};
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

/// A record whose message and answer were shed for the host's budget: its key stays bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShedRecord {
    digest: u64,
}

impl ShedRecord {
    /// Whether `msg` is (as far as a 64-bit digest tells) JSON-equal to the first call's.
    pub(crate) fn same_message(&self, msg: &Value) -> bool {
        digest(msg) == self.digest
    }
}

/// A digest of a message that JSON-equal messages share (object keys in sorted order).
fn digest(msg: &Value) -> u64 {
    fn feed(v: &Value, h: &mut std::collections::hash_map::DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.to_string()).hash(h),
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(a) => {
                (4u8, a.len()).hash(h);
                a.iter().for_each(|v| feed(v, h));
            }
            Value::Object(m) => {
                (5u8, m.len()).hash(h);
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    k.hash(h);
                    feed(&m[k], h);
                }
            }
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    feed(msg, &mut h);
    h.finish()
}

/// What a call with a key is.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The first call: it must store its answer through [`FirstCall::answer`].
    First(FirstCall),
    /// A repeat of a live record.
    Repeat(Arc<Record>),
    /// A repeat of a record whose answer was shed for the host's budget.
    Shed(ShedRecord),
}

/// A first call's hold on its record: hands its answer to the repeats and charges it.
#[derive(Debug)]
pub(crate) struct FirstCall {
    tx: watch::Sender<Option<StoredAnswer>>,
    ring: Weak<Mutex<TokenRing>>,
    id: u64,
}

impl FirstCall {
    /// Stores the first call's answer: repeats get it, and the record, charged its answer
    /// too, becomes sheddable.
    pub(crate) fn answer(self, answer: StoredAnswer) {
        let answer_cost = with_slack(
            block(answer.body.len())
                + answer
                    .headers
                    .iter()
                    .map(|(k, v)| block(k.len()) + block(v.len()))
                    .sum::<usize>()
                + block(answer.headers.capacity() * std::mem::size_of::<(String, String)>()),
        );
        self.tx.send_replace(Some(answer));
        if let Some(ring) = self.ring.upgrade() {
            ring.lock().answered(self.id, answer_cost);
        }
    }
}

impl FirstCall {
    /// Gives the key back: the repeats waiting now get `answer`, and the record is forgotten,
    /// so the next call with the key is a first call again (`KeyOutcome::Released`).
    pub(crate) fn release(self, answer: StoredAnswer) {
        self.tx.send_replace(Some(answer));
        if let Some(ring) = self.ring.upgrade() {
            let mut ring = ring.lock();
            if let Some(index) = ring.records.iter().position(|k| k.id == self.id) {
                if let Some(kept) = ring.records.remove(index) {
                    ring.refund(&kept);
                }
            }
        }
    }
}

/// What a kept record is.
#[derive(Debug)]
enum State {
    /// Its first call runs: held, not sheddable.
    Running(Arc<Record>),
    /// Answered: sheddable, stamped in the host's order.
    Answered(Arc<Record>, u64),
    /// Shed: its key and the digest of its message, held.
    Shed(ShedRecord),
}

/// One record of a token.
#[derive(Debug)]
struct Kept {
    id: u64,
    key: String,
    created_at: u64,
    /// What it is charged now (held while running or shed, else sheddable).
    cost: usize,
    state: State,
}

impl Kept {
    /// Bytes counted against the token's budget (`idempotency_token_bytes`).
    fn bytes(&self) -> usize {
        match &self.state {
            State::Running(r) | State::Answered(r, _) => r.bytes(),
            State::Shed(_) => self.key.len(),
        }
    }
}

/// What a record shed to its key costs: its slot and its key.
fn shed_cost(key: &str) -> usize {
    with_slack(std::mem::size_of::<Kept>() + block(key.len()))
}

/// One token's live records, oldest first, and their charges.
#[derive(Debug)]
pub(crate) struct TokenRing {
    records: VecDeque<Kept>,
    /// The answered records, by stamp: the sheddable ones.
    answered: BTreeMap<u64, u64>,
    next_id: u64,
    charge: RingCharge,
    held: HeldCharge,
}

impl RetainedRing for TokenRing {
    fn oldest_stamp(&self) -> Option<u64> {
        self.answered.first_key_value().map(|(stamp, _)| *stamp)
    }

    fn drop_oldest(&mut self) {
        let Some((_, id)) = self.answered.pop_first() else {
            return;
        };
        let Some(kept) = self.records.iter_mut().find(|k| k.id == id) else {
            return;
        };
        let State::Answered(record, _) = &kept.state else {
            return;
        };
        let shed = ShedRecord {
            digest: digest(&record.msg),
        };
        self.charge.sub(kept.cost);
        kept.cost = shed_cost(&kept.key);
        kept.state = State::Shed(shed);
        self.held.add(kept.cost);
    }

    fn charge(&mut self) -> &mut RingCharge {
        &mut self.charge
    }
}

impl TokenRing {
    fn new(retained: &Retained) -> Arc<Mutex<Self>> {
        let account = retained.session();
        let ring = Arc::new(Mutex::new(TokenRing {
            records: VecDeque::new(),
            answered: BTreeMap::new(),
            next_id: 0,
            charge: account.charge(),
            held: account.held(),
        }));
        retained::attach(&ring);
        ring
    }

    /// Refunds and forgets `kept`.
    fn refund(&mut self, kept: &Kept) {
        match &kept.state {
            State::Answered(_, stamp) => {
                self.answered.remove(stamp);
                self.charge.sub(kept.cost);
            }
            State::Running(_) | State::Shed(_) => self.held.sub(kept.cost),
        }
    }

    /// Drops the records created before `now - WINDOW_MS`.
    fn expire(&mut self, now: u64) {
        while let Some(front) = self.records.front() {
            if front.created_at + WINDOW_MS > now {
                break;
            }
            let kept = self.records.pop_front().expect("front");
            self.refund(&kept);
        }
    }

    /// Record `id` was answered, its answer costing `answer_cost`: sheddable from now on.
    fn answered(&mut self, id: u64, answer_cost: usize) {
        let Some(index) = self.records.iter().position(|k| k.id == id) else {
            return;
        };
        let held = self.records[index].cost;
        let State::Running(record) = &self.records[index].state else {
            return;
        };
        let record = record.clone();
        self.held.sub(held);
        let cost = held + answer_cost;
        let stamp = self.charge.add(cost);
        self.answered.insert(stamp, id);
        let kept = &mut self.records[index];
        kept.cost = cost;
        kept.state = State::Answered(record, stamp);
        retained::settle(self);
    }
}

type Records = Mutex<HashMap<String, Arc<Mutex<TokenRing>>>>;

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
    retained: Retained,
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
    map.retain(|_, ring| {
        let mut ring = ring.lock();
        ring.expire(now);
        !ring.records.is_empty()
    });
}

impl IdempotencyStore {
    /// A store with the budgets and clock of `config`, charging the host's budget of what
    /// sessions retain through `retained`.
    pub(crate) fn new(config: &HostConfig, retained: Retained) -> Self {
        IdempotencyStore {
            by_token: Arc::default(),
            clock: config.clock.clone(),
            record_bytes: config.budgets.idempotency_record_bytes,
            token_bytes: config.budgets.idempotency_token_bytes,
            sweep_every: config
                .budgets
                .idempotency_sweep
                .max(Duration::from_millis(1)),
            retained,
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
        let token = map
            .entry(tid.to_string())
            .or_insert_with(|| TokenRing::new(&self.retained))
            .clone();
        let weak = Arc::downgrade(&token);
        let mut ring = token.lock();
        ring.expire(now);
        if let Some(kept) = ring.records.iter().find(|k| k.key == key) {
            return Ok(match &kept.state {
                State::Running(r) | State::Answered(r, _) => Claim::Repeat(r.clone()),
                State::Shed(shed) => Claim::Shed(*shed),
            });
        }
        let request_bytes = key.len() + json_len(msg);
        if request_bytes > self.record_bytes {
            if ring.records.is_empty() {
                map.remove(tid);
            }
            return Err(OverBudget::too_large(
                "the idempotency record (key and msg)",
                request_bytes,
                self.record_bytes,
            ));
        }
        let held: usize = ring.records.iter().map(Kept::bytes).sum();
        if held + request_bytes > self.token_bytes {
            let retry = ring
                .records
                .front()
                .map(|k| (k.created_at + WINDOW_MS).saturating_sub(now));
            return Err(OverBudget::full(
                "this token's idempotency records",
                held + request_bytes,
                self.token_bytes,
                retry,
            ));
        }
        let (tx, rx) = watch::channel(None);
        let msg = msg.clone();
        // The record and its channel, its key and its message.
        let cost = with_slack(
            std::mem::size_of::<Kept>()
                + block(16 + std::mem::size_of::<Record>())
                + block(160)
                + block(key.len())
                + value_cost(&msg),
        );
        let id = ring.next_id;
        ring.next_id += 1;
        ring.held.add(cost);
        ring.records.push_back(Kept {
            id,
            key: key.to_string(),
            created_at: now,
            cost,
            state: State::Running(Arc::new(Record {
                msg,
                request_bytes,
                answer: rx,
            })),
        });
        if ring.records.len() > MAX_RECORDS_PER_TOKEN {
            let oldest = ring.records.pop_front().expect("over the count");
            ring.refund(&oldest);
        }
        Ok(Claim::First(FirstCall { tx, ring: weak, id }))
    }

    /// Forgets every record of `tid` (revoked, or its session closed).
    pub(crate) fn forget_token(&self, tid: &str) {
        self.by_token.lock().remove(tid);
    }

    /// Records kept in all.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_token
            .lock()
            .values()
            .map(|r| r.lock().records.len())
            .sum()
    }
}

#[cfg(test)]
#[path = "idempotency_tests.rs"]
mod tests;
