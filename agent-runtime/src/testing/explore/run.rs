//! One case: a fresh session of the in-process server, an agent token for it, and the steps
//! of a run made one after the other, every property checked after each (`super::check`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use tea_agent_schema::shape::VariantModel;
use tea_agent_schema::synth::payload_hint;
use tea_agent_schema::DispatchMode;

use super::answers::{listed_in, read_message, ActionsRead, Listed};
use super::check::{self, Expect};
use super::generate::{self, Pool};
use super::plan::{Draws, StepKind, StepPlan};
use super::report::{Property, Violation};
use crate::app::App;
use crate::config::MAX_BODY_BYTES;
use crate::engine::session::{Session, Transcript};
use crate::ops::{Operation, ServerState};
use crate::testing::agent::Agent;

/// How long (on the paused clock) a step waits for the effects it started: past it, they run
/// on into the next steps.
const SETTLE: Duration = Duration::from_secs(30);

/// The start of every value the human seeds into their own dispatches.
pub(super) const CANARY: &str = "⟦explore-secret-";

/// What every case of one exploration shares: the server and what the generator knows of
/// the app.
pub(crate) struct Ctx<A: App> {
    pub(crate) server: ServerState<A>,
    /// The variants the generator can make messages of.
    pub(super) variants: Vec<VariantModel>,
    /// The bytes a message request may take (the body limit, and a proposal's budget).
    max_body: usize,
    confirm_bytes: usize,
    cancel_grace: Duration,
}

/// What one case did.
pub(crate) struct CaseRun {
    pub(crate) violation: Option<Violation>,
    /// One line per step.
    pub(crate) lines: Vec<String>,
    /// The run's transcript, when asked for.
    pub(crate) transcript: Option<Transcript>,
    pub(crate) steps: u64,
    /// How many times each property was checked (indexed as `Property::ALL`).
    pub(crate) checks: [u64; 8],
}

impl<A: App> Ctx<A> {
    /// The context of `server`, and the variants it skips (each with why).
    pub(crate) fn new(server: ServerState<A>) -> (Self, Vec<String>) {
        let host = server.host();
        let mut skipped = Vec::new();
        let variants = host
            .catalog()
            .model()
            .variants
            .iter()
            .filter(
                |v| match generate::message(v, &mut Draws::new(&[]), &Pool::default()) {
                    Ok(_) => true,
                    Err(why) => {
                        skipped.push(why);
                        false
                    }
                },
            )
            .cloned()
            .collect();
        let config = host.config();
        let ctx = Ctx {
            variants,
            max_body: MAX_BODY_BYTES,
            confirm_bytes: config.budgets.confirm_bytes,
            cancel_grace: config.cancel_grace,
            server: server.clone(),
        };
        (ctx, skipped)
    }

    /// Whether any variant can be sent.
    pub(crate) fn has_variants(&self) -> bool {
        !self.variants.is_empty()
    }

    fn variant(&self, name: &str) -> Option<&VariantModel> {
        self.variants.iter().find(|v| v.wire_name == name)
    }

    /// Runs `plans` on a fresh session; its transcript is kept when `keep`.
    pub(crate) async fn case(&self, plans: &[StepPlan], keep: bool) -> CaseRun {
        let session = match self.server.host().create_session(None) {
            Ok(s) => s,
            Err(e) => return setup_failed(format!("no session: {e}")),
        };
        let agent = match Agent::mint_on(&self.server, session.id()).await {
            Ok(a) => a,
            Err(e) => return setup_failed(e.to_string()),
        };
        let mut case = Case {
            ctx: self,
            session,
            agent,
            secrets: BTreeSet::new(),
            whole: Arc::from("null"),
            view: Arc::new(Value::Null),
            seq: 0,
            fresh: None,
            read: None,
            last_agent: None,
            lines: Vec::new(),
            canaries: 0,
            checks: [0; 8],
        };
        let mut violation = case.refresh(0).err();
        if violation.is_none() {
            case.secrets = check::hidden(&case.whole_value(), &case.view);
        }
        let mut steps = 0;
        for (i, plan) in plans.iter().enumerate() {
            if violation.is_some() {
                break;
            }
            steps += 1;
            violation = match case.step(i + 1, plan).await {
                Ok(()) => case.after(i + 1).await.err(),
                Err(v) => Some(v),
            };
        }
        let transcript = keep.then(|| case.session.transcript(None));
        let closed = case.close(steps as usize + 1).await;
        CaseRun {
            violation: violation.or(closed.err()),
            lines: case.lines,
            transcript,
            steps,
            checks: case.checks,
        }
    }
}

fn setup_failed(why: String) -> CaseRun {
    CaseRun {
        violation: Some(Violation {
            property: Property::UpdateNeverPanics,
            step: 0,
            detail: format!("the case could not start: {why}"),
        }),
        lines: Vec::new(),
        transcript: None,
        steps: 0,
        checks: [0; 8],
    }
}

pub(super) fn violation(property: Property, step: usize, detail: impl Into<String>) -> Violation {
    Violation {
        property,
        step,
        detail: detail.into(),
    }
}

/// A case under way.
pub(super) struct Case<'c, A: App> {
    pub(super) ctx: &'c Ctx<A>,
    pub(super) session: Session<A>,
    pub(super) agent: Agent<A>,
    /// Values agents must never read.
    pub(super) secrets: BTreeSet<String>,
    /// The whole state (as the owner sees it) after the last step, as serde_json's compact
    /// text (shared: kept as the state before a commit without a copy).
    pub(super) whole: Arc<str>,
    /// The agent's view of it, and its `seq`.
    pub(super) view: Arc<Value>,
    pub(super) seq: u64,
    /// The `seq` whose view [`Case::view`] holds as the step's dispatched answer gave it (its
    /// `stateAfter`, which the `stateDiff` check found equal to the previous view with the
    /// diff applied): the view at that `seq`, read without building it again from the
    /// snapshot's tree.
    fresh: Option<u64>,
    /// The actions the agent read last, and the snapshot they were read on.
    read: Option<ActionsRead>,
    /// The agent's last commit, and the whole state before it (as [`Case::whole`]).
    pub(super) last_agent: Option<(u64, Arc<str>)>,
    pub(super) lines: Vec<String>,
    pub(super) canaries: u32,
    pub(super) checks: [u64; 8],
}

impl<'c, A: App> Case<'c, A> {
    /// Counts a check of `property`.
    pub(super) fn checked(&mut self, property: Property) {
        if let Some(i) = Property::ALL.iter().position(|p| *p == property) {
            self.checks[i] += 1;
        }
    }

    /// Calls `op` as the agent: the answer's status and its JSON text (as `Reply::recorded`
    /// reads it, `null` when it is not JSON), checked for secrets.
    pub(super) async fn call_text(
        &mut self,
        step: usize,
        op: Operation,
        body: Value,
    ) -> Result<(u16, Box<str>), Violation> {
        let reply = self.agent.reply(op, body).await;
        // The answer's own text (what the agent reads), not the value written again.
        let (status, text) = reply.recorded_text();
        self.no_secret_in(step, op, &text)?;
        Ok((status, text))
    }

    /// [`Property::NoRedactedValueReachesTheAgent`] on the text of an answer to `op`.
    fn no_secret_in(&mut self, step: usize, op: Operation, text: &str) -> Result<(), Violation> {
        if self.secrets.is_empty() {
            return Ok(());
        }
        self.checked(Property::NoRedactedValueReachesTheAgent);
        match check::leaked(&self.secrets, text) {
            None => Ok(()),
            Some(secret) => Err(violation(
                Property::NoRedactedValueReachesTheAgent,
                step,
                format!(
                    "the agent's {} answer holds the redacted value {secret:?}",
                    op.spec().tool
                ),
            )),
        }
    }

    /// The actions listed now, as the agent reads them: through the gate, or, when no commit
    /// was published since the agent last read them (the same snapshot: its `seq` and its
    /// tree), the list it read then. A session lists its actions from its published snapshot
    /// (`Published::actions`, kept per snapshot), so reading them again through the gate
    /// would answer the same text; that text is checked again for secrets (there may be new
    /// ones since), as the call would have been.
    async fn actions(&mut self, step: usize) -> Result<Arc<[Listed]>, Violation> {
        let published = self.session.published();
        if let Some(read) = &self.read {
            if read.seq == published.seq && Arc::ptr_eq(&read.tree, &published.state) {
                let (listed, text) = (read.listed.clone(), read.text.clone());
                self.no_secret_in(step, Operation::Actions, &text)?;
                return Ok(listed);
            }
        }
        let (status, text) = self.call_text(step, Operation::Actions, json!({})).await?;
        let listed: Arc<[Listed]> = listed_in(&text).into();
        let now = self.session.published();
        self.read = (status == 200
            && now.seq == published.seq
            && Arc::ptr_eq(&now.state, &published.state))
        .then(|| ActionsRead {
            seq: published.seq,
            tree: published.state.clone(),
            text: text.into(),
            listed: listed.clone(),
        });
        Ok(listed)
    }

    async fn step(&mut self, step: usize, plan: &StepPlan) -> Result<(), Violation> {
        match plan.kind {
            StepKind::HumanDispatch => self.human_dispatch(step, plan).await,
            StepKind::Undo => self.undo(step).await,
            kind => self.send(step, kind, plan).await,
        }
    }

    /// The agent reads the actions, picks one of `kind` and sends it.
    async fn send(
        &mut self,
        step: usize,
        kind: StepKind,
        plan: &StepPlan,
    ) -> Result<(), Violation> {
        let listed = self.actions(step).await?;
        let pool = Pool::from_state(&self.view);
        let mut draws = Draws::new(&plan.draws);
        let Some((variant, expect, msg)) = self.choose(kind, plan, &listed, &pool, &mut draws)
        else {
            // The answer is not read past its text (checked for secrets).
            self.call_text(step, Operation::Observe, json!({})).await?;
            self.lines
                .push("the agent observes (nothing to send)".into());
            return Ok(());
        };
        let confirm = variant.annotations.requires_confirm;
        let request = |msg: &Value| {
            json!({
                "msg": msg, "reason": "explore", "waitFor": "drained",
                "includeState": true, "timeoutMs": if confirm { 0 } else { 30_000 },
            })
        };
        let mut body = request(&msg);
        let limit = match confirm {
            true => self.ctx.confirm_bytes.min(self.ctx.max_body),
            false => self.ctx.max_body,
        };
        if body.to_string().len() > limit {
            // Within the server's byte budgets: the synthesized payload instead.
            body = request(&payload_hint(variant));
        }
        let prev_seq = self.seq;
        let (status, text) = self
            .call_text(step, Operation::Message, body.clone())
            .await?;
        // The answer's `actions` are not read here (the agent reads them from `/actions`).
        let (answer, after) = read_message(&text);
        let outcome = answer
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("error");
        self.lines.push(format!(
            "the agent sends {} ({}) → {status} {outcome}{}",
            body["msg"],
            expect.described(),
            answer
                .get("reason")
                .and_then(Value::as_str)
                .map(|r| format!(" {r}"))
                .unwrap_or_default()
        ));
        self.checked(Property::UpdateNeverPanics);
        if let Some(p) = check::panics(&answer) {
            return Err(violation(Property::UpdateNeverPanics, step, p));
        }
        self.checked(Property::GateTellsTheTruth);
        check::gate(&expect, status, &answer)
            .map_err(|why| violation(Property::GateTellsTheTruth, step, why))?;
        match outcome {
            "dispatched" => self.dispatched(step, prev_seq, &answer, after),
            "pending-confirmation" => self.decide(step, plan, variant, &answer, &mut draws).await,
            _ => Ok(()),
        }
    }

    /// The variant, what the gate should answer and the message, for a step of `kind`.
    fn choose(
        &self,
        kind: StepKind,
        plan: &StepPlan,
        listed: &[Listed],
        pool: &Pool,
        draws: &mut Draws<'_>,
    ) -> Option<(&'c VariantModel, Expect, Value)> {
        let ctx: &'c Ctx<A> = self.ctx;
        let available: Vec<String> = listed
            .iter()
            .filter(|a| a.open)
            .map(|a| a.variant.clone())
            .filter(|n| self.ctx.variant(n).is_some())
            .collect();
        let pick = |names: &[String]| names.get(plan.pick.index(names.len().max(1))).cloned();
        match kind {
            StepKind::Unavailable => {
                let closed: Vec<(String, Option<String>)> = listed
                    .iter()
                    .filter(|a| !a.open)
                    .map(|a| (a.variant.clone(), a.reason.clone()))
                    .chain(
                        self.ctx
                            .variants
                            .iter()
                            .filter(|v| v.annotations.dispatch_mode != DispatchMode::HumanOnly)
                            .filter(|v| !listed.iter().any(|a| a.variant == v.wire_name))
                            .map(|v| (v.wire_name.clone(), None)),
                    )
                    .filter(|(n, _)| self.ctx.variant(n).is_some())
                    .collect();
                if !closed.is_empty() {
                    let (n, reason) = closed[plan.pick.index(closed.len())].clone();
                    let v = ctx.variant(&n)?;
                    let msg = generate::message(v, draws, pool).ok()?.msg;
                    return Some((v, Expect::Unavailable { reason }, msg));
                }
            }
            StepKind::HumanOnly => {
                let human: Vec<String> = self
                    .ctx
                    .variants
                    .iter()
                    .filter(|v| v.annotations.dispatch_mode == DispatchMode::HumanOnly)
                    .map(|v| v.wire_name.clone())
                    .collect();
                if let Some(n) = pick(&human) {
                    let v = ctx.variant(&n)?;
                    let msg = generate::message(v, draws, pool).ok()?.msg;
                    return Some((v, Expect::HumanOnly, msg));
                }
            }
            StepKind::OutsideSchema => {
                if let Some(n) = pick(&available) {
                    let v = ctx.variant(&n)?;
                    let valid = generate::message(v, draws, pool).ok()?.msg;
                    let (msg, what) = generate::outside(v, &valid, draws);
                    return Some((v, Expect::Invalid { what }, msg));
                }
            }
            _ => {}
        }
        let n = pick(&available)?;
        let v = ctx.variant(&n)?;
        let g = generate::message(v, draws, pool).ok()?;
        Some((v, Expect::Accepted { exact: g.exact }, g.msg))
    }

    /// Checks a `dispatched` answer's `stateDiff`, applied to the agent's view read before
    /// the message (taken, not copied: on success the view becomes `stateAfter`), against its
    /// `stateAfter`.
    fn dispatched(
        &mut self,
        step: usize,
        prev_seq: u64,
        answer: &Value,
        after: Option<&str>,
    ) -> Result<(), Violation> {
        let seq = answer.get("seq").and_then(Value::as_u64).unwrap_or(0);
        let observed = answer
            .pointer("/drain/effectsObserved")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        // Another commit between the agent's read and its message: it must read again.
        if seq.checked_sub(observed) != Some(prev_seq) {
            return Ok(());
        }
        if observed >= 1 {
            self.last_agent = Some((prev_seq + 1, self.whole.clone()));
        }
        self.checked(Property::StateDiffApplies);
        let (Some(diff), Some(after)) = (answer.get("stateDiff"), after) else {
            return Err(violation(
                Property::StateDiffApplies,
                step,
                "a dispatched answer without stateDiff or stateAfter",
            ));
        };
        let prev = std::mem::replace(&mut self.view, Arc::new(Value::Null));
        let prev = Arc::try_unwrap(prev).unwrap_or_else(|shared| (*shared).clone());
        match check::apply_patch(prev, diff) {
            // The same text is the same value; another text is compared as a value.
            Ok(applied)
                if check::writes_as(&applied, after)
                    || serde_json::from_str::<Value>(after).is_ok_and(|v| v == applied) =>
            {
                // `stateAfter` is the snapshot of `seq` as the agent reads it: the view there.
                self.view = Arc::new(applied);
                self.fresh = Some(seq);
                Ok(())
            }
            Ok(applied) => Err(violation(
                Property::StateDiffApplies,
                step,
                format!("stateDiff {diff} applied to the previous state gives {applied}, not stateAfter {after}"),
            )),
            Err(why) => Err(violation(
                Property::StateDiffApplies,
                step,
                format!("stateDiff {diff} does not apply to the previous state: {why}"),
            )),
        }
    }

    /// Lets the session finish what the step started: its effects (followed on the work
    /// board; their timers run on the paused clock) and the messages they queued.
    pub(super) async fn settle(&self) {
        let mut work = self.session.follow_work();
        let mut last = u64::MAX;
        for _ in 0..100_000 {
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            if self.session.running_work().is_empty() {
                let seq = self.session.published().seq;
                if seq == last {
                    return;
                }
                last = seq;
                continue;
            }
            tokio::select! {
                changed = work.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(SETTLE) => return,
            }
        }
    }

    /// After a step: settled, the state read again and checked.
    async fn after(&mut self, step: usize) -> Result<(), Violation> {
        self.settle().await;
        let changed = self.refresh(step)?;
        if self.canaries > 0 && changed && self.whole.contains(CANARY) {
            // The human's seeded values that landed where agents do not see them (on a state
            // not read before: an unchanged state hides what it hid at the last read; a state
            // whose text holds no seeded value hides none: serde_json writes it unescaped).
            let hidden = check::hidden_containing(&self.whole, CANARY, &self.view);
            self.secrets.extend(hidden);
        }
        Ok(())
    }

    /// The whole state as a value.
    pub(super) fn whole_value(&self) -> Value {
        serde_json::from_str(&self.whole).unwrap_or(Value::Null)
    }

    /// Reads the state: the agent's view, and the whole state, which must round-trip through
    /// serde and satisfy the app's invariant. Whether a commit was published since the last
    /// read.
    fn refresh(&mut self, step: usize) -> Result<bool, Violation> {
        let published = self.session.published();
        let fresh = self.fresh.take();
        if step > 0 && published.seq == self.seq {
            // No commit since the last read: the state is the one already read and checked
            // (an update runs on a clone, and every change of the state is a commit).
            return Ok(false);
        }
        self.seq = published.seq;
        if fresh != Some(published.seq) {
            self.view = Arc::new(published.state());
        }
        let app = self.ctx.server.host().app();
        self.checked(Property::StateRoundTrips);
        self.checked(Property::InvariantHolds);
        let whole = self.session.with_state(|s| -> Result<String, Violation> {
            let text = round_trip::<A>(s)
                .map_err(|why| violation(Property::StateRoundTrips, step, why))?;
            app.invariant(s)
                .map_err(|why| violation(Property::InvariantHolds, step, why))?;
            Ok(text)
        })?;
        self.whole = whole.into();
        Ok(true)
    }

    /// Closes the session: no effect may run once the host's `cancel_grace` passed.
    async fn close(&mut self, step: usize) -> Result<(), Violation> {
        let id = self.session.id().to_string();
        let _ = self.ctx.server.host().close_session(&id).await;
        self.checked(Property::NoEffectOutlivesItsSession);
        let deadline =
            tokio::time::Instant::now() + self.ctx.cancel_grace + Duration::from_millis(100);
        loop {
            let running = self.session.running_work();
            if running.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(violation(
                    Property::NoEffectOutlivesItsSession,
                    step,
                    format!(
                        "{} effect(s) still run {:?} after the session closed",
                        running.len(),
                        self.ctx.cancel_grace
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// `state` serialized (serde_json's compact text), deserialized and serialized again: its text,
/// or why it does not round-trip. The same text twice is the same value twice: a text that
/// differs (a map of another order, a float read back one unit off) is held to the check on
/// values, `serde_json::Value`s compared.
fn round_trip<A: App>(state: &A::State) -> Result<String, String> {
    let fast = serde_json::to_string(state).ok().filter(|text| {
        serde_json::from_str::<A::State>(text).is_ok_and(|back| check::writes_as(&back, text))
    });
    if let Some(text) = fast {
        return Ok(text);
    }
    let v = serde_json::to_value(state).map_err(|e| format!("does not serialize: {e}"))?;
    let back = A::State::deserialize(&v).map_err(|e| format!("{v} does not deserialize: {e}"))?;
    let again = serde_json::to_value(&back).map_err(|e| e.to_string())?;
    if again != v {
        return Err(format!("{v} deserializes and serializes as {again}"));
    }
    Ok(v.to_string())
}
