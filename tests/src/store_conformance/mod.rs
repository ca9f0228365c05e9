//! Store conformance: the same test bodies run against every store implementation (in
//! memory, SQLite, PostgreSQL). Each body takes a freshly opened, empty [`Stores`].

mod commit_log;

pub use commit_log::{commit_keys, commit_log};

use tea_agent_runtime::security::{SessionKind, TokenChange, TokenRecord, TokenStatus};
use tea_agent_runtime::store::{
    ConfirmsSwap, IdempotencyEntry, McpBinding, SessionRecord, StoreError, Stores,
};

fn token(tid: &str, uid: Option<&str>, session: &str, expires_at: u64) -> TokenRecord {
    TokenRecord {
        tid: tid.into(),
        token_hash: format!("hash-{tid}"),
        uid: uid.map(Into::into),
        session_id: session.into(),
        kind: SessionKind::Hosted,
        status: TokenStatus::AwaitingClaude,
        created_at: 10,
        expires_at,
        last_seen_at: 10,
        pending_resume_until: None,
        origin: "http://localhost".into(),
        label: None,
        scope: None,
    }
}

fn tids(records: Vec<TokenRecord>) -> Vec<String> {
    records.into_iter().map(|r| r.tid).collect()
}

/// Token records: create (a duplicate tid is a conflict), find by tid and hash, lists in
/// creation order, touch, conditional changes (activation, pairing steps, a claim's hash
/// rotation), revocation that no change undoes, and the expiry sweep.
pub async fn tokens(stores: &Stores) {
    let t = &stores.tokens;
    let a = token("a", Some("u1"), "s1", 1_000);
    t.create(a.clone()).await.expect("create");
    t.create(token("b", None, "s1", 4_500))
        .await
        .expect("create");
    t.create(token("c", Some("u2"), "s2", 10_000))
        .await
        .expect("create");
    // A paired record keeps its kind whatever its session id reads like.
    // A scoped record (an OAuth grant's) reads back with its scopes.
    let d = TokenRecord {
        kind: SessionKind::Paired,
        status: TokenStatus::AwaitingWs,
        scope: Some("app:read".into()),
        ..token("d", Some("u1"), "s3", 10_000)
    };
    t.create(d.clone()).await.expect("create");
    assert!(matches!(
        t.create(token("a", None, "s9", 1)).await,
        Err(StoreError::Conflict(_))
    ));
    let find = |tid: &'static str| async move { t.find_by_tid(tid).await.expect("find") };
    assert_eq!(find("a").await, Some(a.clone()));
    assert_eq!(
        t.find_by_token_hash("hash-a").await.expect("find"),
        Some(a.clone())
    );
    assert_eq!(find("d").await, Some(d.clone()));
    assert_eq!(find("zz").await, None);
    assert_eq!(t.find_by_token_hash("hash-zz").await.expect("find"), None);
    assert_eq!(
        tids(t.list_by_identity("u1").await.expect("list")),
        ["a", "d"]
    );
    assert!(t.list_by_identity("u").await.expect("list").is_empty());
    assert_eq!(
        tids(t.list_by_session("s1").await.expect("list")),
        ["a", "b"]
    );

    t.touch("a", 77).await.expect("touch");
    let touched = find("a").await.expect("a");
    assert_eq!(touched.last_seen_at, 77);
    assert_eq!(touched.status, TokenStatus::AwaitingClaude);

    // Activation applies only from awaiting-claude.
    let mut activate = TokenChange::new(&[TokenStatus::AwaitingClaude], TokenStatus::Active);
    activate.label = Some("claude".into());
    activate.last_seen_at = Some(88);
    assert!(t.change("a", &activate).await.expect("change"));
    let active = find("a").await.expect("a");
    assert_eq!(active.status, TokenStatus::Active);
    assert_eq!(active.label.as_deref(), Some("claude"));
    assert_eq!(active.last_seen_at, 88);
    assert_eq!(active.created_at, a.created_at);
    assert!(!t.change("a", &activate).await.expect("change"));
    assert!(!t.change("zz", &activate).await.expect("change"));

    // A pairing step and a claim: pending-resume with its deadline, then the hash rotated.
    let mut away = TokenChange::new(
        &[TokenStatus::AwaitingClaude, TokenStatus::Active],
        TokenStatus::PendingResume,
    );
    away.pending_resume_until = Some(99);
    assert!(t.change("b", &away).await.expect("change"));
    assert_eq!(find("b").await.expect("b").pending_resume_until, Some(99));
    let mut claim = TokenChange::new(&[TokenStatus::PendingResume], TokenStatus::Active);
    claim.token_hash = Some("hash-b2".into());
    assert!(t.change("b", &claim).await.expect("change"));
    assert_eq!(t.find_by_token_hash("hash-b").await.expect("find"), None);
    let claimed = t
        .find_by_token_hash("hash-b2")
        .await
        .expect("find")
        .expect("b");
    assert_eq!(claimed.tid, "b");
    assert_eq!(claimed.status, TokenStatus::Active);
    assert_eq!(claimed.pending_resume_until, None);
    assert_eq!(
        tids(t.list_by_session("s1").await.expect("list")),
        ["a", "b"]
    );

    // A revoke always wins: kept with its hash, and no change applies afterwards, whatever
    // statuses it starts from.
    assert!(t.revoke("a").await.expect("revoke"));
    let revoked = t
        .find_by_token_hash("hash-a")
        .await
        .expect("find")
        .expect("kept after revoke");
    assert_eq!(revoked.status, TokenStatus::Revoked);
    let mut any = TokenChange::new(&TokenStatus::ALL, TokenStatus::Active);
    any.token_hash = Some("hash-a2".into());
    assert!(!t.change("a", &any).await.expect("change"));
    assert_eq!(find("a").await.expect("a").status, TokenStatus::Revoked);
    assert_eq!(t.find_by_token_hash("hash-a2").await.expect("find"), None);

    // Mutations of a missing tid change nothing.
    t.touch("zz", 1).await.expect("touch");
    assert!(!t.revoke("zz").await.expect("revoke"));
    assert_eq!(find("zz").await, None);

    // expiresAt + retention <= now is swept, boundary included.
    assert_eq!(t.sweep_expired(5_000, 1_000).await.expect("sweep"), 1);
    assert_eq!(find("a").await, None);
    assert!(find("b").await.is_some());
    assert_eq!(t.sweep_expired(5_500, 1_000).await.expect("sweep"), 1);
    assert_eq!(t.sweep_expired(5_500, 1_000).await.expect("sweep"), 0);
    assert_eq!(tids(t.list_by_identity("u1").await.expect("list")), ["d"]);
}

/// Sessions: insert (a duplicate id is a conflict), load, compare-and-set commits, the
/// confirmation and log columns, listing by owner, count and delete.
pub async fn sessions(stores: &Stores) {
    let s = &stores.sessions;
    let first = SessionRecord::new("s1", Some("u1".into()), 100, r#"{"count":0}"#.into(), "h1");
    s.insert_session(first.clone()).await.expect("insert");
    assert!(matches!(
        s.insert_session(first.clone()).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.load_session("s1").await.expect("load"),
        Some(first.clone())
    );
    assert_eq!(s.load_session("nope").await.expect("load"), None);

    assert!(s
        .commit_state("s1", 1, r#"{"count":1}"#, "h1", 150)
        .await
        .expect("commit"));
    // The same sequence number again, a gap, and a sequence 0 all lose.
    assert!(!s
        .commit_state("s1", 1, r#"{"count":9}"#, "h1", 151)
        .await
        .expect("commit"));
    assert!(!s
        .commit_state("s1", 3, r#"{"count":9}"#, "h1", 151)
        .await
        .expect("commit"));
    assert!(!s
        .commit_state("s1", 0, r#"{"count":9}"#, "h1", 151)
        .await
        .expect("commit"));
    assert!(!s
        .commit_state("nope", 1, "{}", "h1", 151)
        .await
        .expect("commit"));
    assert!(s
        .commit_state("s1", 2, r#"{"count":2}"#, "h2", 160)
        .await
        .expect("commit"));
    let loaded = s.load_session("s1").await.expect("load").expect("s1");
    assert_eq!(loaded.seq, 2);
    assert_eq!(loaded.state, r#"{"count":2}"#);
    assert_eq!(loaded.schema_hash, "h2");
    assert_eq!(loaded.updated_at, 160);
    assert_eq!(loaded.created_at, 100);
    assert_eq!(loaded.owner.as_deref(), Some("u1"));

    // The confirmations are a compare-and-set: written only over the text expected; else
    // the text stored now is answered (the loser of two decisions learns the winner).
    let c1 = r#"[{"id":"c1"}]"#;
    assert_eq!(
        s.swap_confirms("s1", "[]", c1).await.expect("confirms"),
        ConfirmsSwap::Stored
    );
    assert_eq!(
        s.swap_confirms("s1", "[]", r#"[{"id":"c2"}]"#)
            .await
            .expect("confirms"),
        ConfirmsSwap::Changed(c1.into())
    );
    assert_eq!(
        s.swap_confirms("gone", "[]", c1).await.expect("confirms"),
        ConfirmsSwap::Gone
    );
    s.save_log_tail("s1", r#"[{"kind":"dispatched"}]"#)
        .await
        .expect("log");
    let loaded = s.load_session("s1").await.expect("load").expect("s1");
    assert_eq!(loaded.confirms, r#"[{"id":"c1"}]"#);
    assert_eq!(loaded.log_tail, r#"[{"kind":"dispatched"}]"#);
    assert_eq!(loaded.state, r#"{"count":2}"#);

    s.insert_session(SessionRecord::new(
        "s0",
        Some("u1".into()),
        50,
        "{}".into(),
        "h1",
    ))
    .await
    .expect("insert");
    s.insert_session(SessionRecord::new("s2", None, 60, "{}".into(), "h1"))
        .await
        .expect("insert");
    assert_eq!(s.sessions_of("u1").await.expect("list"), ["s0", "s1"]);
    assert!(s.sessions_of("u2").await.expect("list").is_empty());
    assert_eq!(s.session_count().await.expect("count"), 3);
    assert!(s.delete_session("s1").await.expect("delete"));
    assert!(!s.delete_session("s1").await.expect("delete"));
    assert_eq!(s.load_session("s1").await.expect("load"), None);
    assert_eq!(s.session_count().await.expect("count"), 2);
    // Expiry candidates: last used before a time, least recently used first; a touch moves
    // the last use forward only.
    assert_eq!(s.stale_sessions(61, 10).await.expect("stale"), ["s0", "s2"]);
    assert_eq!(s.stale_sessions(61, 1).await.expect("stale"), ["s0"]);
    assert_eq!(s.stale_sessions(60, 10).await.expect("stale"), ["s0"]);
    s.touch_session("s0", 100).await.expect("touch");
    s.touch_session("s0", 70).await.expect("touch");
    s.touch_session("gone", 70).await.expect("touch");
    assert_eq!(s.stale_sessions(61, 10).await.expect("stale"), ["s2"]);
    let s0 = s.load_session("s0").await.expect("load").expect("s0");
    assert_eq!((s0.created_at, s0.updated_at), (50, 100));
}

/// Two writers commit the same sequence number at once: exactly one wins.
pub async fn concurrent_commits(stores: &Stores) {
    let s = &stores.sessions;
    s.insert_session(SessionRecord::new("race", None, 1, "0".into(), "h"))
        .await
        .expect("insert");
    for seq in 1..=20u64 {
        let a = s.commit_state("race", seq, "\"a\"", "h", seq);
        let b = s.commit_state("race", seq, "\"b\"", "h", seq);
        let (a, b) = futures::join!(a, b);
        let (a, b) = (a.expect("commit a"), b.expect("commit b"));
        assert!(a ^ b, "exactly one writer wins commit {seq} (a={a}, b={b})");
    }
    assert_eq!(
        s.load_session("race")
            .await
            .expect("load")
            .expect("race")
            .seq,
        20
    );
}

/// Idempotency answers: put, get, replace, sweep.
pub async fn idempotency(stores: &Stores) {
    let i = &stores.idempotency;
    let entry = IdempotencyEntry {
        tid: "t1".into(),
        key: "k1".into(),
        created_at: 1_000,
        msg: r#"{"type":"inc"}"#.into(),
        status: 200,
        body: r#"{"status":"dispatched"}"#.into(),
        headers: "[]".into(),
        commit: None,
        claimed_at: 1_000,
    };
    i.put_idempotent(entry.clone()).await.expect("put");
    assert_eq!(
        i.get_idempotent("t1", "k1").await.expect("get"),
        Some(entry.clone())
    );
    assert_eq!(i.get_idempotent("t2", "k1").await.expect("get"), None);
    assert_eq!(i.get_idempotent("t1", "k2").await.expect("get"), None);
    let newer = IdempotencyEntry {
        created_at: 3_000,
        status: 413,
        headers: r#"[["x-a","b"]]"#.into(),
        ..entry.clone()
    };
    i.put_idempotent(newer.clone()).await.expect("replace");
    assert_eq!(
        i.get_idempotent("t1", "k1").await.expect("get"),
        Some(newer)
    );
    i.put_idempotent(IdempotencyEntry {
        key: "old".into(),
        ..entry
    })
    .await
    .expect("put");
    assert_eq!(i.sweep_idempotent(2_000).await.expect("sweep"), 1);
    assert_eq!(i.get_idempotent("t1", "old").await.expect("get"), None);
    assert!(i.get_idempotent("t1", "k1").await.expect("get").is_some());
}

/// MCP session bindings: bind, complete, read, unbind and bind again, delete (a deleted id
/// stays deleted: completing it records nothing), and the listings the caps are kept with.
pub async fn mcp_bindings(stores: &Stores) {
    let m = &stores.mcp;
    let issued = McpBinding {
        id: "m1".into(),
        tid: String::new(),
        token_hash: String::new(),
        init: r#"{"protocolVersion":"2025-06-18"}"#.into(),
        created_at: 5,
        deleted: false,
    };
    m.bind_mcp(issued.clone()).await.expect("bind");
    assert_eq!(
        m.mcp_binding("m1").await.expect("get"),
        Some(issued.clone())
    );
    // The token (its id and hash) becomes known later; the init params stay.
    m.bind_mcp(McpBinding {
        tid: "t1".into(),
        token_hash: "h1".into(),
        init: String::new(),
        created_at: 9,
        ..issued.clone()
    })
    .await
    .expect("bind tid");
    let bound = McpBinding {
        tid: "t1".into(),
        token_hash: "h1".into(),
        ..issued.clone()
    };
    assert_eq!(m.mcp_binding("m1").await.expect("get"), Some(bound.clone()));
    assert_eq!(m.mcp_binding("m2").await.expect("get"), None);
    // Completing an id never recorded records nothing.
    m.bind_mcp(McpBinding {
        id: "m2".into(),
        init: String::new(),
        ..bound.clone()
    })
    .await
    .expect("complete unknown");
    assert_eq!(m.mcp_binding("m2").await.expect("get"), None);
    // `disconnect_session` clears the token and its hash; a later `connect_session` names one
    // again.
    m.unbind_mcp("m1").await.expect("unbind");
    assert_eq!(
        m.mcp_binding("m1").await.expect("get"),
        Some(issued.clone())
    );
    m.bind_mcp(McpBinding {
        init: String::new(),
        ..bound.clone()
    })
    .await
    .expect("bind again");
    assert_eq!(m.mcp_binding("m1").await.expect("get"), Some(bound.clone()));
    // Listings, oldest first.
    for (id, tid, at) in [("m3", "t1", 3), ("m4", "t2", 4), ("m5", "t1", 7)] {
        m.bind_mcp(McpBinding {
            id: id.into(),
            tid: tid.into(),
            created_at: at,
            ..issued.clone()
        })
        .await
        .expect("bind");
    }
    assert_eq!(m.mcp_ids_of("t1").await.expect("of"), ["m3", "m1", "m5"]);
    assert_eq!(m.mcp_ids_of("t2").await.expect("of"), ["m4"]);
    assert_eq!(m.mcp_ids_of("t9").await.expect("of"), Vec::<String>::new());
    assert_eq!(m.mcp_count().await.expect("count"), 4);
    assert_eq!(m.oldest_mcp(2).await.expect("oldest"), ["m3", "m4"]);
    assert_eq!(m.oldest_mcp(9).await.expect("oldest").len(), 4);
    for id in ["m3", "m4", "m5"] {
        m.delete_mcp(id).await.expect("delete");
    }
    // Deleted: gone, and completing it does not bring it back.
    m.delete_mcp("m1").await.expect("delete");
    assert_eq!(m.mcp_binding("m1").await.expect("get"), None);
    m.bind_mcp(McpBinding {
        init: String::new(),
        ..bound
    })
    .await
    .expect("complete deleted");
    assert_eq!(m.mcp_binding("m1").await.expect("get"), None);
    assert_eq!(m.mcp_count().await.expect("count"), 0);
    // One left for `reopened`.
    m.bind_mcp(McpBinding {
        id: "kept".into(),
        ..issued
    })
    .await
    .expect("bind");
}

/// The signing key: the first candidate stored wins; later candidates get it back.
pub async fn signing_key(stores: &Stores) {
    let first = stores
        .keys
        .signing_key("k", vec![1; 32])
        .await
        .expect("key");
    assert_eq!(first, vec![1; 32]);
    let again = stores
        .keys
        .signing_key("k", vec![2; 32])
        .await
        .expect("key");
    assert_eq!(again, vec![1; 32]);
    let other = stores
        .keys
        .signing_key("other", vec![3; 40])
        .await
        .expect("key");
    assert_eq!(other, vec![3; 40]);
    let a = stores.identity_key().await.expect("identity key");
    let b = stores.identity_key().await.expect("identity key");
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    identity_key_rotation(stores).await;
}

/// A rotation: cookies of the replaced key still verify, new ones are signed with a new key; a
/// second rotation drops the first key.
pub async fn identity_key_rotation(stores: &Stores) {
    let now = 1_795_651_200_000;
    let first = stores.identity_key().await.expect("identity key");
    let before = first.sign("user-42", now);
    stores.rotate_identity_key().await.expect("rotate");
    let second = stores.identity_key().await.expect("identity key");
    assert_eq!(second.verify(&before, now).as_deref(), Some("user-42"));
    let after = second.sign("user-42", now);
    assert_ne!(after, before);
    assert_eq!(first.verify(&after, now), None);
    stores.rotate_identity_key().await.expect("rotate");
    let third = stores.identity_key().await.expect("identity key");
    assert_eq!(third.verify(&before, now), None);
    assert_eq!(third.verify(&after, now).as_deref(), Some("user-42"));
}

/// Every body above, in order, on one store.
pub async fn all(stores: &Stores) {
    tokens(stores).await;
    sessions(stores).await;
    concurrent_commits(stores).await;
    commit_log(stores).await;
    idempotency(stores).await;
    commit_keys(stores).await;
    mcp_bindings(stores).await;
    signing_key(stores).await;
}

/// What a second [`Stores`] opened on the same database must read back after [`all`] ran on
/// the first: the durable backends keep everything.
pub async fn reopened(stores: &Stores) {
    assert_eq!(
        stores
            .tokens
            .find_by_tid("d")
            .await
            .expect("find")
            .map(|r| (r.session_id, r.kind)),
        Some(("s3".to_string(), SessionKind::Paired))
    );
    let s0 = stores.sessions.load_session("s0").await.expect("load");
    assert_eq!(s0.map(|r| r.created_at), Some(50));
    let race = stores
        .sessions
        .load_session("race")
        .await
        .expect("load")
        .expect("race");
    assert_eq!(race.seq, 20);
    assert!(
        race.state == "\"a\"" || race.state == "\"b\"",
        "{}",
        race.state
    );
    assert_eq!(stores.mcp.mcp_binding("m1").await.expect("get"), None);
    assert!(stores.mcp.mcp_binding("kept").await.expect("get").is_some());
    assert_eq!(
        stores
            .keys
            .signing_key("k", vec![9; 32])
            .await
            .expect("key"),
        vec![1; 32]
    );
    assert!(stores
        .idempotency
        .get_idempotent("t1", "k1")
        .await
        .expect("get")
        .is_some());
}
