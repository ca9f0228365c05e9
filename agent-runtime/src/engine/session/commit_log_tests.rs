//! The commit log's session side through its API: what each commit writes (a patch that
//! takes the stored state to the new one, a snapshot when one is due) after each of the
//! calls the session makes around a store (`reset`, `stored`, `snapshot_for`, `forget`,
//! `catch_up`, `replace`).

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::*;
use crate::algo::tree::Node;
use crate::engine::store::log::apply_text;
use crate::engine::store::{SNAPSHOT_BYTES, SNAPSHOT_EVERY};

/// `{"n": seq}`, the state of most commits below.
fn n(seq: u64) -> Value {
    json!({"n": seq, "l": [{"id": 1, "seq": seq}]})
}

/// The JSON text the store keeps of `state`.
fn stored_text(state: &Value) -> String {
    serde_json::to_string(state).unwrap()
}

/// Commits `n(seq)` from `from` on, storing each, up to the first commit that writes a
/// snapshot: its seq. Each patch is checked to take the previous state to the new one.
fn first_snapshot_from(log: &mut CommitLog, from: u64) -> u64 {
    for seq in from..from + 2 * SNAPSHOT_EVERY {
        let change = log.change(seq, &n(seq), None).unwrap();
        let patch = change.patch.as_deref().expect("a known tree gives a patch");
        let mut before = Node::from_value(n(seq - 1));
        apply_text(&mut before, patch).unwrap();
        assert_eq!(before.to_value(), n(seq), "the patch of commit {seq}");
        log.stored(seq, &change);
        if change.snapshot.is_some() {
            assert_eq!(change.snapshot, Some(stored_text(&n(seq))));
            return seq;
        }
    }
    panic!("no snapshot in {} commits", 2 * SNAPSHOT_EVERY)
}

/// A state that does not serialize.
struct Unserializable;

impl Serialize for Unserializable {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(S::Error::custom("this state does not serialize"))
    }
}

#[test]
fn a_snapshot_comes_when_the_log_is_at_its_bounds() {
    let mut log = CommitLog::at(0, Some(json!({"n": 0}).into()));
    let mut snapshots = 0;
    for seq in 1..=(crate::engine::store::SNAPSHOT_EVERY * 3) {
        let change = log.change(seq, &json!({"n": seq}), None).unwrap();
        assert!(change.patch.is_some());
        if change.snapshot.is_some() {
            snapshots += 1;
        }
        log.stored(seq, &change);
    }
    assert_eq!(snapshots, 2);
    // Not known: a snapshot, no patch.
    let mut unknown = CommitLog::default();
    let change = unknown.change(1, &json!({"n": 1}), None).unwrap();
    assert!(change.patch.is_none());
    assert_eq!(change.snapshot.as_deref(), Some(r#"{"n":1}"#));
}

#[test]
fn catching_up_applies_patches_or_forgets_the_tree() {
    let mut log = CommitLog::at(3, Some(json!({"n": 3}).into()));
    let patch = r#"[{"op":"replace","path":"/n","value":4}]"#.to_string();
    assert_eq!(
        log.catch_up(&[patch]).map(Node::to_value),
        Some(json!({"n": 4}))
    );
    let misfit = r#"[{"op":"remove","path":"/x"}]"#.to_string();
    assert_eq!(log.catch_up(&[misfit]), None);
    assert_eq!(log.catch_up(&[]), None);
}

#[test]
fn at_counts_the_patches_from_its_seq() {
    let mut log = CommitLog::at(40, Some(n(40).into()));
    assert_eq!(first_snapshot_from(&mut log, 41), 40 + SNAPSHOT_EVERY + 1);
    // And from each snapshot written.
    let at = 40 + SNAPSHOT_EVERY + 1;
    assert_eq!(
        first_snapshot_from(&mut log, at + 1),
        at + SNAPSHOT_EVERY + 1
    );
}

#[test]
fn reset_answers_the_state_as_stored_and_starts_over_at_its_seq() {
    let mut log = CommitLog::at(0, Some(json!({"old": true}).into()));
    let text = log.reset(50, &n(50)).unwrap();
    assert_eq!(text, stored_text(&n(50)));
    // The next commit's patch goes from the reset state, and the log counts from 50.
    assert_eq!(first_snapshot_from(&mut log, 51), 50 + SNAPSHOT_EVERY + 1);
}

#[test]
fn a_failed_reset_leaves_no_tree() {
    let mut log = CommitLog::at(3, Some(n(3).into()));
    assert!(log.reset(4, &Unserializable).is_err());
    assert_eq!(log.snapshot_for(LogState::default()), None);
    let change = log.change(4, &n(4), None).unwrap();
    assert_eq!(change.patch, None);
    assert_eq!(change.snapshot, Some(stored_text(&n(4))));
}

#[test]
fn snapshot_for_answers_the_tree_as_stored() {
    let mut log = CommitLog::at(5, Some(n(5).into()));
    let change = log.change(6, &n(6), None).unwrap();
    assert_eq!(change.snapshot, None);
    // The store refused the patch alone: the snapshot to send is the tree at commit 6.
    let store_log = LogState {
        snapshot_seq: 5,
        log_bytes: 0,
    };
    assert_eq!(log.snapshot_for(store_log), Some(stored_text(&n(6))));
    let mut forgotten = CommitLog::at(5, Some(n(5).into()));
    forgotten.forget();
    assert_eq!(forgotten.snapshot_for(store_log), None);
}

#[test]
fn snapshot_for_takes_the_stores_log() {
    // The store's newest snapshot is older than this process thought: due sooner.
    let mut log = CommitLog::at(200, Some(n(200).into()));
    assert!(log
        .snapshot_for(LogState {
            snapshot_seq: 150,
            log_bytes: 0,
        })
        .is_some());
    assert_eq!(first_snapshot_from(&mut log, 201), 150 + SNAPSHOT_EVERY + 1);
    // The store's log is full of bytes: the next commit is due.
    let mut log = CommitLog::at(200, Some(n(200).into()));
    assert!(log
        .snapshot_for(LogState {
            snapshot_seq: 200,
            log_bytes: SNAPSHOT_BYTES,
        })
        .is_some());
    assert!(log.change(201, &n(201), None).unwrap().snapshot.is_some());
}

#[test]
fn stored_patches_count_their_bytes() {
    // Each patch replaces a string of a third of the byte bound (plus the op around it), and
    // its inverse (the undo record) as much again: the second commit logged after a snapshot
    // passes the bound, so it comes with a snapshot.
    let big = |c: char| json!({"text": c.to_string().repeat((SNAPSHOT_BYTES / 3) as usize)});
    let mut log = CommitLog::at(0, Some(big('a').into()));
    let mut due = Vec::new();
    for (seq, c) in (1..=6).zip(['b', 'c', 'd', 'e', 'f', 'g']) {
        let mut change = log.change(seq, &big(c), None).unwrap();
        assert!(change.patch.is_some());
        change.undo = Some(serde_json::to_string(&change.inverse).unwrap());
        due.push(change.snapshot.is_some());
        log.stored(seq, &change);
    }
    assert_eq!(due, [false, true, false, true, false, true]);
}

#[test]
fn forget_makes_the_next_commit_a_snapshot() {
    let mut log = CommitLog::at(1, Some(n(1).into()));
    log.forget();
    assert_eq!(log.catch_up(&[]), None);
    let change = log.change(2, &n(2), None).unwrap();
    assert_eq!(change.patch, None);
    assert_eq!(change.snapshot, Some(stored_text(&n(2))));
    log.stored(2, &change);
    // Known again from that snapshot on.
    assert_eq!(first_snapshot_from(&mut log, 3), 2 + SNAPSHOT_EVERY + 1);
}

#[test]
fn replace_takes_the_stored_state_and_its_seq() {
    let mut log = CommitLog::at(1, Some(n(1).into()));
    let change = log.change(2, &n(2), None).unwrap();
    log.stored(2, &change);
    // Another process stored up to commit 30: read whole, the log goes on from there.
    log.replace(30, n(30).into());
    assert_eq!(
        log.snapshot_for(LogState {
            snapshot_seq: 30,
            log_bytes: 0,
        }),
        Some(stored_text(&n(30)))
    );
    let change = log.change(31, &n(31), None).unwrap();
    assert_eq!(
        change.patch.as_deref(),
        Some(
            r#"[{"op":"replace","path":"/n","value":31},{"op":"replace","path":"/l/0/seq","value":31}]"#
        )
    );
    log.stored(31, &change);
    assert_eq!(first_snapshot_from(&mut log, 32), 30 + SNAPSHOT_EVERY + 1);
    // After a forget, too.
    log.forget();
    log.replace(500, n(500).into());
    assert_eq!(first_snapshot_from(&mut log, 501), 500 + SNAPSHOT_EVERY + 1);
}

#[test]
fn a_walk_that_reorders_keys_writes_a_snapshot() {
    let mut log = CommitLog::at(0, Some(json!({"a": 1, "b": 2}).into()));
    let change = log.change(1, &json!({"b": 2, "a": 1}), None).unwrap();
    assert!(change.patch.is_some());
    assert_eq!(change.snapshot.as_deref(), Some(r#"{"b":2,"a":1}"#));
}

#[test]
fn catching_up_moves_the_tree_the_next_patch_starts_from() {
    let mut log = CommitLog::at(3, Some(n(3).into()));
    let theirs =
        r#"[{"op":"replace","path":"/n","value":4},{"op":"replace","path":"/l/0/seq","value":4}]"#;
    assert_eq!(
        log.catch_up(&[theirs.to_string()]).map(Node::to_value),
        Some(n(4))
    );
    let change = log.change(5, &n(5), None).unwrap();
    let mut replica = Node::from_value(n(4));
    apply_text(&mut replica, change.patch.as_deref().unwrap()).unwrap();
    assert_eq!(replica.to_value(), n(5));
}
