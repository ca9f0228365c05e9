//! Decisions on a proposal (`docs/semantics.md` §7): approve (with an edited message or not)
//! and reject, by the human in the console or, where the app opts in, by the user of an MCP
//! client answering its form (`docs/mcp.md` §Confirmation in the client). Both take the same
//! path: the same checks of an edit, the same stored compare-and-set (the first decision
//! wins), the same events, log and audit, which records who decided.

use serde_json::{json, Map, Value};

use super::confirm::Decision;
use super::dispatch::{payload_of, variant_of, EditedApprovalError};
use super::events::EventBody;
use super::queue::{Approval, Origin};
use super::Session;
use crate::app::App;
use crate::config::{json_len, OverBudget};
use crate::security::AuditEvent;

/// Who decided a proposal, as its audit entry records it (`by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decider {
    /// The human, in the console (or through the `Session` API).
    Human,
    /// The user of an MCP client, answering its confirmation form.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // only MCP asks a client
    Client,
}

impl Decider {
    /// `human` or `client`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Decider::Human => "human",
            Decider::Client => "client",
        }
    }
}

impl<A: App> Session<A> {
    /// Approves a proposal, optionally with an edited message of the same variant, and
    /// enqueues the message (`docs/semantics.md` §7). Human only. With a store, the approval
    /// is stored first (a compare-and-set): when another decision on the proposal was stored
    /// first, through another replica, it is refused with that decision and nothing runs.
    pub async fn approve(
        &self,
        id: &str,
        edited: Option<&Value>,
    ) -> Result<(), EditedApprovalError> {
        self.approve_as(id, edited, Decider::Human).await
    }

    /// [`Self::approve`] by `by`: the one path of every approval, the edit checked as the
    /// console's is, the decision audited with who made it.
    pub(crate) async fn approve_as(
        &self,
        id: &str,
        edited: Option<&Value>,
        by: Decider,
    ) -> Result<(), EditedApprovalError> {
        if self.is_closed() {
            return Err(EditedApprovalError::Closed);
        }
        self.core.sweep_confirms();
        let entry = self.core.confirms.lock().check_pending(id)?.clone();
        let applied = match edited {
            Some(m) => {
                let Some(t) = variant_of(m) else {
                    return Err(EditedApprovalError::Invalid(
                        "msg.type must be a string".into(),
                    ));
                };
                let limit = self.core.config.budgets.confirm_bytes;
                if let Err(e) = OverBudget::check("the edited msg", json_len(m), limit) {
                    return Err(EditedApprovalError::Invalid(e.to_string()));
                }
                if t != entry.variant {
                    return Err(EditedApprovalError::Invalid(format!(
                        "msg.type must be \"{}\": an edit cannot change the variant",
                        entry.variant
                    )));
                }
                m.clone()
            }
            None => {
                let mut m = Map::new();
                m.insert("type".into(), json!(entry.variant));
                if let Value::Object(p) = &entry.payload {
                    m.extend(p.clone());
                }
                Value::Object(m)
            }
        };
        let typed = match self.check_message(&applied, self.core.config.policy) {
            Ok((typed, _)) => typed,
            Err((detail, _)) => return Err(EditedApprovalError::Invalid(detail)),
        };
        let approval = Decision::Approve {
            edited_payload: edited.map(payload_of),
        };
        let decided = self.core.decide(id, &approval).await?;
        self.core
            .events
            .lock()
            .publish(EventBody::Confirm(Box::new(decided.clone())));
        let mut detail =
            json!({"variant": decided.variant, "confirmId": decided.id, "by": by.as_str()});
        if edited.is_some() {
            detail["edited"] = json!(true);
        }
        self.core
            .audit(AuditEvent::ConfirmApproved, decided.tid.clone(), detail);
        let decision = super::transcript::Decided::Approve;
        self.core.record_decision(
            decided.tid.as_deref(),
            &decided.id,
            decision,
            edited,
            by.as_str(),
        );
        let envelope_origin = Origin::Approved(Box::new(Approval {
            confirm_id: decided.id.clone(),
            applied,
            edited: edited.is_some(),
            intent: decided.intent.clone(),
            variant: decided.variant.clone(),
            tid: decided.tid.clone(),
        }));
        self.core
            .enqueue(typed, envelope_origin)
            .map_err(|_| EditedApprovalError::Closed)?;
        self.core.confirm_changed.send_modify(|v| *v += 1);
        Ok(())
    }

    /// Rejects a pending proposal. Human only. With a store, the rejection is stored first,
    /// like an approval.
    pub async fn reject(&self, id: &str) -> Result<(), EditedApprovalError> {
        self.reject_as(id, Decider::Human).await
    }

    /// [`Self::reject`] by `by`, audited with who decided.
    pub(crate) async fn reject_as(&self, id: &str, by: Decider) -> Result<(), EditedApprovalError> {
        self.core.sweep_confirms();
        let decided = self.core.decide(id, &Decision::Reject).await?;
        self.core
            .events
            .lock()
            .publish(EventBody::Confirm(Box::new(decided.clone())));
        self.core.log_decision(&decided, "user-cancelled");
        let decision = super::transcript::Decided::Reject;
        self.core.record_decision(
            decided.tid.as_deref(),
            &decided.id,
            decision,
            None,
            by.as_str(),
        );
        self.core.audit(
            AuditEvent::ConfirmRejected,
            decided.tid.clone(),
            json!({"variant": decided.variant, "confirmId": decided.id, "by": by.as_str()}),
        );
        self.core.confirm_changed.send_modify(|v| *v += 1);
        Ok(())
    }
}
