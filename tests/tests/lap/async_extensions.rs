//! The async extension points (issue 10, item 4): a token store, rate limiter, identity
//! resolver and audit sink that really await (a `tokio::sync` lock and a yield in every call)
//! plugged into `AgentServer`, with the gate, mint and human routes run through them over real
//! HTTP. The answers are the ones the synchronous defaults give.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::{serve, TestServer, USER_HEADER};
use axum::http::request::Parts;
use futures::future::BoxFuture;
use serde_json::json;
use tea_agent_runtime::security::{
    AuditEntry, AuditEvent, AuditSink, Bucket, IdentityResolver, RateLimited, RateLimiter,
    TokenChange, TokenRecord, TokenStatus,
};
use tea_agent_runtime::store::InMemoryTokenStore;
use tea_agent_runtime::store::StoreResult;
use tea_agent_runtime::store::TokenStore;
use tokio::sync::{Mutex, RwLock};
use tokio::task::yield_now;

/// Calls per method name, to show the awaiting implementations are the ones in use.
#[derive(Default)]
struct Calls(std::sync::Mutex<HashMap<&'static str, usize>>);

impl Calls {
    fn hit(&self, method: &'static str) {
        *self.0.lock().unwrap().entry(method).or_default() += 1;
    }

    fn get(&self, method: &str) -> usize {
        self.0.lock().unwrap().get(method).copied().unwrap_or(0)
    }
}

/// The in-memory store behind an async lock, yielding before and inside every call, as a
/// database-backed store would await its connection and its query.
#[derive(Default)]
struct AwaitingTokenStore {
    inner: Mutex<InMemoryTokenStore>,
    calls: Calls,
}

impl AwaitingTokenStore {
    async fn store(&self, method: &'static str) -> tokio::sync::MutexGuard<'_, InMemoryTokenStore> {
        self.calls.hit(method);
        yield_now().await;
        let guard = self.inner.lock().await;
        yield_now().await;
        guard
    }
}

impl TokenStore for AwaitingTokenStore {
    fn create(&self, record: TokenRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let store = self.store("create").await;
            TokenStore::create(&*store, record).await
        })
    }

    fn find_by_tid<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        Box::pin(async move {
            let store = self.store("find_by_tid").await;
            TokenStore::find_by_tid(&*store, tid).await
        })
    }

    fn find_by_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenRecord>>> {
        Box::pin(async move {
            let store = self.store("find_by_token_hash").await;
            TokenStore::find_by_token_hash(&*store, token_hash).await
        })
    }

    fn list_by_identity<'a>(
        &'a self,
        uid: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        Box::pin(async move {
            let store = self.store("list_by_identity").await;
            TokenStore::list_by_identity(&*store, uid).await
        })
    }

    fn list_by_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TokenRecord>>> {
        Box::pin(async move {
            let store = self.store("list_by_session").await;
            TokenStore::list_by_session(&*store, session_id).await
        })
    }

    fn touch<'a>(&'a self, tid: &'a str, now: u64) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let store = self.store("touch").await;
            TokenStore::touch(&*store, tid, now).await
        })
    }

    fn change<'a>(
        &'a self,
        tid: &'a str,
        change: &'a TokenChange,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let store = self.store("change").await;
            TokenStore::change(&*store, tid, change).await
        })
    }

    fn revoke<'a>(&'a self, tid: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let store = self.store("revoke").await;
            TokenStore::revoke(&*store, tid).await
        })
    }

    fn sweep_expired(&self, now: u64, retention_ms: u64) -> BoxFuture<'_, StoreResult<usize>> {
        Box::pin(async move {
            let store = self.store("sweep_expired").await;
            TokenStore::sweep_expired(&*store, now, retention_ms).await
        })
    }
}

/// A fixed budget of calls per `"<bucket>:<key>"` (no clock, so the test is deterministic),
/// kept behind an async lock as a shared counter store would be.
struct AwaitingLimiter {
    per_token: u32,
    per_identity: u32,
    used: Mutex<HashMap<String, u32>>,
    calls: AtomicUsize,
}

/// The `retryAfterMs` the limiter answers.
const RETRY_AFTER_MS: u64 = 1_234;

impl AwaitingLimiter {
    fn new(per_token: u32, per_identity: u32) -> Self {
        AwaitingLimiter {
            per_token,
            per_identity,
            used: Mutex::default(),
            calls: AtomicUsize::new(0),
        }
    }
}

impl RateLimiter for AwaitingLimiter {
    fn check<'a>(&'a self, key: &'a str, bucket: Bucket) -> BoxFuture<'a, Result<(), RateLimited>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            yield_now().await;
            let mut used = self.used.lock().await;
            yield_now().await;
            let budget = match bucket {
                Bucket::Token => self.per_token,
                Bucket::Identity | Bucket::Mint | Bucket::AuthFailure => self.per_identity,
            };
            let count = used
                .entry(format!("{}:{key}", bucket.as_str()))
                .or_default();
            if *count >= budget {
                return Err(RateLimited {
                    retry_after_ms: RETRY_AFTER_MS,
                });
            }
            *count += 1;
            Ok(())
        })
    }
}

/// Resolves `x-test-user` only for users registered in its table (an async lookup).
#[derive(Default)]
struct AwaitingResolver {
    users: RwLock<HashSet<String>>,
    calls: AtomicUsize,
}

impl IdentityResolver for AwaitingResolver {
    fn resolve<'a>(&'a self, parts: &'a Parts) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let user = parts.headers.get(USER_HEADER)?.to_str().ok()?.to_owned();
            yield_now().await;
            let users = self.users.read().await;
            yield_now().await;
            users.contains(&user).then_some(user)
        })
    }
}

/// Collects entries behind an async lock; the write happens inside the returned future.
#[derive(Clone, Default)]
struct AwaitingAuditSink {
    entries: Arc<Mutex<Vec<AuditEntry>>>,
}

impl AwaitingAuditSink {
    async fn events(&self) -> Vec<AuditEvent> {
        self.entries.lock().await.iter().map(|e| e.event).collect()
    }

    /// Waits until an entry with `event` was written (session audits are written on a task).
    async fn wait_for(&self, event: AuditEvent) -> AuditEntry {
        for _ in 0..250 {
            let found = self
                .entries
                .lock()
                .await
                .iter()
                .find(|e| e.event == event)
                .cloned();
            if let Some(entry) = found {
                return entry;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no {event:?} audit entry");
    }
}

impl AuditSink for AwaitingAuditSink {
    fn write(&self, entry: AuditEntry) -> BoxFuture<'static, ()> {
        let entries = Arc::clone(&self.entries);
        Box::pin(async move {
            yield_now().await;
            entries.lock().await.push(entry);
        })
    }
}

/// A counter server whose four extension points all await.
struct World {
    t: TestServer<Counter>,
    tokens: Arc<AwaitingTokenStore>,
    limiter: Arc<AwaitingLimiter>,
    resolver: Arc<AwaitingResolver>,
    audit: AwaitingAuditSink,
}

impl World {
    /// Users `alice` and `bob` are known to the resolver; `per_token` and `per_identity` are
    /// the rate-limit budgets.
    async fn start(allow_anonymous: bool, per_token: u32, per_identity: u32) -> World {
        let tokens = Arc::new(AwaitingTokenStore::default());
        let limiter = Arc::new(AwaitingLimiter::new(per_token, per_identity));
        let resolver = Arc::new(AwaitingResolver::default());
        resolver
            .users
            .write()
            .await
            .extend(["alice".to_owned(), "bob".to_owned()]);
        let audit = AwaitingAuditSink::default();
        let server = TestServer::builder(Counter)
            .options(|o| o.allow_anonymous = allow_anonymous)
            .audit(Arc::new(audit.clone()))
            .token_store(tokens.clone())
            .cookie_identity_only()
            .into_agent_builder()
            .rate_limiter(limiter.clone())
            .identity_resolver(resolver.clone())
            .build()
            .await
            .expect("server config");
        World {
            t: serve(server).await,
            tokens,
            limiter,
            resolver,
            audit,
        }
    }

    /// The record of `tid`, through the server's (awaiting) store.
    async fn record(&self, tid: &str) -> TokenRecord {
        self.t
            .server
            .tokens()
            .find_by_tid(tid)
            .await
            .expect("token store")
            .expect("token record")
    }

    /// Every extension point was called at least once.
    fn assert_all_awaited(&self) {
        assert!(self.tokens.calls.get("find_by_token_hash") > 0);
        assert!(self.limiter.calls.load(Ordering::SeqCst) > 0);
        assert!(self.resolver.calls.load(Ordering::SeqCst) > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_refusals_through_awaiting_extensions() {
    let w = World::start(false, 3, 100).await;
    let t = &w.t;
    let m = t.mint("alice", None).await;
    // Missing or bad bearer → 401 auth-failed.
    t.assert_bad_bearers_refused().await;
    // Budget of 3 per token: the 4th call → 429 with the limiter's retryAfterMs.
    for _ in 0..3 {
        assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    }
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 429);
    assert_eq!(
        a.body,
        json!({"error":{"code":"rate-limited","retryAfterMs": RETRY_AFTER_MS}})
    );
    // Revoked by the owner → 403 revoked (a refusal by bob leaves it alone).
    let m = t.mint("alice", None).await;
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    let a = t
        .post_json("/agent/revoke", Some("bob"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body["error"]["code"], "revoked");
    let a = t
        .post_json("/agent/revoke", Some("alice"), None, &json!({"tid": m.tid}))
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, json!({"status":"revoked"}));
    assert_eq!(w.record(&m.tid).await.status, TokenStatus::Revoked);
    let a = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.body, json!({"error":{"code":"revoked"}}));
    assert_eq!(w.tokens.calls.get("revoke"), 1);
    w.audit.wait_for(AuditEvent::Revoke).await;
    w.assert_all_awaited();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_and_message_through_awaiting_extensions() {
    let w = World::start(false, 100, 100).await;
    let t = &w.t;
    let m = t.mint("alice", None).await;
    assert_eq!(w.record(&m.tid).await.status, TokenStatus::AwaitingClaude);
    let by_tid = w.tokens.calls.get("find_by_tid");
    let by_hash = w.tokens.calls.get("find_by_token_hash");
    let a = t.lap(&m.token, "/observe", &json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["state"]["count"], 0);
    assert!(a.body["actions"].is_array());
    let a = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg":{"type":"inc"},"waitFor":"idle","includeState":true}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["status"], "dispatched");
    assert_eq!(a.body["stateDiff"][0]["path"], "/count");
    assert_eq!(a.body["stateAfter"]["count"], 1);
    // One lookup per call: the verified record, never a second lookup by tid.
    assert_eq!(w.tokens.calls.get("find_by_token_hash") - by_hash, 2);
    assert_eq!(w.tokens.calls.get("find_by_tid"), by_tid);
    // The first success activated the token through the store.
    let record = w.record(&m.tid).await;
    assert_eq!(record.status, TokenStatus::Active);
    assert_eq!(record.label.as_deref(), Some("agent"));
    assert_eq!(w.tokens.calls.get("change"), 1);
    // A success a second or more after the record was last seen touches it through the
    // store; one within the second writes nothing (`docs/lap.md` §2.4).
    let touches = w.tokens.calls.get("touch");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    assert_eq!(w.tokens.calls.get("touch"), touches + 1);
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    assert_eq!(w.tokens.calls.get("touch"), touches + 1);
    // The caller's agent sessions list it (list_by_identity).
    let a = t.get("/agent/sessions", Some("alice")).await;
    assert_eq!(a.body["sessions"][0]["tid"], m.tid.as_str());
    assert_eq!(a.body["sessions"][0]["status"], "active");
    assert_eq!(w.tokens.calls.get("list_by_identity"), 1);
    w.audit.wait_for(AuditEvent::MsgDispatched).await;
    w.assert_all_awaited();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mint_anonymous_and_resolved_through_awaiting_extensions() {
    let w = World::start(true, 100, 2).await;
    let t = &w.t;
    // Resolver-identified.
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.headers.get("set-cookie").is_none());
    let tid = a.body["tid"].as_str().unwrap();
    let record = w.record(tid).await;
    assert_eq!(record.uid.as_deref(), Some("alice"));
    assert_eq!(record.session_id, a.body["sessionId"].as_str().unwrap());
    let token = a.body["token"].as_str().unwrap();
    assert_eq!(t.lap(token, "/state", &json!({})).await.status, 200);
    // Anonymous: the resolver knows no `mallory`, so an anon identity is issued.
    let a = t
        .post_json("/agent/mint", Some("mallory"), None, &json!({}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let cookie = a.headers["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("agent_identity=anon-"), "{cookie}");
    let uid = w.record(a.body["tid"].as_str().unwrap()).await.uid.unwrap();
    assert!(uid.starts_with("anon-"));
    // The cookie identifies the same owner next time (resolver first, then the cookie).
    let pair = cookie.split(';').next().unwrap().to_string();
    let a = t
        .send(
            t.request(reqwest::Method::POST, "/agent/mint")
                .header("cookie", pair),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.headers.get("set-cookie").is_none());
    assert_eq!(
        w.record(a.body["tid"].as_str().unwrap()).await.uid.unwrap(),
        uid
    );
    // Identity budget of 2: alice's third mint → 429, audited.
    t.mint("alice", None).await;
    let a = t
        .post_json("/agent/mint", Some("alice"), None, &json!({}))
        .await;
    assert_eq!(a.status, 429);
    assert_eq!(
        a.body,
        json!({"error":{"code":"rate-limited","retryAfterMs": RETRY_AFTER_MS}})
    );
    let limited = w.audit.wait_for(AuditEvent::RateLimited).await;
    assert_eq!(limited.uid.as_deref(), Some("alice"));
    assert_eq!(limited.detail, json!({"endpoint": "/agent/mint"}));
    // Mints create and sweep through the store and are audited.
    assert_eq!(w.tokens.calls.get("create"), 4);
    assert_eq!(w.tokens.calls.get("sweep_expired"), 4);
    let events = w.audit.events().await;
    assert_eq!(
        events.iter().filter(|e| **e == AuditEvent::Mint).count(),
        4,
        "{events:?}"
    );
    w.assert_all_awaited();

    // Without anonymous mode an unknown caller is 401.
    let w = World::start(false, 100, 100).await;
    let a =
        w.t.post_json("/agent/mint", Some("mallory"), None, &json!({}))
            .await;
    assert_eq!(a.status, 401);
    assert_eq!(a.body["error"]["code"], "auth-required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_routes_through_awaiting_extensions() {
    let w = World::start(false, 100, 100).await;
    let t = &w.t;
    let m = t.mint("alice", None).await;
    assert_eq!(t.lap(&m.token, "/state", &json!({})).await.status, 200);
    // List sessions: the agents come from list_by_session.
    let list = t.get("/agent/human/sessions", Some("alice")).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["sessions"][0]["sessionId"], m.session_id.as_str());
    assert_eq!(list.body["sessions"][0]["agents"][0]["tid"], m.tid.as_str());
    assert_eq!(list.body["sessions"][0]["agents"][0]["status"], "active");
    assert!(w.tokens.calls.get("list_by_session") >= 1);
    // Someone the resolver does not know → 401; another owner → 403.
    assert_eq!(
        t.get("/agent/human/sessions", Some("mallory")).await.status,
        401
    );
    let path = format!("/agent/human/sessions/{}", m.session_id);
    assert_eq!(t.get(&path, Some("bob")).await.status, 403);
    // One session's view.
    let one = t.get(&path, Some("alice")).await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.body["agents"][0]["tid"], m.tid.as_str());
    // Human dispatch.
    let a = t.human_dispatch("alice", &m, json!({"type":"inc"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["status"], "dispatched");
    // Approve a confirmation the agent asked for.
    let call = t.spawn_lap(
        &m.token,
        "/message",
        json!({"msg":{"type":"delete","id":"7"},"timeoutMs":5000}),
    );
    let id = t.next_confirm_id("alice", &m).await;
    let (status, body) = t
        .decide("alice", &m, &id, json!({"decision":"approve"}))
        .await;
    assert_eq!((status, body), (200, json!({"status":"approved"})));
    let answer = call.await.unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["status"], "confirmed");
    assert_eq!(answer.body["stateAfter"]["lastDelete"], "7");
    assert_eq!(answer.body["stateAfter"]["count"], 1);
    let approved = w.audit.wait_for(AuditEvent::ConfirmApproved).await;
    assert_eq!(approved.uid.as_deref(), Some("alice"));
    w.assert_all_awaited();
}

/// A synchronous closure still works as a resolver, as a trait object too.
#[tokio::test]
async fn a_sync_closure_is_a_resolver() {
    let resolver: Arc<dyn IdentityResolver> = Arc::new(|parts: &Parts| {
        parts
            .headers
            .get(USER_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let request = axum::http::Request::builder()
        .header(USER_HEADER, "carol")
        .body(())
        .unwrap();
    let (parts, ()) = request.into_parts();
    assert_eq!(resolver.resolve(&parts).await.as_deref(), Some("carol"));
    let empty = axum::http::Request::new(()).into_parts().0;
    assert_eq!(resolver.resolve(&empty).await, None);
}
