//! Cancelling running effects (`docs/semantics.md` §5.6): who may cancel what, the signal, the
//! grace after which an effect that ignores it is aborted, and what the log and the audit say.

use std::sync::{Arc, Weak};

use serde_json::json;
use tea_agent_schema::protocol::{CancelledWork, LogKind, StartedBy, Work};

use super::work::{End, WorkSlot};
use super::{activity, Session, SessionCore};
use crate::app::App;
use crate::security::AuditEvent;

/// Which of an agent's running effects a cancel names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorkSelector {
    /// The effects the commit with this seq started.
    Seq(u64),
    /// The effects of the dispatch sent with this `idempotencyKey`.
    Key(String),
    /// One effect by its id.
    Work(u64),
    /// Every effect the token's messages started.
    All,
}

/// Who cancels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Canceller {
    /// The human.
    Human,
    /// The agent token whose messages started the work.
    Agent,
    /// That token's MCP client, by `notifications/cancelled` of its call.
    McpClient,
}

impl Canceller {
    /// The wire name (`by` of a drain's `cancelled`, the audit's detail).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Canceller::Human => "human",
            Canceller::Agent => "agent",
            Canceller::McpClient => "mcp-client",
        }
    }
}

/// Why an agent's cancel was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CancelRefused {
    /// The named work was started by another token (or the human, or the app).
    NotYours,
}

impl<A: App> Session<A> {
    /// The effects the session is running now, oldest first, with their latest progress.
    pub fn running_work(&self) -> Vec<Work> {
        self.core.work.list()
    }

    /// Follows the running effects: the value changes whenever one starts, ends, is
    /// cancelled or reports progress (read [`Session::running_work`] then).
    pub fn follow_work(&self) -> tokio::sync::watch::Receiver<u64> {
        self.core.work.follow()
    }

    /// Cancels the running effect `work` as the human, who may cancel any effect of the
    /// session; false when it is not running (finished, or never started).
    pub fn cancel_work(&self, work: u64) -> bool {
        let slots = self.core.work.select(|s| s.id() == work);
        !cancel_slots(&self.core, &slots, Canceller::Human).is_empty()
    }

    /// Cancels, for the agent token `tid`, the running effects `selector` names; only effects
    /// its own messages started. `tid` is `None` on the pairing client's session, whose one
    /// agent is the server's (its messages carry no token of this process). `Ok` with the ids
    /// asked to stop (empty: nothing named is running).
    pub(crate) fn cancel_agent_work(
        &self,
        tid: Option<&str>,
        selector: &WorkSelector,
        by: Canceller,
    ) -> Result<Vec<u64>, CancelRefused> {
        let agents = |s: &WorkSlot| {
            s.starter().started_by == StartedBy::Agent && s.starter().tid.as_deref() == tid
        };
        let named = self.core.work.select(|s| match selector {
            WorkSelector::Seq(seq) => s.seq() == *seq,
            WorkSelector::Key(key) => agents(s) && s.starter().key.as_deref() == Some(key),
            WorkSelector::Work(id) => s.id() == *id,
            WorkSelector::All => agents(s),
        });
        let mine = |s: &Arc<WorkSlot>| agents(s);
        if !named.iter().all(mine) {
            return Err(CancelRefused::NotYours);
        }
        Ok(cancel_slots(&self.core, &named, by))
    }
}

/// Asks `slots` to stop on behalf of `by` and starts each one's grace; the ids of those that
/// were running and not asked before.
pub(super) fn cancel_slots<A: App>(
    core: &Arc<SessionCore<A>>,
    slots: &[Arc<WorkSlot>],
    by: Canceller,
) -> Vec<u64> {
    let grace = core.config.cancel_grace;
    let mut cancelled = Vec::new();
    for slot in slots {
        if !slot.request_cancel(by.as_str()) {
            continue;
        }
        cancelled.push(slot.id());
        let weak = Arc::downgrade(core);
        let slot = slot.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            // Still running after the grace: its task is aborted.
            if ended_cancelled(&weak, &slot, by.as_str(), true) {
                slot.abort();
            }
        });
    }
    cancelled
}

/// Ends `slot` as cancelled by `by` (`aborted`: after the grace) and writes the log and audit
/// entries; false when it had ended already.
pub(super) fn ended_cancelled<A: App>(
    core: &Weak<SessionCore<A>>,
    slot: &WorkSlot,
    by: &str,
    aborted: bool,
) -> bool {
    let cancelled = CancelledWork {
        id: slot.id(),
        by: by.to_owned(),
        aborted,
    };
    if !slot.finish(End::Cancelled(cancelled)) {
        return false;
    }
    let Some(core) = core.upgrade() else {
        return true;
    };
    let starter = slot.starter();
    let who = match by {
        "human" => "the user".to_owned(),
        "mcp-client" => "the agent's MCP client".to_owned(),
        _ => "the agent".to_owned(),
    };
    let mut entry = activity::entry(LogKind::Cancelled, core.now());
    entry.variant = starter.variant.clone();
    entry.intent = starter.intent.clone().or_else(|| starter.variant.clone());
    entry.detail = Some(if aborted {
        format!("cancelled by {who}; aborted after the grace")
    } else {
        format!("cancelled by {who}")
    });
    let tid = (by != "human").then(|| starter.tid.clone()).flatten();
    entry.tid = tid.clone();
    core.append_log(entry);
    core.audit(
        AuditEvent::WorkCancelled,
        tid,
        json!({
            "work": slot.id(),
            "seq": slot.seq(),
            "variant": starter.variant,
            "by": by,
            "aborted": aborted,
        }),
    );
    true
}
