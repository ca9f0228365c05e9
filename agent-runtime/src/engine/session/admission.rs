//! What an agent may send now (`docs/semantics.md` §5.1 steps 2–3): the dispatch-mode gate's
//! detail, and the action gate (`HostConfig::action_gates`) checked when a message is sent and
//! again at its turn in the session's queue.

use serde_json::json;
use tea_agent_schema::protocol::LogKind;
use tea_agent_schema::{AgentMsg as _, MessageAnnotations};

use super::{Session, SessionError};
use crate::algo::affordances::{Offer, DEFAULT_UNAVAILABLE_REASON, GATE_FAILED_REASON};
use crate::app::App;
use crate::config::ActionGates;

impl<A: App> Session<A> {
    pub(super) fn human_only_detail(intent: Option<&str>) -> String {
        match intent.filter(|i| !i.is_empty()) {
            Some(i) => format!("\"{i}\" can only be triggered by the user (human-only action)"),
            None => "this action can only be triggered by the user (human-only)".to_string(),
        }
    }

    /// Why an agent may not send `variant` in the current state, when it may not: its route
    /// gate is closed (or failed: fail-closed), or `list_actions` does not offer it now
    /// (`docs/semantics.md` §5.1). `None` when it is offered, or when
    /// [`ActionGates::Advisory`] keeps gates advisory. The detail names the action, the
    /// gate's reason and its expression; never a value of the state.
    pub(super) fn unavailable_detail(
        &self,
        variant: &str,
        annotations: &MessageAnnotations,
    ) -> Result<Option<String>, SessionError> {
        if self.core.config.action_gates == ActionGates::Advisory {
            return Ok(None);
        }
        let catalog = &self.core.catalog;
        let offer = self.with_listed(|listed| catalog.offer(listed, variant))?;
        let label = match annotations.intent.as_deref().filter(|i| !i.is_empty()) {
            Some(intent) => format!("\"{intent}\""),
            None => format!("\"{variant}\""),
        };
        Ok(match offer {
            Offer::Open => None,
            Offer::GateClosed => {
                let reason = annotations
                    .route_gate_reason
                    .as_deref()
                    .unwrap_or(DEFAULT_UNAVAILABLE_REASON);
                let gate = annotations.route_gate.as_deref().unwrap_or_default();
                Some(format!(
                    "{label} is not available now: {reason} (routeGate: {gate})"
                ))
            }
            Offer::GateFailed => {
                let gate = annotations.route_gate.as_deref().unwrap_or_default();
                Some(format!(
                    "{label} is not available now: {GATE_FAILED_REASON} (routeGate: {gate})"
                ))
            }
            Offer::NotListed => Some(format!(
                "{label} is not offered in the current state: list_actions does not list it now"
            )),
        })
    }

    /// At an agent's message's turn in the task: `Some(detail)` when its action is no longer
    /// offered in the current state, after a `blocked` log entry for it (`tid` the sender's).
    /// A hook that fails refuses too (fail-closed).
    pub(crate) fn refuse_at_turn(&self, msg: &A::Msg, tid: Option<&str>) -> Option<String> {
        let variant = msg.variant_name();
        let annotations = self.core.catalog.annotations(variant)?;
        let detail = match self.unavailable_detail(variant, annotations) {
            Ok(detail) => detail?,
            Err(e) => format!("the action list could not be computed: {e}"),
        };
        let json = serde_json::to_value(msg).unwrap_or_else(|_| json!({ "type": variant }));
        self.append_log(self.message_log_entry(LogKind::Blocked, &json, tid));
        Some(detail)
    }
}
