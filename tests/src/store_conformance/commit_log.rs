//! Store conformance of the commit log (`docs/stores.md` §The commit log, §Exactly once):
//! patches and snapshots, compaction, reads of the changes after a commit, and the keys
//! recorded by commits.

use tea_agent_runtime::store::{
    CommitKey, CommitWrite, Committed, IdempotencyEntry, SessionChanges, SessionRecord, Stores,
};

fn patch_of(n: u64) -> String {
    format!(r#"[{{"op":"replace","path":"/n","value":{n}}},{{"op":"add","path":"/items/-","value":{n}}}]"#)
        .replace("/items/-", &format!("/items/{}", n - 1))
}

fn state_at(n: u64) -> String {
    let items: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    format!(r#"{{"n":{n},"items":[{}]}}"#, items.join(","))
}

/// One commit of the log session `log`: its patch, and a snapshot when the store asks.
async fn commit_patch(stores: &Stores, seq: u64) -> bool {
    let s = &stores.sessions;
    let patch = patch_of(seq);
    let write = CommitWrite {
        id: "log",
        seq,
        patch: Some(&patch),
        snapshot: None,
        schema_hash: "h",
        now: seq,
        key: None,
        undo: None,
    };
    match s.commit(write).await.expect("commit") {
        Committed::Stored => false,
        Committed::SnapshotDue(log) => {
            assert!(log.snapshot_seq < seq);
            let snapshot = state_at(seq);
            let write = CommitWrite {
                snapshot: Some(&snapshot),
                ..write
            };
            assert_eq!(s.commit(write).await.expect("commit"), Committed::Stored);
            true
        }
        other => panic!("commit {seq}: {other:?}"),
    }
}

/// The commit log: patches appended, a snapshot when the store asks for one (at most every
/// 128 commits), the state rebuilt from the snapshot and the patches after it, and the
/// changes after a commit read as patches while the log holds them, whole when compacted.
pub async fn commit_log(stores: &Stores) {
    let s = &stores.sessions;
    s.insert_session(SessionRecord::new("log", None, 1, state_at(0), "h"))
        .await
        .expect("insert");
    let mut snapshots = Vec::new();
    for seq in 1..=300u64 {
        if commit_patch(stores, seq).await {
            snapshots.push(seq);
        }
        if seq % 37 == 0 || seq == 129 || seq == 130 {
            let loaded = s.load_session("log").await.expect("load").expect("log");
            assert_eq!((loaded.seq, loaded.state), (seq, state_at(seq)));
        }
    }
    assert_eq!(snapshots, [129, 258], "a snapshot every 129th commit");
    // After 290: patches (the log holds 130..=300).
    match s.load_since("log", 290).await.expect("since").expect("log") {
        SessionChanges::Patches { seq, patches, .. } => {
            assert_eq!(seq, 300);
            assert_eq!(patches, (291..=300).map(patch_of).collect::<Vec<_>>());
        }
        other => panic!("patches expected: {other:?}"),
    }
    match s.load_since("log", 130).await.expect("since").expect("log") {
        SessionChanges::Patches { patches, .. } => assert_eq!(patches.len(), 170),
        other => panic!("patches expected: {other:?}"),
    }
    // Behind the horizon (compacted at the snapshot of 258): the whole record.
    match s.load_since("log", 100).await.expect("since").expect("log") {
        SessionChanges::Whole(record) => assert_eq!(record.state, state_at(300)),
        other => panic!("whole expected: {other:?}"),
    }
    match s.load_since("log", 300).await.expect("since").expect("log") {
        SessionChanges::Patches { seq, patches, .. } => {
            assert_eq!(seq, 300);
            assert!(patches.is_empty());
        }
        other => panic!("nothing new expected: {other:?}"),
    }
    assert_eq!(s.load_since("gone", 1).await.expect("since"), None);
    // A patch over the bytes bound is refused without a snapshot.
    let big = format!(
        r#"[{{"op":"replace","path":"/n","value":"{}"}}]"#,
        "x".repeat(2 << 20)
    );
    let write = CommitWrite {
        id: "log",
        seq: 301,
        patch: Some(&big),
        snapshot: None,
        schema_hash: "h",
        now: 301,
        key: None,
        undo: None,
    };
    assert!(matches!(
        s.commit(write).await.expect("commit"),
        Committed::SnapshotDue(_)
    ));
    // Deleting the session deletes its log; a new session under the id starts clean.
    assert!(s.delete_session("log").await.expect("delete"));
    s.insert_session(SessionRecord::new("log", None, 1, state_at(0), "h"))
        .await
        .expect("insert");
    assert!(!commit_patch(stores, 1).await);
    let loaded = s.load_session("log").await.expect("load").expect("log");
    assert_eq!(loaded.state, state_at(1));
}

/// Keys recorded by commits: a claim, the commit that records the key, a second commit under
/// the key refused (and nothing of it written), claims refused while live and taken over when
/// abandoned or expired.
pub async fn commit_keys(stores: &Stores) {
    let s = &stores.sessions;
    let i = &stores.idempotency;
    s.insert_session(SessionRecord::new(
        "keyed",
        None,
        1,
        r#"{"n":0}"#.into(),
        "h",
    ))
    .await
    .expect("insert");
    let claim = |key: &str, at: u64| IdempotencyEntry {
        tid: "t".into(),
        key: key.into(),
        created_at: at,
        msg: r#"{"type":"inc"}"#.into(),
        status: 0,
        body: String::new(),
        headers: "[]".into(),
        commit: None,
        claimed_at: at,
    };
    assert!(i
        .claim_idempotent(claim("k", 100), 0, 0)
        .await
        .expect("claim"));
    // Live: refused.
    assert!(!i
        .claim_idempotent(claim("k", 200), 0, 50)
        .await
        .expect("claim"));
    let key = CommitKey {
        tid: "t",
        key: "k",
        msg: r#"{"type":"inc"}"#,
        created_at: 100,
    };
    let patch = r#"[{"op":"replace","path":"/n","value":1}]"#;
    let write = CommitWrite {
        id: "keyed",
        seq: 1,
        patch: Some(patch),
        snapshot: None,
        schema_hash: "h",
        now: 110,
        key: Some(key),
        undo: None,
    };
    assert_eq!(s.commit(write).await.expect("commit"), Committed::Stored);
    let entry = i.get_idempotent("t", "k").await.expect("get").expect("k");
    assert_eq!(entry.commit, Some(("keyed".to_string(), 1)));
    assert_eq!(entry.status, 0);
    // A second application under the key, even at the right sequence number, is refused.
    let again = CommitWrite {
        seq: 2,
        patch: Some(r#"[{"op":"replace","path":"/n","value":2}]"#),
        ..write
    };
    assert_eq!(s.commit(again).await.expect("commit"), Committed::KeyUsed);
    let loaded = s.load_session("keyed").await.expect("load").expect("keyed");
    assert_eq!((loaded.seq, loaded.state.as_str()), (1, r#"{"n":1}"#));
    // A claim whose message a commit applied is never taken over, even when old.
    assert!(!i
        .claim_idempotent(claim("k", 9_000), 0, 9_000)
        .await
        .expect("claim"));
    // The answer, once stored, keeps the commit.
    i.put_idempotent(IdempotencyEntry {
        status: 200,
        body: "{}".into(),
        ..claim("k", 100)
    })
    .await
    .expect("put");
    let entry = i.get_idempotent("t", "k").await.expect("get").expect("k");
    assert_eq!(
        (entry.status, entry.commit),
        (200, Some(("keyed".to_string(), 1)))
    );
    // Past the window the key is free again.
    assert!(i
        .claim_idempotent(claim("k", 9_000), 101, 0)
        .await
        .expect("claim"));
    // An abandoned claim (no commit) is taken over once stale.
    assert!(i
        .claim_idempotent(claim("a", 100), 0, 0)
        .await
        .expect("claim"));
    assert!(!i
        .claim_idempotent(claim("a", 150), 0, 100)
        .await
        .expect("claim"));
    assert!(i
        .claim_idempotent(claim("a", 200), 0, 101)
        .await
        .expect("claim"));
    // A key with no claim at all is recorded by its commit.
    let write = CommitWrite {
        seq: 2,
        patch: Some(r#"[{"op":"replace","path":"/n","value":2}]"#),
        key: Some(CommitKey {
            key: "fresh",
            ..key
        }),
        ..write
    };
    assert_eq!(s.commit(write).await.expect("commit"), Committed::Stored);
    let entry = i
        .get_idempotent("t", "fresh")
        .await
        .expect("get")
        .expect("fresh");
    assert_eq!(entry.commit, Some(("keyed".to_string(), 2)));
}
