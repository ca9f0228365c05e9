//! The audit entries and sinks, tested (`audit.rs`).

use super::*;

#[test]
fn the_readable_line_names_the_event_the_token_and_the_detail() {
    let mut entry = AuditEntry::new(1, AuditEvent::Mint, json!({"session": "s1"}));
    entry.tid = Some("t1".into());
    assert_eq!(
        readable_line(&entry),
        r#"audit mint tid=t1 {"session":"s1"}"#
    );
    let bare = AuditEntry::new(1, AuditEvent::Mint, json!({}));
    assert_eq!(readable_line(&bare), "audit mint");
}
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

#[derive(Debug, Clone)]
struct Captured {
    target: String,
    level: Level,
    fields: Vec<(String, String)>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().push(Captured {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }
}

fn sample() -> AuditEntry {
    AuditEntry::mint(1_000, "tid-1", Some("user-1"), "https://app.example", "s-1")
}

#[test]
fn entry_json_shape() {
    assert_eq!(
        sample().to_json(),
        r#"{"at":1000,"tid":"tid-1","uid":"user-1","event":"mint","detail":{"origin":"https://app.example","sessionId":"s-1"}}"#
    );
    assert_eq!(
        AuditEntry::rate_limited(5, None, "/agent/mint").to_json(),
        r#"{"at":5,"tid":null,"uid":null,"event":"rate-limited","detail":{"endpoint":"/agent/mint"}}"#
    );
    assert_eq!(
        AuditEntry::revoke(6, "t", Some("u")).to_json(),
        r#"{"at":6,"tid":"t","uid":"u","event":"revoke","detail":{}}"#
    );
    let back: AuditEntry = serde_json::from_str(&sample().to_json()).unwrap();
    assert_eq!(back, sample());
}

#[test]
fn event_spellings() {
    for event in [
        AuditEvent::Mint,
        AuditEvent::RateLimited,
        AuditEvent::Revoke,
        AuditEvent::LapCall,
        AuditEvent::MsgDispatched,
        AuditEvent::MsgBlocked,
        AuditEvent::ConfirmProposed,
        AuditEvent::ConfirmApproved,
        AuditEvent::ConfirmRejected,
        AuditEvent::AuthFailed,
        AuditEvent::SessionNotMigrated,
        AuditEvent::SessionEvicted,
        AuditEvent::OauthRegistered,
        AuditEvent::OauthConsent,
        AuditEvent::OauthGranted,
        AuditEvent::OauthRefreshed,
        AuditEvent::OauthRevoked,
        AuditEvent::OauthRefused,
    ] {
        assert_eq!(serde_json::to_value(event).unwrap(), event.as_str());
    }
    assert_eq!(AuditEvent::MsgDispatched.as_str(), "msg-dispatched");
    assert_eq!(AuditEvent::LapCall.as_str(), "lap-call");
    assert_eq!(AuditEvent::OauthGranted.as_str(), "oauth-granted");
}

#[test]
fn tracing_sink_emits_exactly_one_event_with_the_json() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        futures::executor::block_on(TracingAuditSink.write(sample()));
    });
    let events = capture.0.lock().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event.target, "agent_audit");
    assert_eq!(event.level, Level::INFO);
    assert_eq!(event.fields.len(), 1, "{:?}", event.fields);
    assert_eq!(event.fields[0].0, "entry");
    let carried: Value = serde_json::from_str(&event.fields[0].1).unwrap();
    assert_eq!(carried, serde_json::to_value(sample()).unwrap());
}

#[tokio::test]
async fn memory_sink_collects_in_order() {
    let sink = MemoryAuditSink::new();
    let shared: Arc<dyn AuditSink> = Arc::new(sink.clone());
    assert!(sink.is_empty());
    shared.write(sample()).await;
    shared
        .write(AuditEntry::revoke(2_000, "tid-1", Some("user-1")))
        .await;
    assert_eq!(sink.events(), [AuditEvent::Mint, AuditEvent::Revoke]);
    assert_eq!(sink.entries()[0], sample());
    assert_eq!(sink.len(), 2);
    sink.clear();
    assert!(sink.is_empty());
}

#[tokio::test]
async fn json_lines_sink_appends_one_line_per_entry() {
    let path = std::env::temp_dir().join(format!("agent-audit-{}.jsonl", uuid::Uuid::new_v4()));
    let sink = JsonLinesAuditSink::open(&path).await.unwrap();
    assert_eq!(sink.path(), path.as_path());
    let mut writes = Vec::new();
    for i in 0..20u64 {
        let sink = sink.clone();
        writes.push(tokio::spawn(async move {
            sink.write(AuditEntry::revoke(i, &format!("t{i}"), None))
                .await;
        }));
    }
    for w in writes {
        w.await.unwrap();
    }
    // Reopening appends rather than truncating.
    let again = JsonLinesAuditSink::open(&path).await.unwrap();
    again.write(sample()).await;

    let text = tokio::fs::read_to_string(&path).await.unwrap();
    let _ = tokio::fs::remove_file(&path).await;
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 21);
    let mut ats: Vec<u64> = lines[..20]
        .iter()
        .map(|l| serde_json::from_str::<AuditEntry>(l).unwrap().at)
        .collect();
    ats.sort_unstable();
    assert_eq!(ats, (0..20).collect::<Vec<_>>());
    assert_eq!(
        serde_json::from_str::<AuditEntry>(lines[20]).unwrap(),
        sample()
    );
}

#[tokio::test]
async fn json_lines_flush_waits_for_every_append_started() {
    let path = std::env::temp_dir().join(format!("agent-audit-{}.jsonl", uuid::Uuid::new_v4()));
    let sink = JsonLinesAuditSink::open(&path).await.unwrap();
    // Callers that went away: their appends run on their own tasks.
    for i in 0..50u64 {
        drop(sink.write(AuditEntry::revoke(i, &format!("t{i}"), None)));
    }
    sink.flush().await;
    let lines = tokio::fs::read_to_string(&path)
        .await
        .unwrap()
        .lines()
        .count();
    let _ = tokio::fs::remove_file(&path).await;
    assert_eq!(lines, 50);
}

#[tokio::test]
async fn json_lines_write_survives_a_dropped_caller() {
    let path = std::env::temp_dir().join(format!("agent-audit-{}.jsonl", uuid::Uuid::new_v4()));
    let sink = JsonLinesAuditSink::open(&path).await.unwrap();
    drop(sink.write(sample()));
    let mut lines = 0;
    for _ in 0..200 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        lines = tokio::fs::read_to_string(&path)
            .await
            .unwrap()
            .lines()
            .count();
        if lines == 1 {
            break;
        }
    }
    let _ = tokio::fs::remove_file(&path).await;
    assert_eq!(lines, 1);
}
