//! The human's side of a case: deciding the agent's proposals (approve, reject, approve an
//! edit), dispatching messages of their own seeded with values agents must never read, and
//! undoing the agent's last commit.

use std::time::Duration;

use serde_json::{json, Value};
use tea_agent_schema::protocol::{SendResult, WaitFor};
use tea_agent_schema::shape::VariantModel;
use tea_agent_schema::DispatchMode;

use super::check;
use super::generate::{self, Pool};
use super::plan::{Decision, Draws, StepPlan};
use super::report::{Property, Violation};
use super::run::{violation, Case, CANARY};
use crate::app::App;
use crate::engine::session::DispatchOptions;
use crate::ops::Operation;

impl<A: App> Case<'_, A> {
    /// The human decides the proposal the answer names; the agent reads the outcome.
    pub(super) async fn decide(
        &mut self,
        step: usize,
        plan: &StepPlan,
        variant: &VariantModel,
        answer: &Value,
        draws: &mut Draws<'_>,
    ) -> Result<(), Violation> {
        let Some(id) = answer.get("confirmId").and_then(Value::as_str) else {
            return Ok(());
        };
        let before = (self.seq, self.whole.clone());
        let line = match plan.decision {
            Decision::Approve => match self.session.approve(id, None).await {
                Ok(()) => "the human approves".to_string(),
                Err(e) => format!("the human's approval is refused: {e}"),
            },
            Decision::Reject => match self.session.reject(id).await {
                Ok(()) => "the human rejects".to_string(),
                Err(e) => format!("the human's rejection is refused: {e}"),
            },
            Decision::Edit => {
                let pool = Pool::from_state(&self.view);
                let edited = generate::message(variant, draws, &pool).map(|g| g.msg);
                match edited {
                    Ok(msg) => match self.session.approve(id, Some(&msg)).await {
                        Ok(()) => format!("the human approves it edited to {msg}"),
                        Err(e) => {
                            let _ = self.session.reject(id).await;
                            format!("the human's edit {msg} is refused ({e}); they reject")
                        }
                    },
                    Err(_) => {
                        let _ = self.session.reject(id).await;
                        "the human rejects".to_string()
                    }
                }
            }
        };
        self.lines.push(line);
        let poll = json!({"confirmId": id, "timeoutMs": 60_000});
        let (_, result) = self.call(step, Operation::ConfirmResult, poll).await?;
        let status = result.get("status").and_then(Value::as_str).unwrap_or("");
        self.lines
            .push(format!("the agent reads the outcome: {status}"));
        if status == "confirmed" {
            let seq = result.get("seq").and_then(Value::as_u64).unwrap_or(0);
            if seq == before.0 + 1 {
                self.last_agent = Some((seq, before.1));
            }
        }
        Ok(())
    }

    /// The human dispatches a message of their own, its strings seeded with a value agents
    /// must not read once it lands in a `@redact` field.
    pub(super) async fn human_dispatch(
        &mut self,
        step: usize,
        plan: &StepPlan,
    ) -> Result<(), Violation> {
        let human: Vec<&VariantModel> = self
            .ctx
            .variants
            .iter()
            .filter(|v| v.annotations.dispatch_mode == DispatchMode::HumanOnly)
            .collect();
        let pool_of: Vec<&VariantModel> = match human.is_empty() {
            true => self.ctx.variants.iter().collect(),
            false => human,
        };
        let variant = pool_of[plan.pick.index(pool_of.len())];
        self.canaries += 1;
        let pool = Pool {
            canary: Some(format!("{CANARY}{}⟧", self.canaries)),
            ..Pool::from_state(&self.view)
        };
        let Ok(generated) = generate::message(variant, &mut Draws::new(&plan.draws), &pool) else {
            return Ok(());
        };
        let mut opts = DispatchOptions::waiting_for(WaitFor::Drained);
        opts.timeout = Duration::from_secs(60);
        let answer = self.session.dispatch_as_human(&generated.msg, opts).await;
        let (outcome, value) = match answer {
            Ok(result) => {
                let outcome = match &result {
                    SendResult::Dispatched { .. } => "dispatched",
                    _ => "not dispatched",
                };
                (outcome, serde_json::to_value(&result).unwrap_or_default())
            }
            Err(e) => ("refused", json!({"error": e.to_string()})),
        };
        self.lines.push(format!(
            "the human dispatches {} → {outcome}",
            generated.msg
        ));
        self.checked(Property::UpdateNeverPanics);
        if let Some(p) = check::panics(&value) {
            return Err(violation(
                Property::UpdateNeverPanics,
                step,
                format!("{p} (the human's dispatch)"),
            ));
        }
        Ok(())
    }

    /// The human undoes the agent's last commit, when it is the newest one.
    pub(super) async fn undo(&mut self, step: usize) -> Result<(), Violation> {
        let Some((seq, before)) = self.last_agent.take().filter(|(seq, _)| *seq == self.seq) else {
            self.call(step, Operation::Observe, json!({})).await?;
            self.lines.push("the agent observes".into());
            return Ok(());
        };
        match self.session.undo(seq, false).await {
            Ok(_) => {
                self.lines
                    .push("the human undoes the agent's last commit".to_string());
                self.settle().await;
                self.checked(Property::UndoRestores);
                // The same text is the same state; another text is compared as values.
                let text = self.session.with_state(|s| serde_json::to_string(s).ok());
                if text.as_deref() == Some(&*before) {
                    return Ok(());
                }
                let now = self.session.with_state(|s| serde_json::to_value(s).ok());
                let before: Value = serde_json::from_str(&before).unwrap_or_default();
                if now.as_ref() != Some(&before) {
                    return Err(violation(
                        Property::UndoRestores,
                        step,
                        format!(
                            "after undoing the agent's commit the state is {}, not the state \
                             before it, {before}",
                            now.unwrap_or_default()
                        ),
                    ));
                }
            }
            Err(e) => self.lines.push(format!("the human's undo is refused: {e}")),
        }
        Ok(())
    }
}
