//! Replaying an agent's run as a test (`docs/guide.md` §Replaying an agent's run): a
//! [`Transcript`] (recorded by a session with `HostConfig::transcripts` on, exported from the
//! console or `Session::transcript`) is made again against an app in this process, with no
//! socket: each call goes through the same operation table and gate as LAP and MCP calls, on a
//! fresh session, each recorded token replaced by a token of its own; the human's decisions on
//! the agents' proposals are made again on the replayed proposals, at the point of the run
//! where they were made. The [`ReplayReport`] gives each answer with what changes from one run
//! to the next (proposal, token, session and log entry ids; times) replaced by placeholders,
//! so that a snapshot of it changes only when the app answers differently.
//!
//! ```no_run
//! # async fn t<A: tea_agent_runtime::app::App>(app: A) -> Result<(), tea_agent_runtime::testing::ReplayError> {
//! let transcript = tea_agent_runtime::testing::read_transcript(r#"{"format":"agent-transcript"}"#)?;
//! let report = tea_agent_runtime::testing::replay(app, &transcript).await?;
//! assert!(report.matches(), "{:?}", report.differences());
//! # Ok(()) }
//! ```
//!
//! What is not replayed: the human's own dispatches, effects' timing beyond the calls' own
//! waits (a replay waits as the recorded calls did), the rate limit (calls are made back to
//! back), proposals that expired.

mod agent;
#[cfg(feature = "explore")]
mod explore;
mod normalise;
mod report;

pub use agent::Agent;
#[cfg(feature = "explore")]
pub use explore::{explore, ExploreError, ExploreFailure, ExploreReport, Explorer, Property};
pub use report::{ReplayError, ReplayReport, ReplayStep, ReplayedCall, ReplayedDecision};

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::app::App;
use crate::config::HostConfig;
use crate::engine::session::{
    Decided, RecordedCall, RecordedDecision, Session, Transcript, TranscriptEntry,
    TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION,
};
use crate::ops::{Operation, Reply, ServerState};
use crate::server::AgentServer;
use normalise::Normaliser;

/// The owner of a replay's session.
const OWNER: &str = "replay";

/// Reads a transcript file: refused with [`ReplayError::NotATranscript`] when it is not
/// one, [`ReplayError::UnsupportedVersion`] when its format is of another version.
pub fn read_transcript(text: &str) -> Result<Transcript, ReplayError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ReplayError::NotATranscript(format!("not JSON: {e}")))?;
    check_format(value.get("format"), value.get("version"))?;
    serde_json::from_value(value).map_err(|e| ReplayError::NotATranscript(e.to_string()))
}

fn check_format(format: Option<&Value>, version: Option<&Value>) -> Result<(), ReplayError> {
    if format.and_then(Value::as_str) != Some(TRANSCRIPT_FORMAT) {
        return Err(ReplayError::NotATranscript(format!(
            "its \"format\" is not \"{TRANSCRIPT_FORMAT}\""
        )));
    }
    match version.and_then(Value::as_u64) {
        Some(v) if v == u64::from(TRANSCRIPT_VERSION) => Ok(()),
        Some(v) => Err(ReplayError::UnsupportedVersion {
            found: u32::try_from(v).unwrap_or(u32::MAX),
            supported: TRANSCRIPT_VERSION,
        }),
        None => Err(ReplayError::NotATranscript(
            "its \"version\" is not a number".into(),
        )),
    }
}

/// Replays `transcript` against `app` with the default [`HostConfig`] ([`replay_with`]).
pub async fn replay<A: App>(app: A, transcript: &Transcript) -> Result<ReplayReport, ReplayError> {
    replay_with(app, HostConfig::default(), transcript).await
}

/// Replays `transcript` against `app`, its host configured by `config`: refused with
/// [`ReplayError::OtherApp`] when the transcript names another app. A changed schema is
/// replayed (and said in [`ReplayReport::schema_changed`]): checking the next version of the
/// app against a recorded run is what a replay is for.
pub async fn replay_with<A: App>(
    app: A,
    config: HostConfig,
    transcript: &Transcript,
) -> Result<ReplayReport, ReplayError> {
    check_format(
        Some(&Value::from(transcript.format.as_str())),
        Some(&Value::from(transcript.version)),
    )?;
    if transcript.app.name != app.name() {
        return Err(ReplayError::OtherApp {
            recorded: transcript.app.name.clone(),
            app: app.name().to_string(),
        });
    }
    let name = app.name().to_string();
    let server = AgentServer::builder(app)
        .host_config(config)
        .build()
        .await
        .map_err(|e| ReplayError::Setup(e.to_string()))?;
    let schema_changed = server.host().catalog().schema_hash() != transcript.app.schema_hash;
    let session = server
        .host()
        .create_session(Some(OWNER.to_string()))
        .map_err(|e| ReplayError::Setup(e.to_string()))?;
    let mut run = Run {
        server: server.state().clone(),
        session: session.clone(),
        agents: HashMap::new(),
        confirms: HashMap::new(),
        mapped: HashSet::new(),
        recorded: Normaliser::default(),
        replayed: Normaliser::default(),
        steps: Vec::new(),
    };
    let steps = run.all(&transcript.entries).await;
    session.close();
    Ok(ReplayReport {
        app: name,
        schema_changed,
        dropped: transcript.dropped,
        steps: steps?,
    })
}

/// A replay under way.
struct Run<A: App> {
    server: ServerState<A>,
    session: Session<A>,
    /// Each recorded token's replacement.
    agents: HashMap<String, Arc<Agent<A>>>,
    /// Each recorded proposal's replayed `confirmId`.
    confirms: HashMap<String, String>,
    /// The replayed proposals already matched to a recorded one.
    mapped: HashSet<String>,
    recorded: Normaliser,
    replayed: Normaliser,
    /// The steps so far; a decision made during its proposal's call is filled in then.
    steps: Vec<Option<ReplayStep>>,
}

impl<A: App> Run<A> {
    async fn all(&mut self, entries: &[TranscriptEntry]) -> Result<Vec<ReplayStep>, ReplayError> {
        // Where each decision is, and which call proposed each proposal.
        let mut decisions: HashMap<&str, (usize, &RecordedDecision)> = HashMap::new();
        let mut proposers: HashMap<&str, usize> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            match entry {
                TranscriptEntry::Decision(d) => {
                    decisions.entry(&d.confirm_id).or_insert((i, d));
                }
                TranscriptEntry::Call(c) => {
                    if let Some(p) = &c.proposed {
                        proposers.entry(p).or_insert(i);
                    }
                }
            }
        }
        for (i, entry) in entries.iter().enumerate() {
            match entry {
                TranscriptEntry::Call(c) => {
                    // A decision before its proposal's call was made while the call waited.
                    let during = c
                        .proposed
                        .as_deref()
                        .and_then(|p| decisions.get(p))
                        .filter(|(j, _)| *j < i)
                        .copied();
                    let step = self.call(c, during).await?;
                    self.steps.push(Some(ReplayStep::Call(Box::new(step))));
                }
                TranscriptEntry::Decision(d) => {
                    let later_call = proposers.get(d.confirm_id.as_str()).is_some_and(|p| *p > i);
                    if self.confirms.contains_key(&d.confirm_id) || !later_call {
                        let step = self.decide(d).await;
                        self.steps.push(Some(ReplayStep::Decision(step)));
                    } else {
                        // Filled in by its call.
                        self.steps.push(None);
                    }
                }
            }
        }
        let mut steps = Vec::with_capacity(self.steps.len());
        for (i, step) in std::mem::take(&mut self.steps).into_iter().enumerate() {
            match (step, &entries[i]) {
                (Some(step), _) => steps.push(step),
                (None, TranscriptEntry::Decision(d)) => {
                    steps.push(ReplayStep::Decision(
                        self.not_applied(d, "the replayed call made no proposal".into()),
                    ));
                }
                (None, TranscriptEntry::Call(_)) => {}
            }
        }
        Ok(steps)
    }

    /// The agent standing in for the recorded token `tid`, minted for the replay's session
    /// on first use.
    async fn agent(&mut self, tid: &str) -> Result<Arc<Agent<A>>, ReplayError> {
        if let Some(agent) = self.agents.get(tid) {
            return Ok(agent.clone());
        }
        let agent = Arc::new(Agent::mint_on(&self.server, self.session.id()).await?);
        self.agents.insert(tid.to_string(), agent.clone());
        Ok(agent)
    }

    async fn call(
        &mut self,
        c: &RecordedCall,
        during: Option<(usize, &RecordedDecision)>,
    ) -> Result<ReplayedCall, ReplayError> {
        let agent = self.recorded.id("agent", &c.tid);
        let recorded_request = self.recorded.value(&c.request);
        let recorded_answer = self.recorded.value(&c.answer);
        let op = Operation::from_tool(&c.op);
        let skipped = match (&c.omitted, op) {
            (Some(note), _) if c.request.is_null() => Some(format!(
                "its request was left out of the transcript: {note}"
            )),
            (_, None) => Some(format!("no operation is named \"{}\"", c.op)),
            _ => None,
        };
        let (Some(op), None) = (op, &skipped) else {
            return Ok(ReplayedCall {
                agent,
                op: c.op.clone(),
                request: recorded_request,
                status: 0,
                answer: Value::Null,
                matches: false,
                recorded: Some(recorded_answer),
                skipped,
            });
        };
        let caller = self.agent(&c.tid).await?;
        self.replayed.id("agent", caller.tid());
        let request = self.rewrite(&c.request);
        let call = caller.reply(op, request.clone());
        let reply = match c.proposed.as_deref() {
            Some(proposed) => self.proposing(call, caller.tid(), proposed, during).await,
            None => call.await,
        };
        let (status, answer) = reply.recorded();
        let request = self.replayed.value(&request);
        let answer = self.replayed.value(&answer);
        // An answer left out of the transcript is not compared.
        let matches = status == c.status && (answer == recorded_answer || c.answer.is_null());
        Ok(ReplayedCall {
            agent,
            op: c.op.clone(),
            request,
            status,
            answer,
            matches,
            recorded: (!matches).then_some(recorded_answer),
            skipped: None,
        })
    }

    /// Runs `call`, which proposed `proposed` when recorded: the replayed proposal of `tid`
    /// it makes is matched to it, and decided at once when the decision was made `during`
    /// the recorded call.
    async fn proposing(
        &mut self,
        call: impl Future<Output = Reply>,
        tid: &str,
        proposed: &str,
        during: Option<(usize, &RecordedDecision)>,
    ) -> Reply {
        let mut changes = self.session.confirm_changes();
        tokio::pin!(call);
        loop {
            if let Some(id) = self.new_proposal(tid) {
                self.confirms.insert(proposed.to_string(), id);
                if let Some((at, decision)) = during {
                    let step = self.decide(decision).await;
                    self.steps[at] = Some(ReplayStep::Decision(step));
                }
                return call.await;
            }
            tokio::select! {
                reply = &mut call => {
                    if let Some(id) = self.new_proposal(tid) {
                        self.confirms.insert(proposed.to_string(), id);
                    }
                    return reply;
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        return call.await;
                    }
                }
            }
        }
    }

    /// A pending proposal of `tid` not yet matched to a recorded one (marked matched).
    fn new_proposal(&mut self, tid: &str) -> Option<String> {
        let id = self
            .session
            .pending()
            .into_iter()
            .find(|e| e.tid.as_deref() == Some(tid) && !self.mapped.contains(&e.id))?
            .id;
        self.mapped.insert(id.clone());
        Some(id)
    }

    /// `request` with the recorded proposals it names replaced by the replayed ones.
    fn rewrite(&self, request: &Value) -> Value {
        match request {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| match (k.as_str(), v.as_str()) {
                        ("confirmId", Some(id)) => {
                            let id = self.confirms.get(id).map_or(id, String::as_str);
                            (k.clone(), Value::from(id))
                        }
                        _ => (k.clone(), self.rewrite(v)),
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.rewrite(v)).collect()),
            other => other.clone(),
        }
    }

    /// Makes the decision `d` again on its replayed proposal.
    async fn decide(&mut self, d: &RecordedDecision) -> ReplayedDecision {
        let Some(id) = self.confirms.get(&d.confirm_id).cloned() else {
            return self.not_applied(d, "the replay made no such proposal".into());
        };
        let decided = match d.decision {
            Decided::Approve => self.session.approve(&id, d.msg.as_ref()).await,
            Decided::Reject => self.session.reject(&id).await,
        };
        let agent = self.recorded.id("agent", &d.tid);
        // Both runs number the proposal here, so later answers naming proposals compare.
        self.recorded.id("confirm", &d.confirm_id);
        let confirm_id = self.replayed.id("confirm", &id);
        ReplayedDecision {
            agent,
            confirm_id,
            decision: d.decision,
            edited: d.msg.is_some(),
            applied: decided.is_ok(),
            detail: decided.err().map(|e| e.to_string()),
        }
    }

    fn not_applied(&mut self, d: &RecordedDecision, detail: String) -> ReplayedDecision {
        ReplayedDecision {
            agent: self.recorded.id("agent", &d.tid),
            confirm_id: self.recorded.id("confirm", &d.confirm_id),
            decision: d.decision,
            edited: d.msg.is_some(),
            applied: false,
            detail: Some(detail),
        }
    }
}
