//! The recording of one call in its session's transcript (`docs/security.md` §Transcripts):
//! [`super::perform`] starts a [`Recording`] (the operation named by its wire name, its tool) for every call of a hosted session that records
//! (after the gate verified the caller, so the token id is known) and finishes it with the
//! reply, whatever the surface that took the call (LAP, MCP, the bridge). The request is the
//! body as the agent sent it and the answer the one it got: both are agent-facing, so no
//! `@redact` field is in either.

use std::sync::Arc;

use serde_json::Value;

use super::backend::{Caller, SessionBackend};
use super::context::ProposalSlot;
use super::reply::Reply;
use crate::engine::session::CallRecord;

/// A call being recorded: what is known when it arrives.
pub(crate) struct Recording {
    backend: Arc<dyn SessionBackend>,
    tid: String,
    at: u64,
    op: &'static str,
    /// The request's JSON text.
    request: Box<str>,
    proposed: ProposalSlot,
}

impl Recording {
    /// Starts recording `caller`'s call of `op` with `body` at `now`, when its session keeps
    /// a transcript; the caller then carries the slot of its dispatch's proposal.
    pub(crate) fn start(
        caller: &mut Caller,
        op: &'static str,
        body: &Value,
        now: u64,
    ) -> Option<Self> {
        if !caller.backend.records_transcript() {
            return None;
        }
        let proposed = ProposalSlot::default();
        caller.proposed = Some(proposed.clone());
        Some(Recording {
            backend: caller.backend.clone(),
            tid: caller.record.tid.clone(),
            at: now,
            op,
            // Not `Display`: its formatter adapter cost more than the writing itself.
            request: serde_json::to_string(body)
                .unwrap_or_default()
                .into_boxed_str(),
            proposed,
        })
    }

    /// Records the call with `reply`, its answer.
    pub(crate) fn finish(self, reply: &Reply) {
        let (status, answer) = reply.recorded_text();
        let mut call = CallRecord::new(self.tid, self.at, self.op, self.request, status, answer);
        call.proposed = self.proposed.get().cloned();
        self.backend.record_call(call);
    }
}
