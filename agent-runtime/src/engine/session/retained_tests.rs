//! Tests of `retained.rs`.

use super::*;
use std::collections::VecDeque;

struct Ring {
    entries: VecDeque<(u64, usize)>,
    charge: RingCharge,
}

impl RetainedRing for Ring {
    fn oldest_stamp(&self) -> Option<u64> {
        self.entries.front().map(|e| e.0)
    }
    fn drop_oldest(&mut self) {
        if let Some((_, bytes)) = self.entries.pop_front() {
            self.charge.sub(bytes);
        }
    }
    fn charge(&mut self) -> &mut RingCharge {
        &mut self.charge
    }
}

fn ring(retained: &Retained) -> Arc<Mutex<Ring>> {
    let ring = Arc::new(Mutex::new(Ring {
        entries: VecDeque::new(),
        charge: retained.charge(),
    }));
    attach(&ring);
    ring
}

fn push(ring: &Arc<Mutex<Ring>>, bytes: usize) {
    let mut r = ring.lock();
    let stamp = r.charge.add(bytes);
    r.entries.push_back((stamp, bytes));
    settle(&mut *r);
}

fn held(ring: &Arc<Mutex<Ring>>) -> Vec<usize> {
    ring.lock().entries.iter().map(|e| e.1).collect()
}

#[test]
fn the_oldest_entries_across_rings_go_first() {
    let retained = Retained::new(100);
    let (a, b) = (ring(&retained), ring(&retained));
    push(&a, 30); // a1
    push(&b, 30); // b1
    push(&a, 30); // a2
    assert_eq!(retained.total(), 90);
    push(&b, 30); // b2: over by 20, a1 goes
    assert_eq!((held(&a), held(&b)), (vec![30], vec![30, 30]));
    push(&b, 50); // b3: b1 then a2 go
    assert_eq!((held(&a), held(&b)), (vec![], vec![30, 50]));
    assert_eq!(retained.total(), 80);
    // A ring that dropped entries on its own keeps a stale key, brought up to date.
    {
        let mut r = b.lock();
        r.drop_oldest();
    }
    push(&a, 60); // total 110: b3 (the oldest now) goes
    assert_eq!((held(&a), held(&b)), (vec![60], vec![]));
    // A dropped ring refunds its bytes and leaves the order.
    drop(a);
    assert_eq!(retained.total(), 0);
    assert!(retained.shared.order().len() <= 1);
    push(&b, 200); // over the budget on its own: dropped too
    assert_eq!(held(&b), Vec::<usize>::new());
    assert_eq!(retained.total(), 0);
}

/// A ring locked elsewhere after its own push settled (its session is still busy with it)
/// is passed over: the next-oldest entries go, and the push that went over the budget
/// leaves the total within it (it used to stop there and stay over the budget for good).
#[test]
fn a_ring_locked_elsewhere_is_passed_over() {
    let retained = Retained::new(100);
    let (a, b, c) = (ring(&retained), ring(&retained), ring(&retained));
    push(&b, 30); // b1, the oldest
    push(&c, 30); // c1
    push(&c, 30); // c2
    let busy = b.lock();
    push(&a, 30); // total 120: b1 is out of reach, c1 goes
    assert_eq!(retained.total(), 90);
    drop(busy);
    assert_eq!(
        (held(&a), held(&b), held(&c)),
        (vec![30], vec![30], vec![30])
    );
    // b kept its place: it is the oldest and goes first now.
    push(&a, 20);
    assert_eq!(
        (held(&a), held(&b), held(&c)),
        (vec![30, 20], vec![], vec![30])
    );
    assert_eq!(retained.total(), 80);
}

/// One session's rings together hold at most its share: past it, the session's own
/// oldest entries go (across its rings), never another session's.
#[test]
fn a_session_keeps_within_its_share() {
    let retained = Retained::with_share(1_000, 100);
    assert_eq!(retained.session_share(), 100);
    let other = ring(&retained);
    push(&other, 50); // another session's, the oldest of all
    let session = retained.session();
    let attached = |retained: &SessionRetained| {
        let ring = Arc::new(Mutex::new(Ring {
            entries: VecDeque::new(),
            charge: retained.charge(),
        }));
        attach(&ring);
        ring
    };
    let (a, b) = (attached(&session), attached(&session));
    push(&a, 40); // a1
    push(&b, 40); // b1
    push(&b, 40); // b2: the session holds 120, a1 (its oldest) goes
    assert_eq!((held(&a), held(&b)), (vec![], vec![40, 40]));
    push(&a, 30); // a2: 110, b1 goes
    assert_eq!((held(&a), held(&b)), (vec![30], vec![40]));
    // The other session kept its entry: the host is within its budget.
    assert_eq!(held(&other), vec![50]);
    assert_eq!(retained.total(), 120);
    // A session's entries refunded when its rings go.
    drop((a, b));
    assert_eq!(retained.total(), 50);
}

#[test]
fn costs_follow_the_allocator() {
    assert_eq!(block(0), 0);
    assert_eq!(block(1), 32);
    assert_eq!(block(24), 32);
    assert_eq!(block(25), 48);
    assert_eq!(
        text_cost(2_000, 40),
        block(2_016) + 40 + (block(2_016) + 40) / 4
    );
    assert_eq!(with_slack(100), 125);
    // A tree costs many times its text.
    let v = serde_json::json!({"a": [1, 2, {"b": "c"}], "d": "e"});
    assert!(
        value_cost(&v) > 4 * v.to_string().len(),
        "{}",
        value_cost(&v)
    );
}

/// What cannot be shed is charged and counted: the rings give way to it, oldest first, and
/// it is never dropped for the budget, even over it on its own.
#[test]
fn held_bytes_push_out_ring_entries_and_are_never_shed() {
    let retained = Retained::new(100);
    let (a, b) = (ring(&retained), ring(&retained));
    push(&a, 30); // a1
    push(&b, 30); // b1
    push(&a, 30); // a2
    let session = retained.session();
    let mut charge = session.held();
    charge.add(20); // 110: a1 goes
    assert_eq!((held(&a), held(&b)), (vec![30], vec![30]));
    assert_eq!((retained.total(), retained.held()), (80, 20));
    charge.set(90); // 150: b1 then a2 go
    assert_eq!((held(&a), held(&b)), (vec![], vec![]));
    assert_eq!((retained.total(), retained.held()), (90, 90));
    charge.set(150); // over the budget on its own: kept, counted
    assert_eq!(
        (retained.total(), retained.held(), charge.bytes()),
        (150, 150, 150)
    );
    push(&a, 10); // a ring's entry cannot stay while the held bytes are over the budget
    assert_eq!(held(&a), Vec::<usize>::new());
    charge.sub(100);
    assert_eq!(retained.total(), 50);
    drop(charge);
    assert_eq!((retained.total(), retained.held()), (0, 0));
}
