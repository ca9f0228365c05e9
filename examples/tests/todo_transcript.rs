//! An agent's run on the todo app, recorded and replayed as a test (`tea_agent_runtime::testing`):
//! the run adds a todo, toggles it, clears the completed ones with the user's approval, and
//! proposes a delete the user rejects. The replay's report is a snapshot: a change to the
//! app that changes what the agent is answered shows in review.

use std::future::Future;
use std::time::Duration;

use agent_examples::todo::{Msg, MsgKind, State, TodoApp};
use serde_json::{json, Value};
use tea_agent_runtime::app::{App, Bindings, EffectContext, EffectError, Region, VisibleContent};
use tea_agent_runtime::config::HostConfig;
use tea_agent_runtime::session::{Transcript, TranscriptEntry};
use tea_agent_runtime::testing::{self, Agent, ReplayError};
use tea_agent_runtime::{AgentContext, AgentDocs, AgentServer, Operation, Session};

/// Waits for the first proposal of `session` and decides it.
async fn decide_first(session: &Session<TodoApp>, approve: bool) {
    let id = loop {
        if let Some(p) = session.pending().first() {
            break p.id.clone();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let decided = if approve {
        session.approve(&id, None).await
    } else {
        session.reject(&id).await
    };
    decided.expect("the decision applies");
}

/// The recorded run, its transcript as the console exports it (a JSON file).
async fn record_run() -> String {
    let mut config = HostConfig::default();
    config.transcripts = true;
    let server = AgentServer::builder(TodoApp::default())
        .host_config(config)
        .build()
        .await
        .unwrap();
    let session = server.host().create_session(Some("me".into())).unwrap();
    let agent = Agent::mint(&server, session.id()).await.unwrap();
    let message = |msg: Value| json!({ "msg": msg });
    let (status, _) = agent.call(Operation::Observe, json!({})).await;
    assert_eq!(status, 200);
    let add = message(json!({"type": "add", "title": "buy milk"}));
    assert_eq!(agent.call(Operation::Message, add).await.0, 200);
    let toggle = message(json!({"type": "toggle", "id": "t3"}));
    assert_eq!(agent.call(Operation::Message, toggle).await.0, 200);
    // The clear needs the user: they approve while the agent's call waits.
    let clear = json!({"msg": {"type": "clearCompleted"}, "reason": "tidy up"});
    let (answer, ()) = tokio::join!(
        agent.call(Operation::Message, clear),
        decide_first(&session, true)
    );
    assert_eq!(answer.1["status"], "confirmed", "{}", answer.1);
    // A delete the agent stops waiting for; the user rejects it after; the agent asks.
    let delete = json!({"msg": {"type": "delete", "id": "t1"}, "timeoutMs": 20});
    let (_, pending) = agent.call(Operation::Message, delete).await;
    assert_eq!(pending["status"], "pending-confirmation", "{pending}");
    decide_first(&session, false).await;
    let poll = json!({"confirmId": pending["confirmId"]});
    let (_, result) = agent.call(Operation::ConfirmResult, poll).await;
    assert_eq!(result["status"], "rejected", "{result}");
    serde_json::to_string_pretty(&session.transcript(None)).unwrap()
}

#[tokio::test]
async fn a_recorded_run_replays_as_it_was() {
    let file = record_run().await;
    let transcript = testing::read_transcript(&file).unwrap();
    let report = testing::replay(TodoApp::default(), &transcript)
        .await
        .unwrap();
    assert!(
        report.matches(),
        "{}",
        serde_json::to_string_pretty(&report).unwrap()
    );
    insta::assert_json_snapshot!(report);
}

/// The README's example (§An agent's run, replayed as a test), line for line: a run recorded
/// by [`record_run`] and kept beside the tests ([`record_the_kept_run_again`] writes it).
#[tokio::test]
async fn a_run_kept_beside_the_tests_replays() -> Result<(), ReplayError> {
    let transcript = tea_agent_runtime::testing::read_transcript(include_str!("runs/clear.json"))?;
    let report = tea_agent_runtime::testing::replay(TodoApp::default(), &transcript).await?;
    insta::assert_json_snapshot!(report);
    assert!(report.matches(), "{:?}", report.differences());
    Ok(())
}

/// The README's example is the test above, as it is written there.
#[test]
fn the_readme_shows_the_kept_runs_test() {
    let readme = include_str!("../../README.md");
    let example = readme
        .split("### An agent's run, replayed as a test")
        .nth(1)
        .and_then(|section| section.split("```rust\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the README's example");
    let indented: String = example.lines().map(|l| format!("    {l}\n")).collect();
    assert!(
        include_str!("todo_transcript.rs").contains(&indented),
        "the README's example is not the body of a test here:\n{example}"
    );
}

/// Records the run kept in `runs/clear.json` again (after a change the run should show):
/// `cargo test -p agent-examples --test todo_transcript -- --ignored record_the_kept_run_again`,
/// then review the file and the snapshot.
#[tokio::test]
#[ignore = "writes tests/runs/clear.json"]
async fn record_the_kept_run_again() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runs/clear.json");
    std::fs::write(path, record_run().await + "\n").expect("written");
}

#[tokio::test]
async fn the_report_changes_when_update_does() {
    let transcript = testing::read_transcript(&record_run().await).unwrap();
    let same = testing::replay(TodoApp::default(), &transcript)
        .await
        .unwrap();
    let changed = testing::replay(StuckToggle(TodoApp::default()), &transcript)
        .await
        .unwrap();
    assert!(!changed.matches());
    assert_ne!(
        serde_json::to_value(&same).unwrap(),
        serde_json::to_value(&changed).unwrap()
    );
    // The toggle no longer marks the todo done: its answer differs, and so does the clear's.
    let differing: Vec<&str> = changed
        .differences()
        .iter()
        .map(|c| c.op.as_str())
        .collect();
    assert!(differing.len() >= 2, "{differing:?}");
    assert!(!changed.schema_changed, "only update changed");
}

#[tokio::test]
async fn a_transcript_of_another_app_or_no_transcript_is_refused() {
    let mut transcript: Transcript = testing::read_transcript(&record_run().await).unwrap();
    assert!(transcript
        .entries
        .iter()
        .any(|e| matches!(e, TranscriptEntry::Decision(_))));
    transcript.app.name = "counter".into();
    let refused = testing::replay(TodoApp::default(), &transcript).await;
    assert_eq!(
        refused.unwrap_err(),
        ReplayError::OtherApp {
            recorded: "counter".into(),
            app: "todo".into()
        }
    );
    for text in ["", "[1,2]", r#"{"format":"har","version":1}"#] {
        let e = testing::read_transcript(text).unwrap_err();
        assert!(matches!(e, ReplayError::NotATranscript(_)), "{text}: {e}");
    }
    let future = r#"{"format":"agent-transcript","version":7}"#;
    assert_eq!(
        testing::read_transcript(future).unwrap_err().to_string(),
        "transcript format version 7 is not supported (this runtime reads version 1)"
    );
}

#[tokio::test]
async fn the_redacted_api_key_is_never_recorded() {
    let file = record_run().await;
    assert!(!file.contains("sk-demo-secret"), "{file}");
    assert!(!file.contains("apiKey"), "{file}");
}

/// The todo app with a different `update`: `toggle` does nothing.
struct StuckToggle(TodoApp);

impl App for StuckToggle {
    type State = State;
    type Msg = Msg;
    type Effect = <TodoApp as App>::Effect;

    fn name(&self) -> &str {
        self.0.name()
    }

    fn version(&self) -> &str {
        self.0.version()
    }

    fn init(&self) -> (State, Vec<Self::Effect>) {
        self.0.init()
    }

    fn update(&self, state: &mut State, msg: Msg) -> Vec<Self::Effect> {
        match msg {
            Msg::Toggle { .. } => Vec::new(),
            other => self.0.update(state, other),
        }
    }

    fn run_effect(
        &self,
        effect: Self::Effect,
        ctx: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        self.0.run_effect(effect, ctx)
    }

    fn docs(&self) -> Option<AgentDocs> {
        self.0.docs()
    }

    fn context(&self, state: &State) -> Option<AgentContext> {
        self.0.context(state)
    }

    fn bindings(&self, state: &State) -> Bindings<MsgKind> {
        self.0.bindings(state)
    }

    fn outline(&self, state: &State) -> Option<VisibleContent> {
        self.0.outline(state)
    }

    fn regions(&self, state: &State) -> Vec<Region> {
        self.0.regions(state)
    }
}
