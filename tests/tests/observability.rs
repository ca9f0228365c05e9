//! Metrics and traces (`docs/operations.md` §Metrics and traces), in a binary of its own: it
//! installs the process's metrics recorder (a Prometheus exporter, rendered without a
//! listener). A scripted session on a real server (SQLite) is scraped and every family is
//! found with plausible values (all but `agent_listener_reconnects_total`, which takes a
//! PostgreSQL connection lost); gauges go back down when what they count closes. Spans are
//! captured by a test layer: the `agent.op` span of a LAP and an MCP call carries the
//! operation, surface, session, token id (never the token), status and duration, and SQLite
//! store calls run in `agent.store` spans.
//!
//! The tests take one lock: gauges are process-wide, so one test's sessions would move the
//! other's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_examples::counter::Counter;
use agent_tests::mcp::McpAgent;
use agent_tests::tab::Tab;
use agent_tests::temp::TempDir;
use agent_tests::{Minted, TestServer, USER_HEADER};
use futures::StreamExt as _;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde_json::json;
use tea_agent_runtime::security::JsonLinesAuditSink;
use tea_agent_runtime::store::Stores;
use tea_agent_runtime::telemetry;
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One test at a time (gauges are shared by the whole process).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The process's recorder, installed once, with the runtime's descriptions.
fn recorder() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let seconds = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];
        let bytes = [16.0, 64.0, 256.0, 1024.0, 4096.0, 65536.0];
        let handle = PrometheusBuilder::new()
            .set_buckets(&seconds)
            .expect("buckets")
            .set_buckets_for_metric(Matcher::Full(telemetry::COMMIT_PATCH_BYTES.into()), &bytes)
            .expect("buckets")
            .install_recorder()
            .expect("the only recorder of this process");
        telemetry::describe_metrics();
        handle
    })
}

/// A scrape: every sample by name, with its labels.
struct Scrape {
    text: String,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Scrape {
    fn now() -> Scrape {
        let text = recorder().render();
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("a sample line");
                let (name, labels) = match series.split_once('{') {
                    Some((name, rest)) => (name, rest.trim_end_matches('}')),
                    None => (series, ""),
                };
                let labels = labels
                    .split(',')
                    .filter(|l| !l.is_empty())
                    .map(|pair| {
                        let (k, v) = pair.split_once('=').expect("label=value");
                        (k.to_owned(), v.trim_matches('"').to_owned())
                    })
                    .collect();
                (name.to_owned(), labels, value.parse().expect("a number"))
            })
            .collect();
        Scrape { text, samples }
    }

    /// The sum of the samples of `name` whose labels include `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
            })
            .map(|(_, _, v)| *v)
            .sum()
    }

    /// Whether the family `name` is declared with `kind` (`counter`, `gauge`, `histogram`).
    fn declares(&self, name: &str, kind: &str) -> bool {
        self.text.contains(&format!("# TYPE {name} {kind}"))
    }
}

/// Waits until `check` holds on a scrape (gauges move when tasks notice a close), at most 5 s.
async fn eventually(what: &str, check: impl Fn(&Scrape) -> bool) {
    for _ in 0..100 {
        if check(&Scrape::now()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never held; scrape:\n{}", Scrape::now().text);
}

/// A counter server on a SQLite file, pairing paired sessions, with a small rate limit. Its
/// audit lines go to `/dev/full`, where every append fails.
async fn server(db: &TempDir) -> TestServer<Counter> {
    let stores = Stores::open(&db.file("s.db")).await.expect("store");
    let audit = JsonLinesAuditSink::open("/dev/full")
        .await
        .expect("/dev/full");
    TestServer::builder(Counter)
        .stores(&stores)
        .audit(Arc::new(audit))
        .rate_limit("20/minute")
        .pairing(|p| p.native_apps = true)
        .start()
        .await
}

async fn mint(t: &TestServer<Counter>, paired: bool) -> Minted {
    let a = t
        .post_json(
            "/agent/mint",
            Some("alice"),
            None,
            &json!({ "paired": paired }),
        )
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    Minted {
        token: a.body["token"].as_str().unwrap().into(),
        tid: a.body["tid"].as_str().unwrap().into(),
        session_id: a.body["sessionId"].as_str().unwrap().into(),
    }
}

#[tokio::test]
async fn a_scripted_session_shows_in_every_metric_family() {
    let _one = ONE_AT_A_TIME.lock().await;
    recorder();
    let before = Scrape::now();
    let gauge = |s: &Scrape, name: &str, labels: &[(&str, &str)]| s.value(name, labels);
    let hosted_before = gauge(&before, telemetry::SESSIONS, &[("kind", "hosted")]);
    let paired_before = gauge(&before, telemetry::SESSIONS, &[("kind", "paired")]);
    let mcp_before = gauge(&before, telemetry::MCP_SESSIONS, &[]);
    let sse_before = gauge(&before, telemetry::SSE_SUBSCRIBERS, &[]);
    let sockets_before = gauge(&before, telemetry::PAIRED_SOCKETS, &[]);
    let pending_before = gauge(&before, telemetry::PENDING_PROPOSALS, &[]);

    let db = TempDir::new("observability");
    let t = server(&db).await;

    // A hosted session: observe, two messages, a proposal left pending.
    let m = mint(&t, false).await;
    assert_eq!(t.lap(&m.token, "/observe", &json!({})).await.status, 200);
    for _ in 0..2 {
        let sent = t
            .lap(&m.token, "/message", &json!({"msg": {"type": "inc"}}))
            .await;
        assert_eq!(sent.status, 200, "{:?}", sent.body);
    }
    let proposed = t
        .lap(
            &m.token,
            "/message",
            &json!({"msg": {"type": "delete", "id": "7"}, "timeoutMs": 10}),
        )
        .await;
    assert_eq!(
        proposed.body["status"], "pending-confirmation",
        "{:?}",
        proposed.body
    );

    // A bad token: 401, an auth failure.
    let refused = t.lap("agt_not-a-token", "/observe", &json!({})).await;
    assert_eq!(refused.status, 401);

    // A burst on a token of its own until the rate limit answers 429.
    let burst = mint(&t, false).await;
    let mut limited = 0;
    for _ in 0..30 {
        if t.lap(&burst.token, "/observe", &json!({})).await.status == 429 {
            limited += 1;
        }
    }
    assert!(limited > 0, "the burst was never limited");

    // An MCP session bound to its own token, one tool call.
    let for_mcp = mint(&t, false).await;
    let agent = McpAgent::connect(&t.base, &for_mcp.token).await;
    let observed = agent.call("observe", json!({})).await;
    assert!(observed.get("state").is_some(), "{observed}");

    // The human's event stream, open.
    let events = t
        .request(
            reqwest::Method::GET,
            &format!("/agent/human/sessions/{}/events", m.session_id),
        )
        .header(USER_HEADER, "alice")
        .send()
        .await
        .expect("events");
    assert_eq!(events.status(), 200);
    let mut events = events.bytes_stream();
    events.next().await.expect("a first event").expect("bytes");

    // A paired app's socket.
    let paired = mint(&t, true).await;
    let tab = Tab::pair(&t.base, &paired.token).await;

    // A store call that fails: a token record created twice.
    let tokens = t.server.tokens();
    let record = tokens
        .find_by_tid(&m.tid)
        .await
        .expect("lookup")
        .expect("m's record");
    assert!(
        tokens.create(record).await.is_err(),
        "a second record of one tid"
    );

    let s = Scrape::now();
    // Every family is declared with its type.
    for (name, kind) in [
        (telemetry::REQUESTS_TOTAL, "counter"),
        (telemetry::REQUEST_DURATION_SECONDS, "histogram"),
        (telemetry::SESSIONS, "gauge"),
        (telemetry::MCP_SESSIONS, "gauge"),
        (telemetry::SSE_SUBSCRIBERS, "gauge"),
        (telemetry::PAIRED_SOCKETS, "gauge"),
        (telemetry::RATE_LIMITED_TOTAL, "counter"),
        (telemetry::AUTH_FAILURES_TOTAL, "counter"),
        (telemetry::PENDING_PROPOSALS, "gauge"),
        (telemetry::STORE_OPERATION_DURATION_SECONDS, "histogram"),
        (telemetry::STORE_ERRORS_TOTAL, "counter"),
        (telemetry::COMMIT_PATCH_BYTES, "histogram"),
        (telemetry::AUDIT_WRITE_FAILURES_TOTAL, "counter"),
    ] {
        assert!(
            s.declares(name, kind),
            "{name} ({kind}) missing:\n{}",
            s.text
        );
    }
    // Requests by operation, surface and status.
    let lap = |op: &str, status: &str| {
        s.value(
            telemetry::REQUESTS_TOTAL,
            &[("operation", op), ("surface", "lap"), ("status", status)],
        )
    };
    assert!(lap("observe", "200") >= 2.0, "{}", s.text);
    assert!(lap("send_message", "200") >= 2.0, "{}", s.text);
    assert!(lap("observe", "401") >= 1.0, "{}", s.text);
    assert!(lap("observe", "429") >= limited as f64, "{}", s.text);
    let mcp = &[
        ("operation", "observe"),
        ("surface", "mcp"),
        ("status", "200"),
    ];
    assert!(s.value(telemetry::REQUESTS_TOTAL, mcp) >= 1.0, "{}", s.text);
    let duration = format!("{}_count", telemetry::REQUEST_DURATION_SECONDS);
    let observe = &[("operation", "observe"), ("surface", "lap")];
    assert!(s.value(&duration, observe) >= 2.0, "{}", s.text);
    let sum = format!("{}_sum", telemetry::REQUEST_DURATION_SECONDS);
    assert!(s.value(&sum, observe) > 0.0, "{}", s.text);
    // Refusals.
    let token_bucket = &[("bucket", "token")];
    assert!(s.value(telemetry::RATE_LIMITED_TOTAL, token_bucket) >= limited as f64);
    assert!(
        s.value(telemetry::AUTH_FAILURES_TOTAL, &[]) >= 1.0,
        "{}",
        s.text
    );
    // The store (SQLite): commits and token lookups measured; patches written.
    let store_count = format!("{}_count", telemetry::STORE_OPERATION_DURATION_SECONDS);
    let commit = &[("store", "sqlite"), ("op", "commit")];
    assert!(s.value(&store_count, commit) >= 2.0, "{}", s.text);
    let lookup = &[("store", "sqlite"), ("op", "find_by_token_hash")];
    assert!(s.value(&store_count, lookup) >= 1.0, "{}", s.text);
    let create = &[("store", "sqlite"), ("op", "create")];
    assert_eq!(
        s.value(telemetry::STORE_ERRORS_TOTAL, create),
        1.0,
        "{}",
        s.text
    );
    // Every audit line (mints, the socket's accept, …) failed on /dev/full.
    assert!(
        s.value(telemetry::AUDIT_WRITE_FAILURES_TOTAL, &[]) >= 4.0,
        "{}",
        s.text
    );
    let patches = format!("{}_count", telemetry::COMMIT_PATCH_BYTES);
    assert!(s.value(&patches, &[]) >= 2.0, "{}", s.text);
    let patch_bytes = format!("{}_sum", telemetry::COMMIT_PATCH_BYTES);
    assert!(s.value(&patch_bytes, &[]) > 0.0, "{}", s.text);
    // Gauges: what is open now.
    let hosted = gauge(&s, telemetry::SESSIONS, &[("kind", "hosted")]) - hosted_before;
    assert_eq!(hosted, 3.0, "three hosted sessions:\n{}", s.text);
    let paired_now = gauge(&s, telemetry::SESSIONS, &[("kind", "paired")]) - paired_before;
    assert_eq!(paired_now, 1.0, "one paired session:\n{}", s.text);
    assert_eq!(gauge(&s, telemetry::MCP_SESSIONS, &[]) - mcp_before, 1.0);
    assert_eq!(gauge(&s, telemetry::SSE_SUBSCRIBERS, &[]) - sse_before, 1.0);
    assert_eq!(
        gauge(&s, telemetry::PAIRED_SOCKETS, &[]) - sockets_before,
        1.0
    );
    assert_eq!(
        gauge(&s, telemetry::PENDING_PROPOSALS, &[]) - pending_before,
        1.0
    );

    // Closing each brings its gauge back down.
    agent.close().await;
    drop(events);
    drop(tab);
    let (user, decided) = ("alice", t.next_confirm_id("alice", &m).await);
    let (status, _) = t
        .decide(user, &m, &decided, json!({"decision": "reject"}))
        .await;
    assert_eq!(status, 200);
    let revoked = t
        .post_json(
            "/agent/revoke",
            Some("alice"),
            None,
            &json!({"tid": paired.tid}),
        )
        .await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    for minted in [&m, &burst, &for_mcp] {
        t.server
            .host()
            .close_session(&minted.session_id)
            .await
            .expect("closed");
    }
    eventually("every gauge back where it was", |s| {
        gauge(s, telemetry::SESSIONS, &[("kind", "hosted")]) == hosted_before
            && gauge(s, telemetry::SESSIONS, &[("kind", "paired")]) == paired_before
            && gauge(s, telemetry::MCP_SESSIONS, &[]) == mcp_before
            && gauge(s, telemetry::SSE_SUBSCRIBERS, &[]) == sse_before
            && gauge(s, telemetry::PAIRED_SOCKETS, &[]) == sockets_before
            && gauge(s, telemetry::PENDING_PROPOSALS, &[]) == pending_before
    })
    .await;
}

/// What the test layer saw of one span: its name and its fields as text.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    fields: HashMap<String, String>,
}

/// Records every span and its fields, as created and as recorded later.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<HashMap<u64, Seen>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        self.0.lock().unwrap().insert(id.into_u64(), seen);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(seen) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
}

impl Spans {
    fn named(&self, name: &str) -> Vec<Seen> {
        let spans = self.0.lock().unwrap();
        spans.values().filter(|s| s.name == name).cloned().collect()
    }
}

#[tokio::test]
async fn operations_and_store_calls_run_in_spans() {
    let _one = ONE_AT_A_TIME.lock().await;
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    // This thread's subscriber: the test runtime runs the server's tasks on it too.
    let _default = tracing::subscriber::set_default(subscriber);

    let db = TempDir::new("observability-spans");
    let t = server(&db).await;
    let m = mint(&t, false).await;
    let observed = t.lap(&m.token, "/observe", &json!({})).await;
    assert_eq!(observed.status, 200);
    let sent = t
        .lap(&m.token, "/message", &json!({"msg": {"type": "inc"}}))
        .await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    let agent = McpAgent::connect(&t.base, &m.token).await;
    agent.call("get_state", json!({})).await;
    agent.close().await;

    let ops = spans.named("agent.op");
    let find = |operation: &str, surface: &str| {
        ops.iter()
            .find(|s| {
                s.fields.get("operation").map(String::as_str) == Some(operation)
                    && s.fields.get("surface").map(String::as_str) == Some(surface)
            })
            .unwrap_or_else(|| panic!("no agent.op span of {operation} on {surface}: {ops:#?}"))
            .clone()
    };
    let lap = find("observe", "lap");
    let mcp = find("get_state", "mcp");
    for span in [&lap, &mcp] {
        assert_eq!(span.fields["session"], m.session_id, "{span:?}");
        assert_eq!(span.fields["token_id"], m.tid, "{span:?}");
        assert_eq!(span.fields["status"], "200", "{span:?}");
        let ms: f64 = span.fields["duration_ms"].parse().expect("a duration");
        assert!(ms >= 0.0, "{span:?}");
    }
    assert_eq!(mcp.fields["mcp_generation"], "session", "{mcp:?}");
    assert!(!lap.fields.contains_key("mcp_generation"), "{lap:?}");
    // No span field ever holds the token.
    let all = spans.0.lock().unwrap();
    for seen in all.values() {
        for value in seen.fields.values() {
            assert!(
                !value.contains(&m.token) && !value.contains("agt_"),
                "a span field holds a token: {seen:?}"
            );
        }
    }
    drop(all);
    let store = spans.named("agent.store");
    for op in ["insert_session", "commit", "find_by_token_hash"] {
        assert!(
            store.iter().any(
                |s| s.fields.get("store").map(String::as_str) == Some("sqlite")
                    && s.fields.get("op").map(String::as_str) == Some(op)
            ),
            "no agent.store span of {op} on sqlite: {store:#?}"
        );
    }
}

/// The OAuth records' store calls are measured like every other store call, in memory and on
/// SQLite: a registration is counted under `op="register_client"` of its store.
#[tokio::test]
async fn oauth_store_calls_are_measured() {
    let _one = ONE_AT_A_TIME.lock().await;
    recorder();
    let db = TempDir::new("observability-oauth");
    let store_count = format!("{}_count", telemetry::STORE_OPERATION_DURATION_SECONDS);
    for (kind, stores) in [
        ("memory", Stores::in_memory()),
        (
            "sqlite",
            Stores::open(&db.file("o.db")).await.expect("store"),
        ),
    ] {
        let op = &[("store", kind), ("op", "register_client")];
        let before = Scrape::now().value(&store_count, op);
        let t = TestServer::builder(Counter)
            .stores(&stores)
            .options(|o| o.oauth.enabled = true)
            .start()
            .await;
        let registered = reqwest::Client::new()
            .post(format!("{}/agent/oauth/register", t.base))
            .json(&json!({
                "client_name": "Measured", "redirect_uris": ["http://127.0.0.1/cb"],
                "token_endpoint_auth_method": "none",
            }))
            .send()
            .await
            .expect("register");
        assert_eq!(registered.status(), 201);
        eventually(&format!("register_client counted on {kind}"), |s| {
            s.value(&store_count, op) >= before + 1.0
        })
        .await;
    }
}
