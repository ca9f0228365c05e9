//! What a host's sessions retain in all (`docs/stores.md` §Memory). Each session's rings (the
//! event history, the activity log, the recent commit patches, the transcript) are bounded in
//! bytes on their own; [`Retained`], one per host and handed to each session, bounds their sum
//! (`Budgets::retained_bytes`): when a push takes the total over it, the oldest entries across
//! every ring of every session give way first. One session's rings together hold at most its
//! share of the budget (`Retained::with_share`): past it, that session's own oldest entries
//! give way, not other sessions'.
//!
//! The bytes counted are what an entry costs on the heap, not its JSON length: the text rings
//! keep their entries as compact JSON text ([`text_cost`]: the text's allocation plus the
//! ring's slot), the commit ring its ops as trees ([`ops_cost`], an estimate of their
//! allocations). Every cost is then given the allocator's slack ([`with_slack`]): what glibc
//! keeps free between long-lived entries that it cannot reuse or return, a quarter of what
//! they take (measured: 62 MiB free in 57,691 chunks beside 258 MiB in use after 1,000 busy
//! counter sessions). So the budget bounds the memory the process holds for what sessions
//! retain, the allocator's chunks and free space between them included.
//!
//! Every ring holds a [`RingCharge`]: the bytes it holds (counted in the host's total) and its
//! place in the host's order of oldest entries, a map keyed by `(stamp of its oldest entry,
//! ring)`. A ring's key may be older than its oldest entry (it dropped entries on its own
//! since); a stale key is brought up to date when it reaches the front. A ring whose lock is
//! taken at that moment (it is being pushed to elsewhere) is passed over and the next-oldest
//! entries go instead: its holder may have settled already, so waiting for its push to settle
//! the total could leave it over the budget for good. A push thus leaves the total within the
//! budget unless every other ring holding entries is locked; the total exceeds the budget by
//! at most the entries being added at that instant.

use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// A ring of entries, oldest first, whose oldest can be dropped for the host's budget.
pub(crate) trait RetainedRing: Send + 'static {
    /// The stamp of the oldest entry, if any.
    fn oldest_stamp(&self) -> Option<u64>;
    /// Drops the oldest entry (refunding its bytes to the charge).
    fn drop_oldest(&mut self);
    /// The ring's charge.
    fn charge(&mut self) -> &mut RingCharge;
}

/// A ring as the host's order reaches it (through its lock).
trait Trim: Send + Sync {
    /// [`trim_ring`] on the ring, or `Busy` when its lock is taken.
    fn trim(&self, key: u64) -> Trimmed;
    /// The stamp of its oldest entry (`None`: empty, or its lock is taken).
    fn oldest(&self) -> Option<u64>;
    /// Drops its oldest entry when its stamp is `stamp`; whether it did.
    fn drop_at(&self, stamp: u64) -> bool;
}

impl<R: RetainedRing> Trim for Mutex<R> {
    fn trim(&self, key: u64) -> Trimmed {
        let Some(mut ring) = self.try_lock() else {
            return Trimmed::Busy;
        };
        trim_ring(&mut *ring, key)
    }

    fn oldest(&self) -> Option<u64> {
        self.try_lock()?.oldest_stamp()
    }

    fn drop_at(&self, stamp: u64) -> bool {
        let Some(mut ring) = self.try_lock() else {
            return false;
        };
        let here = ring.oldest_stamp() == Some(stamp);
        if here {
            ring.drop_oldest();
        }
        here
    }
}

/// What trimming a ring at its key did.
enum Trimmed {
    /// Its lock was taken: the key goes back and the round ends.
    Busy,
    /// The ring is empty or gone: its key goes.
    Empty,
    /// Its oldest entry went or was newer than the key: its key is now this stamp.
    Next(u64),
}

/// Drops the oldest entry of `ring` when its stamp is `key` (else only brings the key up to
/// date); keeps the ring's own record of its key.
fn trim_ring(ring: &mut dyn RetainedRing, key: u64) -> Trimmed {
    if ring.oldest_stamp() == Some(key) {
        ring.drop_oldest();
    }
    let next = ring.oldest_stamp();
    ring.charge().key = next;
    next.map_or(Trimmed::Empty, Trimmed::Next)
}

type Order = BTreeMap<(u64, u64), Weak<dyn Trim>>;

/// Bytes the allocator takes for a block of `n` bytes: glibc's chunk (an 8-byte header,
/// 16-byte steps, 32 bytes at least); 0 for nothing allocated.
pub(crate) fn block(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + 8).div_ceil(16).max(2) * 16
    }
}

/// `bytes` of long-lived entries and the allocator's free space they keep around them: a
/// quarter more. glibc hands out small chunks from pages it cannot return while one live
/// chunk remains, and entries shed oldest-first leave holes between younger ones that only
/// same-sized requests reuse; after 1,000 busy counter sessions (`cargo bench -p agent-tests
/// --bench busy_sessions`, `BUSY_INPROCESS=1`) it held 62 MiB free in 57,691 chunks beside
/// 258 MiB in use, which `malloc_trim` did not return.
pub(crate) fn with_slack(bytes: usize) -> usize {
    bytes + bytes / 4
}

/// What an entry kept as `len` bytes of text (a `Box<str>`, or an `Arc<str>` and its two
/// counts) costs, with its ring's slot of `slot` bytes, the allocator's slack included.
pub(crate) fn text_cost(len: usize, slot: usize) -> usize {
    with_slack(block(len + 16) + slot)
}

/// An estimate of the heap a JSON tree holds (its strings, arrays and maps; its own node is
/// its parent's).
pub(crate) fn value_cost(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    const NODE: usize = std::mem::size_of::<Value>();
    match value {
        Value::String(s) => block(s.capacity()),
        Value::Array(a) => block(a.capacity() * NODE) + a.iter().map(value_cost).sum::<usize>(),
        Value::Object(m) => {
            // An insertion-ordered map: its entries (hash, key, value) and its index table.
            let entries = m.len() * (8 + std::mem::size_of::<String>() + NODE);
            let index = m.len().next_power_of_two() * 9 + 16;
            block(entries)
                + block(index)
                + m.iter()
                    .map(|(k, v)| block(k.capacity()) + value_cost(v))
                    .sum::<usize>()
        }
        _ => 0,
    }
}

/// An estimate of the heap a commit's ops hold as the commit ring keeps them (an
/// `Arc<[PatchOp]>`), with its slot of `slot` bytes, the allocator's slack included.
pub(crate) fn ops_cost(ops: &[crate::algo::diff::PatchOp], slot: usize) -> usize {
    use crate::algo::diff::PatchOp;
    let each = ops
        .iter()
        .map(|op| match op {
            PatchOp::Add { path, value } | PatchOp::Replace { path, value } => {
                block(path.capacity()) + value_cost(value)
            }
            PatchOp::Remove { path } => block(path.capacity()),
        })
        .sum::<usize>();
    with_slack(block(16 + std::mem::size_of_val(ops)) + each + slot)
}

struct Shared {
    budget: usize,
    /// What one session's rings hold at most together.
    share: usize,
    total: AtomicUsize,
    /// The part of `total` that cannot be shed ([`HeldCharge`]s).
    held: AtomicUsize,
    next_stamp: AtomicU64,
    next_ring: AtomicU64,
    order: Mutex<Order>,
}

impl Shared {
    fn order(&self) -> MutexGuard<'_, Order> {
        self.order.lock()
    }
}

/// The bytes a host's sessions retain in their rings, within one budget. Cheap to clone
/// (shared).
#[derive(Clone)]
pub(crate) struct Retained {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Retained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retained")
            .field("budget", &self.shared.budget)
            .field("total", &self.total())
            .finish()
    }
}

impl Retained {
    /// Rings holding at most `budget` bytes in all, a session's rings any part of it.
    pub(crate) fn new(budget: usize) -> Self {
        Self::with_share(budget, budget)
    }

    /// Rings holding at most `budget` bytes in all, a session's rings at most `share` of it.
    pub(crate) fn with_share(budget: usize, share: usize) -> Self {
        Retained {
            shared: Arc::new(Shared {
                budget,
                share,
                total: AtomicUsize::new(0),
                held: AtomicUsize::new(0),
                next_stamp: AtomicU64::new(0),
                next_ring: AtomicU64::new(0),
                order: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// No budget in all (unit tests of one ring).
    pub(crate) fn unbounded() -> Self {
        Self::new(usize::MAX)
    }

    /// Bytes the rings hold now.
    pub(crate) fn total(&self) -> usize {
        self.shared.total.load(Ordering::Relaxed)
    }

    /// The part of [`Retained::total`] that cannot be shed: pending confirmations, running
    /// work, idempotency records in flight or shed to their key ([`HeldCharge`]).
    pub(crate) fn held(&self) -> usize {
        self.shared.held.load(Ordering::Relaxed)
    }

    /// What one session's rings may hold together.
    #[cfg(test)]
    pub(crate) fn session_share(&self) -> usize {
        self.shared.share
    }

    /// The account of a new session: its rings' charges share its total.
    pub(crate) fn session(&self) -> SessionRetained {
        SessionRetained {
            shared: self.shared.clone(),
            account: Arc::new(Account {
                total: AtomicUsize::new(0),
                rings: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The charge of a new ring, a session of its own.
    pub(crate) fn charge(&self) -> RingCharge {
        self.session().charge()
    }
}

/// One session's part of the host's total: what its rings hold together, and the rings.
struct Account {
    total: AtomicUsize,
    /// The session's rings (by id), once attached.
    rings: Mutex<Vec<(u64, Weak<dyn Trim>)>>,
}

/// A session's account, handing out its rings' charges.
pub(crate) struct SessionRetained {
    shared: Arc<Shared>,
    account: Arc<Account>,
}

impl SessionRetained {
    /// The charge of a new ring of this session.
    pub(crate) fn charge(&self) -> RingCharge {
        RingCharge {
            shared: self.shared.clone(),
            account: self.account.clone(),
            id: self.shared.next_ring.fetch_add(1, Ordering::Relaxed),
            bytes: 0,
            key: None,
            ring: None,
        }
    }

    /// A charge of this session for what it holds and cannot shed.
    pub(crate) fn held(&self) -> HeldCharge {
        HeldCharge {
            shared: self.shared.clone(),
            account: self.account.clone(),
            bytes: 0,
        }
    }
}

/// Bytes a session holds that cannot be shed for the budget (its pending confirmations, its
/// running work, idempotency records still in flight or shed to their key): counted in the
/// host's total (and [`Retained::held`]) and the session's account, so the rings give way to
/// them, oldest entries first, as to any entry. Dropping it refunds its bytes.
pub(crate) struct HeldCharge {
    shared: Arc<Shared>,
    account: Arc<Account>,
    bytes: usize,
}

impl std::fmt::Debug for HeldCharge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldCharge")
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl HeldCharge {
    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Holds `bytes` now instead of what it held; more than before sheds the rings' oldest
    /// entries while the host is over its budget (rings locked elsewhere, the caller's own
    /// included, passed over).
    pub(crate) fn set(&mut self, bytes: usize) {
        if bytes >= self.bytes {
            self.add(bytes - self.bytes);
        } else {
            self.sub(self.bytes - bytes);
        }
    }

    /// Holds `bytes` more (see [`HeldCharge::set`]).
    pub(crate) fn add(&mut self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.bytes += bytes;
        self.shared.held.fetch_add(bytes, Ordering::Relaxed);
        self.shared.total.fetch_add(bytes, Ordering::Relaxed);
        self.account.total.fetch_add(bytes, Ordering::Relaxed);
        shed(&self.shared, None);
    }

    /// Holds `bytes` less.
    pub(crate) fn sub(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.shared.held.fetch_sub(bytes, Ordering::Relaxed);
        self.shared.total.fetch_sub(bytes, Ordering::Relaxed);
        self.account.total.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for HeldCharge {
    fn drop(&mut self) {
        self.sub(self.bytes);
    }
}

/// A ring's part of the host's total: its bytes and its place in the order of oldest entries.
/// Dropping it (with its ring) refunds its bytes.
pub(crate) struct RingCharge {
    shared: Arc<Shared>,
    account: Arc<Account>,
    id: u64,
    bytes: usize,
    /// The ring's key in the order (the stamp of its oldest entry or older), while it has one.
    key: Option<u64>,
    /// The ring itself, once [`attach`]ed.
    ring: Option<Weak<dyn Trim>>,
}

impl std::fmt::Debug for RingCharge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingCharge")
            .field("id", &self.id)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl RingCharge {
    /// Counts a new entry of `bytes`; answers its stamp (entries are stamped in the order
    /// they are added, across all rings).
    pub(crate) fn add(&mut self, bytes: usize) -> u64 {
        let stamp = self.shared.next_stamp.fetch_add(1, Ordering::Relaxed);
        self.bytes += bytes;
        self.shared.total.fetch_add(bytes, Ordering::Relaxed);
        self.account.total.fetch_add(bytes, Ordering::Relaxed);
        if self.key.is_none() {
            if let Some(ring) = &self.ring {
                self.shared.order().insert((stamp, self.id), ring.clone());
                self.key = Some(stamp);
            }
        }
        stamp
    }

    /// Refunds a dropped entry of `bytes`.
    pub(crate) fn sub(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.shared.total.fetch_sub(bytes, Ordering::Relaxed);
        self.account.total.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for RingCharge {
    fn drop(&mut self) {
        self.shared.total.fetch_sub(self.bytes, Ordering::Relaxed);
        self.account.total.fetch_sub(self.bytes, Ordering::Relaxed);
        self.account.rings.lock().retain(|(id, _)| *id != self.id);
        if let Some(key) = self.key {
            self.shared.order().remove(&(key, self.id));
        }
    }
}

/// Puts the ring behind `ring` in its host's order: its entries can then be dropped for the
/// budget by other rings' pushes.
pub(crate) fn attach<R: RetainedRing>(ring: &Arc<Mutex<R>>) {
    let weak: Weak<dyn Trim> = Arc::downgrade(ring) as Weak<Mutex<R>>;
    let mut guard = ring.lock();
    let oldest = guard.oldest_stamp();
    let charge = guard.charge();
    if let Some(stamp) = oldest.filter(|_| charge.key.is_none()) {
        charge
            .shared
            .order()
            .insert((stamp, charge.id), weak.clone());
        charge.key = Some(stamp);
    }
    charge.account.rings.lock().push((charge.id, weak.clone()));
    charge.ring = Some(weak);
}

/// After a push to `ring` (locked by the caller): while the host's total is over its budget,
/// drops the oldest entries across all rings, `ring`'s own included; rings locked elsewhere
/// are passed over (and keep their place).
pub(crate) fn settle(ring: &mut dyn RetainedRing) {
    let shared = ring.charge().shared.clone();
    within_share(ring, shared.share);
    shed(&shared, Some(ring));
}

/// While the host's total is over its budget, drops the oldest entries across all rings
/// (`own`, locked by the caller, included); rings locked elsewhere are passed over.
fn shed(shared: &Shared, mut own: Option<&mut dyn RetainedRing>) {
    let own_id = own.as_mut().map(|r| r.charge().id);
    let mut passed_over = Vec::new();
    while shared.total.load(Ordering::Relaxed) > shared.budget {
        let Some(((key, id), weak)) = shared.order().pop_first() else {
            break;
        };
        let trimmed = match own.as_mut().filter(|_| Some(id) == own_id) {
            Some(ring) => trim_ring(&mut **ring, key),
            None => match weak.upgrade() {
                Some(other) => other.trim(key),
                None => Trimmed::Empty,
            },
        };
        match trimmed {
            Trimmed::Busy => passed_over.push(((key, id), weak)),
            Trimmed::Empty => {}
            Trimmed::Next(next) => {
                shared.order().insert((next, id), weak);
            }
        }
    }
    if !passed_over.is_empty() {
        shared.order().extend(passed_over);
    }
}

/// While the session of `ring` (locked by the caller) holds more than `share`, drops the
/// oldest entry among its rings (those locked elsewhere passed over). Their keys in the
/// host's order may go stale (older than their oldest entry): they are brought up to date
/// when they reach the front.
fn within_share(ring: &mut dyn RetainedRing, share: usize) {
    let account = ring.charge().account.clone();
    if account.total.load(Ordering::Relaxed) <= share {
        return;
    }
    let own = ring.charge().id;
    let others: Vec<Arc<dyn Trim>> = account
        .rings
        .lock()
        .iter()
        .filter(|(id, _)| *id != own)
        .filter_map(|(_, weak)| weak.upgrade())
        .collect();
    while account.total.load(Ordering::Relaxed) > share {
        let mut oldest: Option<(u64, Option<&Arc<dyn Trim>>)> =
            ring.oldest_stamp().map(|stamp| (stamp, None));
        for other in &others {
            if let Some(stamp) = other.oldest() {
                if oldest.is_none_or(|(o, _)| stamp < o) {
                    oldest = Some((stamp, Some(other)));
                }
            }
        }
        match oldest {
            None => break,
            Some((_, None)) => ring.drop_oldest(),
            Some((stamp, Some(other))) => {
                if !other.drop_at(stamp) {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "retained_tests.rs"]
mod tests;
