//! `/pending` and `/withdraw` of a paired session (`docs/lap.md` §5.8, `docs/pairing.md`
//! §LAP → frames): the relay keeps what each `/message` it relayed proposed until the app
//! resolves it; a withdrawal is recorded as the outcome and pushed to the app as
//! `confirm-expire`, which voids the proposal in the app's UI.

use serde_json::json;
use tea_agent_schema::protocol::{
    EmptyRequest, PendingProposal, PendingResponse, WithdrawRequest, WithdrawResponse,
};

use super::context::{AnswerResult, Answered};
use super::error::ApiError;
use super::paired::{answer, Relaying};
use crate::app::App;
use crate::engine::paired::link::WithdrawRefusal;

pub(super) async fn pending<A: App>(
    call: &Relaying<'_, A>,
    _: EmptyRequest,
) -> AnswerResult<PendingResponse> {
    let pending: Vec<PendingProposal> = call
        .server
        .pairing()
        .hub
        .pending(&call.record.tid)
        .into_iter()
        .map(|(confirm_id, p)| PendingProposal {
            confirm_id,
            variant: p.variant,
            msg: p.msg,
            reason: p.reason,
            proposed_at: p.proposed_at,
        })
        .collect();
    let mut body = answer(call, PendingResponse { pending });
    body.audit.1.insert("count", json!(body.body.pending.len()));
    Ok(body)
}

pub(super) async fn withdraw<A: App>(
    call: &Relaying<'_, A>,
    req: WithdrawRequest,
) -> AnswerResult<WithdrawResponse> {
    let id = req.confirm_id;
    let hub = &call.server.pairing().hub;
    hub.withdraw(&call.record.tid, &id, call.server.now())
        .map_err(|refusal| match refusal {
            WithdrawRefusal::Unknown => ApiError::invalid(format!("unknown confirmId: {id}")),
            WithdrawRefusal::Decided(status) => ApiError::already_decided(&id, status),
        })?;
    // In a fleet, the withdrawal is recorded for the replica the app may re-pair with.
    #[cfg(feature = "fleet")]
    if let Some(fleet) = &call.server.pairing().fleet {
        let tid = call.record.tid.as_str();
        if let Some(r) = hub.outcome(tid, &id) {
            let budget = super::paired::recorded_state_budget(call);
            if let Err(e) = fleet.decided(tid, &id, &r, budget).await {
                tracing::error!(tid, confirm_id = %id, "fleet: a withdrawal not recorded: {e}");
                crate::telemetry::fleet_hop_failed("store");
            }
        }
    }
    Ok(Answered::withdrawn(
        json!({"confirmId": id, "paired": true}),
    ))
}
