//! Transcripts (`docs/security.md` §Transcripts): what the agents of a session called and were
//! answered, kept in a ring bounded in entries and bytes, and the human's decisions on their
//! proposals, so that `tea_agent_runtime::testing` can replay a run against the next version of
//! the app. The gate records every call of a hosted session (`ops/transcript.rs`), in the form
//! the agent sent and was answered, redaction already applied; the session records decisions.
//! The ring lives in memory only and gives way to the host's budget of what sessions retain
//! (`retained.rs`).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::retained::{self, RetainedRing, RingCharge};
use super::Session;
use crate::app::App;

/// The `format` of a transcript file.
pub const TRANSCRIPT_FORMAT: &str = "agent-transcript";

/// The `version` of the transcript format this runtime writes and reads.
pub const TRANSCRIPT_VERSION: u32 = 1;

/// What an agent's run looked like from the agent's side, as `Session::transcript` answers it
/// and the console exports it (`docs/lap.md` §6, `GET …/transcript`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Transcript {
    /// Always [`TRANSCRIPT_FORMAT`].
    pub format: String,
    /// The format's version ([`TRANSCRIPT_VERSION`]).
    pub version: u32,
    /// The app that answered.
    pub app: TranscriptApp,
    /// The session recorded.
    pub session_id: String,
    /// The one token the transcript is limited to, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<String>,
    /// Entries the ring dropped (oldest first) to stay within its bounds: a transcript that
    /// dropped some starts in the middle of the run.
    pub dropped: u64,
    /// Calls and decisions, in the order they ended.
    pub entries: Vec<TranscriptEntry>,
}

/// The app a transcript was recorded on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TranscriptApp {
    /// `App::name`.
    pub name: String,
    /// `App::version`.
    pub version: String,
    /// The describe document's `schemaHash`.
    pub schema_hash: String,
}

impl TranscriptApp {
    /// The app named `name`, at `version`, with `schema_hash`.
    pub fn new(name: String, version: String, schema_hash: String) -> Self {
        TranscriptApp {
            name,
            version,
            schema_hash,
        }
    }
}

/// One entry of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TranscriptEntry {
    /// An agent's call of an operation.
    Call(RecordedCall),
    /// The human's (or an MCP client user's) decision on an agent's proposal.
    Decision(RecordedDecision),
}

/// An agent's call, as it was sent and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RecordedCall {
    /// The calling token's id (never the token).
    pub tid: String,
    /// When the call arrived (ms since the epoch).
    pub at: u64,
    /// The operation's wire name (its MCP tool, `send_message`, …).
    pub op: String,
    /// The request body; `null` when it was left out for its size (`omitted` says so).
    pub request: Value,
    /// The answer's HTTP status (200, or the error's).
    pub status: u16,
    /// The answer's body (the error body for an error); `null` when left out for its size.
    pub answer: Value,
    /// The proposal this call's dispatch made (its `confirmId`), when it needed the human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed: Option<String>,
    /// What was left out of the entry for the size of one entry, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
}

impl RecordedCall {
    /// A call of `op` by `tid` at `at`, with its request and answer.
    pub fn new(
        tid: String,
        at: u64,
        op: String,
        request: Value,
        status: u16,
        answer: Value,
    ) -> Self {
        RecordedCall {
            tid,
            at,
            op,
            request,
            status,
            answer,
            proposed: None,
            omitted: None,
        }
    }
}

/// An agent's call as the ring keeps it: the request and the answer as the JSON texts that
/// were sent (copied, never parsed: recording is on every call's path), read into values only
/// when a transcript is asked for. Its size in memory is the texts' lengths and a few words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallRecord {
    pub(crate) tid: String,
    pub(crate) at: u64,
    pub(crate) op: &'static str,
    /// The request's JSON text; `null` when left out for its size.
    pub(crate) request: Box<str>,
    pub(crate) status: u16,
    /// The answer's JSON text; `null` when left out for its size.
    pub(crate) answer: Box<str>,
    pub(crate) proposed: Option<String>,
    pub(crate) omitted: Option<String>,
}

impl CallRecord {
    /// A call of `op` by `tid` at `at`, with the texts of its request and answer.
    pub(crate) fn new(
        tid: String,
        at: u64,
        op: &'static str,
        request: Box<str>,
        status: u16,
        answer: Box<str>,
    ) -> Self {
        CallRecord {
            tid,
            at,
            op,
            request,
            status,
            answer,
            proposed: None,
            omitted: None,
        }
    }

    /// The call as a transcript file holds it (a [`TranscriptEntry::Call`]), as one JSON
    /// text: its request and answer written in as the texts they are (JSON this process
    /// wrote), never parsed.
    fn into_text(self) -> String {
        let mut out = Vec::with_capacity(
            self.request.len() + self.answer.len() + self.tid.len() + self.op.len() + 128,
        );
        // Writing to a Vec and JSON of Rust strings and integers never fail (serde_json writes
        // numbers without the formatting machinery, which showed in the hot path's profile).
        out.extend_from_slice(br#"{"kind":"call","tid":"#);
        let _ = serde_json::to_writer(&mut out, &self.tid);
        out.extend_from_slice(br#","at":"#);
        let _ = serde_json::to_writer(&mut out, &self.at);
        out.extend_from_slice(br#","op":"#);
        let _ = serde_json::to_writer(&mut out, self.op);
        out.extend_from_slice(br#","request":"#);
        out.extend_from_slice(self.request.as_bytes());
        out.extend_from_slice(br#","status":"#);
        let _ = serde_json::to_writer(&mut out, &self.status);
        out.extend_from_slice(br#","answer":"#);
        out.extend_from_slice(self.answer.as_bytes());
        for (name, value) in [("proposed", &self.proposed), ("omitted", &self.omitted)] {
            if let Some(value) = value {
                out.extend_from_slice(b",\"");
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
                let _ = serde_json::to_writer(&mut out, value);
            }
        }
        out.push(b'}');
        // Every piece is UTF-8.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// An entry as the ring is handed it.
enum Kept {
    Call(CallRecord),
    Decision(RecordedDecision),
}

impl Kept {
    /// The entry's JSON text, as a transcript file holds it: one allocation on the heap,
    /// whose size is what the ring counts.
    fn into_text(self) -> Box<str> {
        match self {
            Kept::Call(c) => c.into_text(),
            Kept::Decision(d) => {
                serde_json::to_string(&TranscriptEntry::Decision(d)).unwrap_or_default()
            }
        }
        .into_boxed_str()
    }
}

/// A decision on an agent's proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RecordedDecision {
    /// The token that proposed.
    pub tid: String,
    /// When the decision was made (ms since the epoch).
    pub at: u64,
    /// The proposal's `confirmId`.
    pub confirm_id: String,
    /// What was decided.
    pub decision: Decided,
    /// The message the human approved instead, when they edited it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<Value>,
    /// Who decided: `human` or `client` (an MCP client's user).
    pub by: String,
}

/// What a decision decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decided {
    /// Approved (possibly edited).
    Approve,
    /// Rejected.
    Reject,
}

/// One slot of the ring: an entry's JSON text, what the host is charged for it on the heap
/// (`retained.rs`), and its stamp.
struct Slot {
    text: Box<str>,
    cost: usize,
    stamp: u64,
}

/// The ring of a session's transcript: the newest entries within a count and a byte total
/// (of their JSON), each kept as its text; the host's budget is charged what an entry takes on
/// the heap.
pub(crate) struct TranscriptRing {
    /// Entries oldest first.
    entries: VecDeque<Slot>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
    dropped: u64,
    charge: RingCharge,
}

impl RetainedRing for TranscriptRing {
    fn oldest_stamp(&self) -> Option<u64> {
        self.entries.front().map(|e| e.stamp)
    }

    fn drop_oldest(&mut self) {
        if let Some(old) = self.entries.pop_front() {
            self.bytes -= old.text.len();
            self.dropped += 1;
            self.charge.sub(old.cost);
        }
    }

    fn charge(&mut self) -> &mut RingCharge {
        &mut self.charge
    }
}

impl TranscriptRing {
    /// An empty ring of at most `max_entries` entries and `max_bytes`, counted in `charge`.
    pub(crate) fn new(max_entries: usize, max_bytes: usize, charge: RingCharge) -> Self {
        TranscriptRing {
            entries: VecDeque::new(),
            bytes: 0,
            max_entries,
            max_bytes,
            dropped: 0,
            charge,
        }
    }

    /// Appends `entry`, then drops the oldest while over the count or the bytes (the newest
    /// stays, even alone over the bytes: [`bound_call`] keeps an entry within its own limit),
    /// then gives way to the host's budget.
    fn push(&mut self, entry: Kept) {
        if self.max_entries == 0 {
            self.dropped += 1;
            return;
        }
        let text = entry.into_text();
        let cost = retained::text_cost(text.len(), std::mem::size_of::<Slot>());
        // Room first: the ring never holds more than its count, nor its slots.
        while self.entries.len() >= self.max_entries {
            self.drop_oldest();
        }
        self.bytes += text.len();
        let stamp = self.charge.add(cost);
        self.entries.push_back(Slot { text, cost, stamp });
        while self.entries.len() > self.max_entries
            || (self.bytes > self.max_bytes && self.entries.len() > 1)
        {
            self.drop_oldest();
        }
        retained::settle(self);
    }

    /// The entries, oldest first, of `tid` only when given (a decision is its proposer's),
    /// and how many the ring dropped (for its bounds or the host's budget).
    pub(crate) fn entries(&self, tid: Option<&str>) -> (Vec<TranscriptEntry>, u64) {
        let entries = self
            .entries
            .iter()
            .filter_map(|slot| serde_json::from_str::<TranscriptEntry>(&slot.text).ok())
            .filter(|e| {
                tid.is_none_or(|t| match e {
                    TranscriptEntry::Call(c) => c.tid == t,
                    TranscriptEntry::Decision(d) => d.tid == t,
                })
            })
            .collect();
        (entries, self.dropped)
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Keeps `call` within `limit` bytes of request and answer each: one over it is replaced by
/// `null`, and `omitted` says what went and why (a replay then cannot repeat a call whose
/// request went, and says so).
pub(crate) fn bound_call(call: &mut CallRecord, limit: usize) {
    let mut notes = Vec::new();
    for (what, text) in [("request", &mut call.request), ("answer", &mut call.answer)] {
        let bytes = text.len();
        if bytes > limit {
            *text = "null".into();
            notes.push(format!("{what} of {bytes} bytes; the limit is {limit}"));
        }
    }
    if !notes.is_empty() {
        call.omitted = Some(notes.join(", "));
    }
}

impl<A: App> Session<A> {
    /// Whether this session records its agents' calls (`HostConfig::transcripts`).
    pub fn records_transcript(&self) -> bool {
        self.core.config.transcripts
    }

    /// The session's transcript: the calls its agents made and what they were answered, and
    /// the decisions on their proposals, oldest first; only the entries of the token `tid`
    /// when given. Empty unless `HostConfig::transcripts` is on. Requests and answers are
    /// what the agents sent and received: `@redact` fields were never in them.
    pub fn transcript(&self, tid: Option<&str>) -> Transcript {
        let (entries, dropped) = self.core.transcript.lock().entries(tid);
        Transcript {
            format: TRANSCRIPT_FORMAT.to_string(),
            version: TRANSCRIPT_VERSION,
            app: TranscriptApp::new(
                self.core.app.name().to_string(),
                self.core.app.version().to_string(),
                self.core.catalog.schema_hash().to_string(),
            ),
            session_id: self.core.id.clone(),
            tid: tid.map(str::to_string),
            dropped,
            entries,
        }
    }

    /// A receiver that sees every change of the session's proposals (a proposal, a
    /// decision, a withdrawal, an expiry).
    pub(crate) fn confirm_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.core.confirm_changed.subscribe()
    }

    /// Records an agent's call (the gate, `ops/transcript.rs`), bounded first
    /// ([`Budgets::transcript_entry_bytes`](crate::config::Budgets::transcript_entry_bytes));
    /// nothing when transcripts are off.
    pub(crate) fn record_call(&self, mut call: CallRecord) {
        if !self.records_transcript() {
            return;
        }
        bound_call(&mut call, self.core.config.budgets.transcript_entry_bytes);
        self.core.transcript.lock().push(Kept::Call(call));
    }
}

impl<A: App> super::SessionCore<A> {
    /// Records a decision on the proposal `confirm_id` of `tid`; nothing when transcripts are
    /// off or the proposal is not an agent's.
    pub(crate) fn record_decision(
        &self,
        tid: Option<&str>,
        confirm_id: &str,
        decision: Decided,
        msg: Option<&Value>,
        by: &str,
    ) {
        let Some(tid) = tid.filter(|_| self.config.transcripts) else {
            return;
        };
        let entry = Kept::Decision(RecordedDecision {
            tid: tid.to_string(),
            at: self.now(),
            confirm_id: confirm_id.to_string(),
            decision,
            msg: msg.cloned(),
            by: by.to_string(),
        });
        self.transcript.lock().push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::session::Retained;
    use serde_json::json;

    fn call(n: u64, text: &str) -> Kept {
        Kept::Call(CallRecord::new(
            "t".into(),
            n,
            "narrate",
            json!({"text": text}).to_string().into(),
            200,
            json!({"ok": true}).to_string().into(),
        ))
    }

    fn ats(ring: &TranscriptRing) -> Vec<u64> {
        ring.entries(None)
            .0
            .iter()
            .map(|e| match e {
                TranscriptEntry::Call(c) => c.at,
                TranscriptEntry::Decision(d) => d.at,
            })
            .collect()
    }

    #[test]
    fn an_overflow_keeps_the_newest_within_the_bytes() {
        let mut ring = TranscriptRing::new(100, 2_000, Retained::unbounded().charge());
        for n in 0..50 {
            ring.push(call(n, &"x".repeat(300)));
        }
        assert!(ring.bytes() <= 2_000, "{}", ring.bytes());
        let kept = ats(&ring);
        assert!(kept.len() >= 4 && kept.len() < 10, "{kept:?}");
        assert_eq!(*kept.last().unwrap(), 49, "the newest is kept");
        assert!(kept.windows(2).all(|w| w[0] + 1 == w[1]), "{kept:?}");
        assert_eq!(ring.entries(None).1, 50 - kept.len() as u64);
    }

    #[test]
    fn an_overflow_keeps_the_newest_within_the_count() {
        let mut ring = TranscriptRing::new(3, 1 << 20, Retained::unbounded().charge());
        for n in 0..10 {
            ring.push(call(n, "hi"));
        }
        assert_eq!(ats(&ring), vec![7, 8, 9]);
        assert_eq!(ring.entries(None).1, 7);
    }

    #[test]
    fn a_call_over_the_entry_limit_says_what_it_left_out() {
        let mut c = CallRecord::new(
            "t".into(),
            1,
            "get_state",
            "{}".into(),
            200,
            json!({"state": "y".repeat(1000)}).to_string().into(),
        );
        bound_call(&mut c, 100);
        let TranscriptEntry::Call(c) = serde_json::from_str(&c.into_text()).unwrap() else {
            panic!("a call");
        };
        assert_eq!(c.request, json!({}));
        assert_eq!(c.answer, Value::Null);
        let note = c.omitted.unwrap();
        assert!(
            note.starts_with("answer of 1012 bytes; the limit is 100"),
            "{note}"
        );
    }

    #[test]
    fn entries_filter_by_token() {
        let mut ring = TranscriptRing::new(10, 1 << 20, Retained::unbounded().charge());
        ring.push(call(1, "a"));
        ring.push(Kept::Decision(RecordedDecision {
            tid: "other".into(),
            at: 2,
            confirm_id: "c".into(),
            decision: Decided::Reject,
            msg: None,
            by: "human".into(),
        }));
        assert_eq!(ring.entries(Some("t")).0.len(), 1);
        assert_eq!(ring.entries(Some("other")).0.len(), 1);
        assert_eq!(ring.entries(None).0.len(), 2);
    }
}
